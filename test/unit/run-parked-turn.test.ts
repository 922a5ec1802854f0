// The model turn a parked run keeps: the assistant message rebuilt from the model's answer, the
// state handed to the sidecar while a gated call waits (results already in, calls still pending),
// and the checkpoint shape that carries pending calls.
import assert from 'node:assert/strict';
import test from 'node:test';
import type { LanguageModelV2 } from '@ai-sdk/provider';
import { tool, jsonSchema, type ModelMessage } from 'ai';
import { PendingTurn, assistantMessageOf } from '../../agent-runtime/pending-turn.ts';
import { parseCheckpointState, type PendingToolCall } from '../../lib/run-checkpoints.ts';

test('the assistant message keeps the answer\'s text and tool calls, their inputs parsed', () => {
  assert.deepEqual(assistantMessageOf([
    { type: 'text', text: 'Looking it up.' },
    { type: 'tool-call', toolCallId: 'c1', toolName: 'acme_crm__api_call', input: '{"method":"GET"}' },
  ]), { role: 'assistant', content: [
    { type: 'text', text: 'Looking it up.' },
    { type: 'tool-call', toolCallId: 'c1', toolName: 'acme_crm__api_call', input: { method: 'GET' } },
  ] });
});

test('while a gated call waits, the sidecar is handed the turn: the assistant message, results already in, the calls still pending', async () => {
  const handed: Array<{ messages: ModelMessage[]; pending: PendingToolCall[] }> = [];
  const turn = new PendingTurn({ gated: new Set(['gated']), handOver: async (messages, pending) => (handed.push({ messages, pending }), true) });
  const model = turn.watch({
    specificationVersion: 'v2', provider: 't', modelId: 't', supportedUrls: {},
    doGenerate: async () => ({
      content: [
        { type: 'tool-call', toolCallId: 'a', toolName: 'free', input: '{}' },
        { type: 'tool-call', toolCallId: 'b', toolName: 'gated', input: '{"x":1}' },
      ],
      finishReason: 'tool-calls', usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 }, warnings: [],
    }),
    doStream: async () => { throw new Error('not used'); },
  } as LanguageModelV2);
  await model.doGenerate({ prompt: [] } as never);
  let release!: (v: string) => void;
  const tools = turn.wrap({
    free: tool({ inputSchema: jsonSchema({ type: 'object' }), execute: async () => 'free result' }),
    gated: tool({ inputSchema: jsonSchema({ type: 'object' }), execute: () => new Promise<string>((r) => (release = r)) }),
  });
  const prompt: ModelMessage[] = [{ role: 'user', content: 'go' }];
  const gated = (tools.gated.execute as any)({ x: 1 }, { toolCallId: 'b', messages: prompt });
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(handed.at(-1)!.pending.map((c) => c.tool_call_id).sort(), ['a', 'b']);
  assert.equal(await (tools.free.execute as any)({}, { toolCallId: 'a', messages: prompt }), 'free result');
  const last = handed.at(-1)!;
  assert.deepEqual(last.pending, [{ tool_call_id: 'b', tool_name: 'gated', input: { x: 1 } }]);
  assert.equal(last.messages.length, 3);
  assert.equal(last.messages[1].role, 'assistant');
  assert.deepEqual(last.messages[2], { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'a', toolName: 'free', output: { type: 'text', value: 'free result' } }] });
  release('done');
  assert.equal(await gated, 'done');
});

test('a checkpoint carries pending calls, each named; a malformed one is refused', () => {
  const base = { step: 2, messages: [{ role: 'user', content: 'go' }], files: [], removed: [] };
  assert.deepEqual(parseCheckpointState({ ...base, pending: [{ tool_call_id: 'c1', tool_name: 't', input: { a: 1 } }] }).pending,
    [{ tool_call_id: 'c1', tool_name: 't', input: { a: 1 } }]);
  assert.equal(parseCheckpointState(base).pending, undefined);
  assert.throws(() => parseCheckpointState({ ...base, pending: [{ tool_name: 't' }] }), /pending call/);
  assert.throws(() => parseCheckpointState({ ...base, pending: 'x' }), /pending must be an array/);
});
