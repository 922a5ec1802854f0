import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isProblem, type FieldError } from '../../lib/problem.ts';
import { parseManifest, type AgentManifest } from '../../lib/afps/manifest.ts';
import { codesByField, manifestErrors, MANIFEST_OPTS } from '../support/manifest-errors.ts';

const OPTS = MANIFEST_OPTS;

function anAgent(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: '@acme/bot', version: '1.0.0', type: 'agent', ...extra };
}


const OBJECT_SCHEMA = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };

describe('manifest: agent members', () => {
  test('a full agent manifest is accepted', () => {
    const raw = anAgent({
      timeout: 300,
      input: { schema: OBJECT_SCHEMA },
      output: { schema: OBJECT_SCHEMA },
      dependencies: { skills: { '@acme/summarize': '^1.2.0' }, integrations: { '@acme/gmail': '~2.0.0 || >=3' } },
      integrations_configuration: { '@acme/gmail': { tools: ['api_call', 'send_message'] } },
      runtime_tools: ['output', 'log', 'note', 'pin', 'publish_file'],
    });
    assert.deepEqual(parseManifest(raw, OPTS), raw);
  });

  test('timeout is a positive integer of seconds, clamped to the ceiling', () => {
    assert.equal((parseManifest(anAgent({ timeout: 7200 }), OPTS) as AgentManifest).timeout, 1800);
    assert.equal((parseManifest(anAgent({ timeout: 60 }), OPTS) as AgentManifest).timeout, 60);
    assert.equal((parseManifest(anAgent({ timeout: 60 }), { timeoutCeilingSeconds: 30 }) as AgentManifest).timeout, 30);
    assert.deepEqual(codesByField(anAgent({ timeout: 0 })), { timeout: 'out_of_range' });
    assert.deepEqual(codesByField(anAgent({ timeout: -5 })), { timeout: 'out_of_range' });
    assert.deepEqual(codesByField(anAgent({ timeout: 1.5 })), { timeout: 'invalid_type' });
    assert.deepEqual(codesByField(anAgent({ timeout: '60' })), { timeout: 'invalid_type' });
  });

  test('input.schema and output.schema must be JSON Schema objects that compile', () => {
    assert.deepEqual(codesByField(anAgent({ input: { schema: { type: 'strin' } } })), { 'input.schema': 'invalid_value' });
    assert.deepEqual(codesByField(anAgent({ input: { schema: { properties: 5 } } })), { 'input.schema': 'invalid_value' });
    assert.deepEqual(codesByField(anAgent({ input: { schema: [] } })), { 'input.schema': 'invalid_type' });
    assert.deepEqual(codesByField(anAgent({ input: { schema: true } })), { 'input.schema': 'invalid_type' });
    assert.deepEqual(codesByField(anAgent({ input: {} })), { 'input.schema': 'required' });
    assert.deepEqual(codesByField(anAgent({ input: { schema: OBJECT_SCHEMA, ui: {} } })), { 'input.ui': 'unknown_field' });
    assert.deepEqual(codesByField(anAgent({ output: { schema: { $ref: 'https://elsewhere.example/schema.json' } }, runtime_tools: ['output'] })), {
      'output.schema': 'invalid_value',
    });
  });

  test('schemas may use formats and annotations of their own', () => {
    const schema = { type: 'object', properties: { email: { type: 'string', format: 'email', 'x-widget': 'email' } } };
    assert.doesNotThrow(() => parseManifest(anAgent({ input: { schema } }), OPTS));
  });

  test('one manifest\'s schema ids never clash with or break another\'s', () => {
    const schema = { $id: 'https://acme.example/schemas/input.json', type: 'object', $defs: { n: { $id: 'https://acme.example/n.json', type: 'number' } } };
    assert.doesNotThrow(() => parseManifest(anAgent({ input: { schema } }), OPTS));
    assert.doesNotThrow(() => parseManifest(anAgent({ input: { schema: structuredClone(schema) } }), OPTS));
    assert.deepEqual(codesByField(anAgent({ input: { schema: { $id: 'https://json-schema.org/draft/2020-12/schema' } } })), { 'input.schema': 'invalid_value' });
    assert.deepEqual(codesByField(anAgent({ input: { schema: { type: 'strin' } } })), { 'input.schema': 'invalid_value' });
  });

  test('dependencies map package ids to semver ranges', () => {
    assert.deepEqual(codesByField(anAgent({ dependencies: { skills: { '@acme/x': 'not a range' } } })), {
      'dependencies.skills["@acme/x"]': 'invalid_format',
    });
    assert.deepEqual(codesByField(anAgent({ dependencies: { skills: { 'acme-x': '^1.0.0' } } })), {
      'dependencies.skills.acme-x': 'invalid_key',
    });
    assert.deepEqual(codesByField(anAgent({ dependencies: { tools: {} } })), { 'dependencies.tools': 'unknown_field' });
    assert.deepEqual(codesByField(anAgent({ dependencies: { integrations: [] } })), { 'dependencies.integrations': 'invalid_type' });
  });

  test('integrations_configuration names declared integrations and lists tool names', () => {
    const dependencies = { integrations: { '@acme/gmail': '^1.0.0' } };
    assert.deepEqual(codesByField(anAgent({ dependencies, integrations_configuration: { '@acme/other': { tools: ['api_call'] } } })), {
      'integrations_configuration["@acme/other"]': 'invalid_key',
    });
    assert.deepEqual(codesByField(anAgent({ dependencies, integrations_configuration: { '@acme/gmail': {} } })), {
      'integrations_configuration["@acme/gmail"].tools': 'required',
    });
    assert.deepEqual(codesByField(anAgent({ dependencies, integrations_configuration: { '@acme/gmail': { tools: ['api_call', 'api_call'] } } })), {
      'integrations_configuration["@acme/gmail"].tools[1]': 'invalid_element',
    });
    assert.deepEqual(codesByField(anAgent({ dependencies, integrations_configuration: { '@acme/gmail': { tools: ['has space'] } } })), {
      'integrations_configuration["@acme/gmail"].tools[0]': 'invalid_format',
    });
    assert.deepEqual(codesByField(anAgent({ dependencies, integrations_configuration: { '@acme/gmail': { tools: ['api_call'], scopes: [] } } })), {
      'integrations_configuration["@acme/gmail"].scopes': 'unknown_field',
    });
    assert.deepEqual(codesByField(anAgent({ dependencies, integrations_configuration: { '@acme/gmail': { tools: [] } } })), {
      'integrations_configuration["@acme/gmail"].tools': 'no_tools_selected',
    });
  });

  test('runtime_tools is a subset of output, log, note, pin and publish_file', () => {
    assert.deepEqual(codesByField(anAgent({ runtime_tools: ['log', 'shell'] })), { 'runtime_tools[1]': 'invalid_value' });
    assert.deepEqual(codesByField(anAgent({ runtime_tools: ['log', 'log'] })), { 'runtime_tools[1]': 'invalid_element' });
    assert.deepEqual(codesByField(anAgent({ runtime_tools: 'log' })), { runtime_tools: 'invalid_type' });
  });

  test('output is required among runtime_tools when output.schema is declared', () => {
    assert.deepEqual(codesByField(anAgent({ output: { schema: OBJECT_SCHEMA } })), { runtime_tools: 'invalid_value' });
    assert.deepEqual(codesByField(anAgent({ output: { schema: OBJECT_SCHEMA }, runtime_tools: ['log'] })), { runtime_tools: 'invalid_value' });
    assert.doesNotThrow(() => parseManifest(anAgent({ output: { schema: OBJECT_SCHEMA }, runtime_tools: ['output'] }), OPTS));
    assert.doesNotThrow(() => parseManifest(anAgent({ runtime_tools: ['log'] }), OPTS));
  });

  test('every faulty field is reported in one problem', () => {
    const errors = manifestErrors(anAgent({
      name: 'bot', timeout: 0, input: { schema: 'x' }, output: { schema: OBJECT_SCHEMA }, runtime_tools: ['log'], model: 'gpt',
    }));
    assert.deepEqual(errors.map((e) => e.field).sort(), ['input.schema', 'model', 'name', 'runtime_tools', 'timeout']);
  });
});

