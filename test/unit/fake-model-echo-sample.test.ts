// The scripted model keeps the sample agents' promises: the Echo sample, given a message, hands
// that message back, as its prompt asks of a model (`{ "echo": <message> }`).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { scriptReply } from '../fixtures/fake-model/script.ts';

const sample = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../fixtures/packages/agent-echo');
const manifest = JSON.parse(fs.readFileSync(path.join(sample, 'manifest.json'), 'utf8'));
const prompt = fs.readFileSync(path.join(sample, 'prompt.md'), 'utf8');

function turn(input: unknown, called: string[]) {
  return scriptReply({
    model: 'fake',
    messages: [
      { role: 'system', content: `${prompt}\n\n## Run input\n\nThe input of this run is the JSON document in the first user message.` },
      { role: 'user', content: JSON.stringify(input) },
      ...called.map((name, i) => ({ role: 'assistant', tool_calls: [{ id: `c${i}`, type: 'function', function: { name, arguments: '{}' } }] })),
    ],
    tools: [
      { type: 'function', function: { name: 'log', parameters: { type: 'object', properties: { level: { type: 'string' }, message: { type: 'string' } } } } },
      { type: 'function', function: { name: 'output', parameters: manifest.output.schema } },
    ],
  });
}

test('the Echo sample: {"message":"hello"} gives {"echo":"hello"}', () => {
  const first = turn({ message: 'hello' }, []);
  assert.equal(first.kind === 'tool_calls' && first.calls[0]!.name, 'log');
  const second = turn({ message: 'hello' }, ['log']);
  assert.equal(second.kind, 'tool_calls');
  assert.deepEqual(second.kind === 'tool_calls' && second.calls.map((c) => [c.name, c.arguments]), [['output', { echo: 'hello' }]]);
});

test('a prompt that promises nothing of the input leaves the output to the schema', () => {
  const reply = scriptReply({
    model: 'fake',
    messages: [{ role: 'system', content: 'Answer anything.' }, { role: 'user', content: '{"message":"hello"}' }, { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'log', arguments: '{}' } }] }],
    tools: [{ type: 'function', function: { name: 'log', parameters: {} } }, { type: 'function', function: { name: 'output', parameters: manifest.output.schema } }],
  });
  assert.deepEqual(reply.kind === 'tool_calls' && reply.calls[0]!.arguments, { echo: 'example' });
});
