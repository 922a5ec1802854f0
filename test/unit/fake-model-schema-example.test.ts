import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { exampleArguments, invalidArguments } from '../fixtures/fake-model/schema-example.ts';
import { inputFromMessages, scriptReply } from '../fixtures/fake-model/script.ts';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;
const ajv = new Ajv2020({ strict: false });
addFormats(ajv);

const schemas: Record<string, object> = {
  'strings with formats and lengths': {
    type: 'object',
    properties: {
      email: { type: 'string', format: 'email' },
      site: { type: 'string', format: 'uri' },
      when: { type: 'string', format: 'date-time' },
      code: { type: 'string', minLength: 12, maxLength: 12 },
      short: { type: 'string', maxLength: 3 },
      colour: { enum: ['red', 'green'] },
      kind: { const: 'fixed' },
    },
    required: ['email', 'site', 'when', 'code', 'short', 'colour', 'kind'],
    additionalProperties: false,
  },
  'numbers within bounds': {
    type: 'object',
    properties: {
      n: { type: 'integer', minimum: 5, maximum: 9 },
      m: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
      k: { type: 'integer', maximum: -3 },
      s: { type: 'integer', minimum: 7, multipleOf: 5 },
      flag: { type: 'boolean' },
    },
    required: ['n', 'm', 'k', 's', 'flag'],
  },
  'arrays, nesting, refs and combinators': {
    type: 'object',
    $defs: { tag: { type: 'string', minLength: 2 } },
    properties: {
      tags: { type: 'array', items: { $ref: '#/$defs/tag' }, minItems: 2, uniqueItems: true },
      owner: {
        type: 'object',
        properties: { name: { type: 'string' }, age: { type: ['integer', 'null'], minimum: 18 } },
        required: ['name', 'age'],
      },
      either: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
      both: { allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { required: ['b'], properties: { b: { type: 'boolean' } } }] },
    },
    required: ['tags', 'owner', 'either', 'both'],
  },
};

describe('the fake model fills tool arguments from their schema', () => {
  for (const [name, schema] of Object.entries(schemas)) {
    test(`valid arguments for ${name}`, () => {
      const args = exampleArguments(schema);
      const validate = ajv.compile(schema);
      assert.ok(validate(args), `${JSON.stringify(args)} ${JSON.stringify(validate.errors)}`);
    });
    test(`invalid arguments for ${name}`, () => {
      assert.equal(ajv.compile(schema)(invalidArguments(schema)), false);
    });
  }

  test('input members of the same name and type are echoed', () => {
    const schema = { type: 'object', properties: { summary: { type: 'string' }, count: { type: 'integer' } }, required: ['summary', 'count'] };
    assert.deepEqual(exampleArguments(schema, { summary: 'from input', count: 'not an integer', other: 1 }), { summary: 'from input', count: 1 });
  });

  test('the run input is found whole, fenced or embedded in the first user message', () => {
    assert.deepEqual(inputFromMessages([{ role: 'user', content: '{"a":1}' }]), { a: 1 });
    assert.deepEqual(inputFromMessages([{ role: 'user', content: 'Run input:\n\n```json\n{"a":2}\n```' }]), { a: 2 });
    assert.deepEqual(inputFromMessages([{ role: 'user', content: [{ type: 'text', text: 'take {"a":3} please' }] }]), { a: 3 });
    assert.equal(inputFromMessages([{ role: 'user', content: 'no json' }]), undefined);
  });
});

describe('the fake model script', () => {
  const tools = [
    { type: 'function', function: { name: 'log', parameters: { type: 'object' } } },
    { type: 'function', function: { name: 'output', parameters: { type: 'object', properties: { x: { type: 'integer' } }, required: ['x'] } } },
  ];
  const call = (name: string) => ({ role: 'assistant', content: null, tool_calls: [{ id: name, type: 'function', function: { name, arguments: '{}' } }] });

  test('fake: log, then output, then done', () => {
    const user = { role: 'user', content: 'go' };
    const first = scriptReply({ model: 'fake', tools, messages: [user] });
    assert.ok(first.kind === 'tool_calls' && first.calls[0].name === 'log');
    assert.deepEqual(first.calls[0].arguments, { level: 'info', message: 'working' });
    const second = scriptReply({ model: 'fake', tools, messages: [user, call('log'), { role: 'tool', tool_call_id: 'log', content: 'logged' }] });
    assert.ok(second.kind === 'tool_calls' && second.calls[0].name === 'output');
    assert.deepEqual(second.calls[0].arguments, { x: 1 });
    const third = scriptReply({ model: 'fake', tools, messages: [user, call('log'), call('output')] });
    assert.deepEqual(third, { kind: 'text', text: 'done' });
  });

  test('tool names with an integration prefix are recognised', () => {
    const prefixed = [{ type: 'function', function: { name: 'acme_crm__output', parameters: { type: 'object' } } }];
    const reply = scriptReply({ model: 'anything-else', tools: prefixed, messages: [{ role: 'user', content: 'go' }] });
    assert.ok(reply.kind === 'tool_calls' && reply.calls[0].name === 'acme_crm__output');
  });

  test('the other scripted models', () => {
    assert.deepEqual(scriptReply({ model: 'fake', messages: [] }), { kind: 'text', text: 'done' });
    assert.equal(scriptReply({ model: 'fake-text', tools, messages: [] }).kind, 'text');
    assert.equal(scriptReply({ model: 'fake-hang', messages: [] }).kind, 'hang');
    assert.equal(scriptReply({ model: 'fake-error', messages: [] }).kind, 'error');
    const bad = scriptReply({ model: 'fake-bad-output', tools, messages: [{ role: 'user', content: 'go' }] });
    assert.ok(bad.kind === 'tool_calls' && bad.calls[0].name === 'output');
    assert.deepEqual(bad.calls[0].arguments, {});
  });
});
