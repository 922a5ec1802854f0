// The per-run programs' spans as plain records: recorded only under a sampled run context, tool
// calls named with the ids the model's answer gave, content only when the operator opted in, and
// what the platform accepts from a sidecar bounded to the run's trace and to scalar attributes.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { acceptedSpanRecords, formatTraceparent, parseTraceparent, SpanRecorder } from '../../lib/tracing/records.ts';
import { SidecarTracing } from '../../sidecar/tracing.ts';
import type { SidecarTool } from '../../sidecar/tool.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const context = (flags = '01') => `00-${TRACE}-${PARENT}-${flags}`;

const echo: SidecarTool = { name: 'lookup', description: 'echo', inputSchema: { type: 'object' }, call: (args) => ({ text: `found ${String(args.q)}` }) };
const answer = { choices: [{ message: { role: 'assistant', tool_calls: [{ id: 'call_a', function: { name: 'lookup', arguments: '{}' } }, { id: 'call_b', function: { name: 'lookup', arguments: '{}' } }] } }] };

test('traceparent: version 00 parsed and written back; invalid or all-zero ids refused', () => {
  assert.deepEqual(parseTraceparent(context()), { traceId: TRACE, spanId: PARENT, sampled: true });
  assert.equal(formatTraceparent(parseTraceparent(context('00'))!), context('00'));
  for (const bad of [undefined, '', `00-${'0'.repeat(32)}-${PARENT}-01`, `00-${TRACE}-${'0'.repeat(16)}-01`, `01-${TRACE}-${PARENT}-01`, context().toUpperCase()]) {
    assert.equal(parseTraceparent(bad), null, String(bad));
  }
});

test('without a sampled context nothing is recorded and the tools are left as they are', async () => {
  for (const trace of [undefined, { traceparent: context('00'), captureMessageContent: false }]) {
    const tracing = new SidecarTracing(trace);
    assert.equal(tracing.recording, false);
    const tools = [echo];
    assert.equal(tracing.traceTools(tools), tools);
    assert.equal(tracing.start('chat x', {}), null);
    assert.deepEqual(tracing.recorder.take(), []);
  }
});

test('tool calls are spans under the run, named with the call ids of the model answer in order, without content by default', async () => {
  const tracing = new SidecarTracing({ traceparent: context(), captureMessageContent: false, agentName: '@acme/a' });
  tracing.noteToolCalls(answer);
  const [tool] = tracing.traceTools([echo]);
  await tool.call({ q: 'first' });
  await tool.call({ q: 'second' });
  await tool.call({ q: 'third' });
  const spans = tracing.recorder.take();
  assert.deepEqual(spans.map((s) => s.attributes['gen_ai.tool.call.id']), ['call_a', 'call_b', undefined]);
  for (const s of spans) {
    assert.equal(s.name, 'execute_tool lookup');
    assert.equal(s.traceId, TRACE);
    assert.equal(s.parentSpanId, PARENT);
    assert.equal(s.attributes['gen_ai.operation.name'], 'execute_tool');
    assert.equal(s.attributes['gen_ai.agent.name'], '@acme/a');
    assert.ok(s.end >= s.start);
    assert.ok(!JSON.stringify(s).includes('first') && !JSON.stringify(s).includes('found'), 'no arguments or results');
  }
  assert.deepEqual(tracing.recorder.take(), [], 'taken once');
});

test('with the operator opted in, tool arguments and results are recorded', async () => {
  const tracing = new SidecarTracing({ traceparent: context(), captureMessageContent: true });
  const [tool] = tracing.traceTools([echo]);
  await tool.call({ q: 'first' });
  const [span] = tracing.recorder.take();
  assert.equal(span.attributes['gen_ai.tool.call.arguments'], '{"q":"first"}');
  assert.equal(span.attributes['gen_ai.tool.call.result'], 'found first');
});

test('a recorder keeps a bounded number of finished spans', () => {
  const recorder = new SpanRecorder(context(), {}, 3);
  for (let i = 0; i < 5; i++) recorder.start(`s${i}`)!.end();
  assert.equal(recorder.take().length, 3);
});

test("the platform accepts a sidecar's spans only in the run's trace, well formed, with scalar attributes of bounded size", () => {
  const good = { name: 'chat m', traceId: TRACE, spanId: 'a'.repeat(16), parentSpanId: PARENT, kind: 'client', start: 1, end: 2, attributes: { n: 1, ok: true, s: 'x'.repeat(10_000), nested: { a: 1 }, list: [1] } };
  const accepted = acceptedSpanRecords([
    good,
    { ...good, traceId: 'f'.repeat(32) },
    { ...good, spanId: 'nothex' },
    { ...good, end: 0 },
    { ...good, parentSpanId: 'short' },
    'not a span',
  ], TRACE);
  assert.equal(accepted.length, 1);
  assert.deepEqual(Object.keys(accepted[0].attributes).sort(), ['n', 'ok', 's']);
  assert.equal((accepted[0].attributes.s as string).length, 4096);
  assert.equal(acceptedSpanRecords(Array.from({ length: 300 }, () => good), TRACE).length, 256);
  assert.deepEqual(acceptedSpanRecords({ not: 'an array' }, TRACE), []);
});