describe('manifest: approvals', () => {
  const withGmail = (approvals: unknown) => anAgent({
    dependencies: { integrations: { '@acme/gmail': '^2.0.0' } },
    integrations_configuration: { '@acme/gmail': { tools: ['api_call'] } },
    runtime_tools: ['publish_file'],
    approvals,
  });

  test("the agent's own tools are accepted, as it sees them; timeout_seconds defaults to a day", () => {
    const parsed = parseManifest(withGmail({ tools: ['acme_gmail__api_call', 'publish_file', 'run_history'] }), OPTS) as AgentManifest;
    assert.deepEqual(parsed.approvals, { tools: ['acme_gmail__api_call', 'publish_file', 'run_history'], timeout_seconds: 86_400 });
    assert.equal((parseManifest(withGmail({ tools: ['publish_file'], timeout_seconds: 60 }), OPTS) as AgentManifest).approvals?.timeout_seconds, 60);
  });

  test('a tool the agent does not have is refused, naming the field', () => {
    // a tool of the integration that the agent did not select, a runtime tool it did not list, an unknown name
    assert.deepEqual(codesByField(withGmail({ tools: ['acme_gmail__send_message', 'output', 'rm_rf'] })), {
      'approvals.tools[0]': 'invalid_value', 'approvals.tools[1]': 'invalid_value', 'approvals.tools[2]': 'invalid_value',
    });
    const [error] = manifestErrors(withGmail({ tools: ['acme_gmail__send_message'] }));
    assert.match(error.message, /names no tool of this agent \(acme_gmail__send_message\)/);
  });

  test('its shape is checked: tools required, timeout_seconds a positive integer, no other member', () => {
    assert.deepEqual(codesByField(withGmail({ timeout_seconds: 0, when: 'always' })), {
      'approvals.tools': 'required', 'approvals.timeout_seconds': 'out_of_range', 'approvals.when': 'unknown_field',
    });
    assert.deepEqual(codesByField(withGmail('publish_file')), { approvals: 'invalid_type' });
  });
});
