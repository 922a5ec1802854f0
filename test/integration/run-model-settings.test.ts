// Per-run model settings: a launch's model_settings are checked against the model the run will use
// (its defaults filling what the launch leaves unset) before anything is created, are shown on the
// run, and reach the model through the run's sidecar as the defaults of the agent's calls.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createRunActivities } from '../../activities/run-activities.ts';
import { createProcessAdapter, type ProcessSandboxAdapter } from '../../activities/sandbox/process-adapter.ts';
import { runMaterialsFor } from '../../bin/sandbox.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { aRunWorld, type RunWorld } from '../support/runs.ts';
import { aSidecarAssignment, aSidecarToken, bearer, REAL_MODEL_KEY, sidecarUrlOf, spawnWarm, startEventReceiver } from './sidecar-run-harness.ts';

const RUN = '/api/agents/@fixtures/agent-echo/run';
const input = { message: 'settings' };
const inlineManifest = { name: '@inline/settings', version: '0.1.0', type: 'agent', schema_version: '0.3' };

let world: RunWorld;
let api: RunWorld['api'];
/** plain: temperature only; reasoner: no temperature, low/high (default low); mixed: both, no default */
const models: Record<'plain' | 'reasoner' | 'mixed' | 'defaultReasoning', string> = { plain: '', reasoner: '', mixed: '', defaultReasoning: '' };

before(async () => {
  world = await aRunWorld();
  ({ api } = world);
  // one credential each: a credential offers a provider's model once
  const aModel = async (name: string, body: Record<string, unknown>) => {
    const cred = await api.post('/api/model-provider-credentials', { provider: 'openai-compatible', name, base_url: world.fake.url, api_key: 'sk-settings-provider' });
    assert.equal(cred.status, 201, cred.text);
    const res = await api.post('/api/models', { credential_id: cred.body.id, model: 'fake', name, is_default: false, ...body });
    assert.equal(res.status, 201, res.text);
    return res.body.id as string;
  };
  models.plain = await aModel('Plain', {});
  models.reasoner = await aModel('Reasoner', { supports_temperature: false, reasoning_levels: ['low', 'high'], reasoning_effort: 'low' });
  models.mixed = await aModel('Mixed', { reasoning_levels: ['low'] });
  models.defaultReasoning = await aModel('Default reasoning', { reasoning_levels: ['low'], reasoning_effort: 'low' });
});
after(() => world.close());

async function runCount(): Promise<number> {
  const { rows } = await world.app.deps.database.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM runs WHERE org_id = $1', [world.org.orgId]);
  return rows[0].n;
}

/** The launch is refused with the code, names the field, and creates no run. */
async function refused(path: string, body: Record<string, unknown>, code: string, field: string): Promise<void> {
  const before = await runCount();
  const res = await api.post(path, body);
  assert.equal(res.status, 400, res.text);
  assert.equal(res.body.code, code, res.text);
  assert.equal(res.body.errors?.[0]?.field, field);
  assert.equal(await runCount(), before, 'a refused launch creates no run');
}

describe('at launch', () => {
  test('each setting the run\'s model does not accept is refused with the proxy\'s code, before the run exists', async () => {
    await refused(RUN, { input, model_id: models.plain, model_settings: { reasoning_effort: 'low' } }, 'reasoning_unsupported', 'model_settings.reasoning_effort');
    await refused(RUN, { input, model_id: models.reasoner, model_settings: { reasoning_effort: 'medium' } }, 'reasoning_level_unsupported', 'model_settings.reasoning_effort');
    await refused(RUN, { input, model_id: models.reasoner, model_settings: { temperature: 0.5 } }, 'temperature_unsupported', 'model_settings.temperature');
    await refused(RUN, { input, model_id: models.mixed, model_settings: { temperature: 0.5, reasoning_effort: 'low' } }, 'temperature_with_reasoning_unsupported', 'model_settings.temperature');
  });

  test('the model\'s own defaults count: a temperature beside a model\'s default reasoning effort is refused', async () => {
    await refused(RUN, { input, model_id: models.defaultReasoning, model_settings: { temperature: 0.2 } }, 'temperature_with_reasoning_unsupported', 'model_settings.temperature');
  });

  test('the model checked is the one the run uses: the organization\'s default when the launch names none', async () => {
    // the default model (aRunWorld's) neither reasons nor refuses a temperature
    await refused(RUN, { input, model_settings: { reasoning_effort: 'high' } }, 'reasoning_unsupported', 'model_settings.reasoning_effort');
    const ok = await api.post(RUN, { input, model_settings: { temperature: 1.5 } });
    assert.equal(ok.status, 201, ok.text);
    assert.deepEqual(ok.body.model_settings, { temperature: 1.5, reasoning_effort: null });
  });

  test('the inline run route checks them the same way', async () => {
    const inline = (body: Record<string, unknown>) => ({ manifest: inlineManifest, prompt: 'Say hi.', ...body });
    await refused('/api/runs/inline', inline({ model_id: models.reasoner, model_settings: { temperature: 0.1 } }), 'temperature_unsupported', 'model_settings.temperature');
    const ok = await api.post('/api/runs/inline', inline({ model_id: models.reasoner, model_settings: { reasoning_effort: 'high' } }));
    assert.equal(ok.status, 201, ok.text);
    assert.deepEqual(ok.body.model_settings, { temperature: null, reasoning_effort: 'high' });
    assert.deepEqual((await api.get(`/api/runs/${ok.body.id}`)).body.model_settings, { temperature: null, reasoning_effort: 'high' });
  });

  test('malformed settings are 400 validation_failed, never a 500', async () => {
    for (const model_settings of [{ temperature: 3 }, { temperature: 'hot' }, { reasoning_effort: '' }, { reasoning_effort: 3 }, { top_p: 1 }, 'warm', null]) {
      const before = await runCount();
      const res = await api.post(RUN, { input, model_settings });
      assert.equal(res.status, 400, `${JSON.stringify(model_settings)}: ${res.text}`);
      assert.equal(res.body.code, 'validation_failed');
      assert.equal(await runCount(), before);
    }
  });

  test('the LLM proxy takes a run\'s own settings before the model\'s defaults, and a call\'s own before both', async () => {
    const launched = await api.post(RUN, { input, model_id: models.reasoner, model_settings: { reasoning_effort: 'high' } });
    assert.equal(launched.status, 201, launched.text);
    const complete = (extra: Record<string, unknown> = {}) => api.post('/api/llm-proxy/chat/completions',
      { model: 'x', messages: [{ role: 'user', content: 'hi' }], ...extra }, { headers: { 'x-run-id': launched.body.id } });
    const plain = await complete();
    assert.equal(plain.status, 200, plain.text);
    assert.equal(world.fake.requests.at(-1)?.body.reasoning_effort, 'high');
    assert.equal((await complete({ reasoning_effort: 'low' })).status, 200);
    assert.equal(world.fake.requests.at(-1)?.body.reasoning_effort, 'low');
    const before = world.fake.requests.length;
    const refusedCall = await complete({ temperature: 0.2 });
    assert.equal(refusedCall.status, 400);
    assert.equal(refusedCall.body.code, 'temperature_unsupported');
    assert.equal(world.fake.requests.length, before);
  });

  test('a launch without settings shows model_settings null', async () => {
    const res = await api.post(RUN, { input, model_id: models.reasoner });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.model_settings, null);
    assert.equal((await api.get(`/api/runs/${res.body.id}`)).body.model_settings, null);
  });
});

describe('a run with settings', () => {
  let adapter: ProcessSandboxAdapter;
  let workDir: string;
  before(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'settings-run-'));
    adapter = await createProcessAdapter({ warmPool: 0, workDir });
  });
  after(async () => {
    await adapter?.close();
    await rm(workDir, { recursive: true, force: true });
  });

  /** Boots the run in a real sandbox (sidecar and agent processes) and waits for its ending. */
  async function execute(runId: string): Promise<any> {
    const { app, fake } = world;
    const activities = createRunActivities({
      pool: app.deps.database.pool, db: app.deps.database.db, secrets: app.deps.secrets, log: app.deps.log,
      adapter, materials: runMaterialsFor(app.deps), eventsBaseUrl: app.url, bootSeconds: 60, heartbeatSeconds: 10,
      egressAllowInternalHosts: [new URL(fake.url).host], limits: { memoryMb: 512, cpus: 1 },
    });
    const sandbox = await activities.boot(runId);
    try {
      let run = (await api.get(`/api/runs/${runId}?wait=true`)).body;
      while (run.status === 'pending' || run.status === 'running') run = (await api.get(`/api/runs/${runId}?wait=true`)).body;
      return run;
    } finally {
      await activities.teardown(runId, sandbox.sandboxId);
    }
  }

  test('the run\'s temperature reaches the model on every call the agent makes, and the run shows it', async () => {
    const launched = await api.post(RUN, { input, model_id: models.plain, model_settings: { temperature: 0.7 } });
    assert.equal(launched.status, 201, launched.text);
    assert.deepEqual(launched.body.model_settings, { temperature: 0.7, reasoning_effort: null });
    const listed = await api.get('/api/runs');
    assert.deepEqual(listed.body.data.find((r: any) => r.id === launched.body.id).model_settings, { temperature: 0.7, reasoning_effort: null });

    const first = world.fake.requests.length;
    const run = await execute(launched.body.id);
    assert.equal(run.status, 'success', JSON.stringify(run.error));
    assert.deepEqual(run.model_settings, { temperature: 0.7, reasoning_effort: null });
    const calls = world.fake.requests.slice(first);
    assert.ok(calls.length >= 1, 'the agent called the model');
    for (const call of calls) {
      assert.equal(call.body.temperature, 0.7);
      assert.equal(call.body.reasoning_effort, undefined);
    }
  });

  test('the run\'s reasoning effort replaces the model\'s default; without one, the model\'s default applies', async () => {
    const withEffort = await api.post(RUN, { input, model_id: models.reasoner, model_settings: { reasoning_effort: 'high' } });
    assert.equal(withEffort.status, 201, withEffort.text);
    let first = world.fake.requests.length;
    assert.equal((await execute(withEffort.body.id)).status, 'success');
    let calls = world.fake.requests.slice(first);
    assert.ok(calls.length >= 1);
    for (const call of calls) {
      assert.equal(call.body.reasoning_effort, 'high');
      assert.equal(call.body.temperature, undefined);
    }

    const without = await api.post(RUN, { input, model_id: models.reasoner });
    assert.equal(without.status, 201, without.text);
    first = world.fake.requests.length;
    assert.equal((await execute(without.body.id)).status, 'success');
    calls = world.fake.requests.slice(first);
    assert.ok(calls.length >= 1);
    for (const call of calls) assert.equal(call.body.reasoning_effort, 'low');
  });
});

describe('the sidecar\'s model endpoint', () => {
  async function aSidecar(model: Record<string, unknown>) {
    const secret = newRunEventSecret();
    const receiver = await startEventReceiver(secret);
    const sidecar = await spawnWarm('sidecar/main.ts');
    const token = aSidecarToken();
    sidecar.assign(aSidecarAssignment({
      token, eventsUrl: `${receiver.url}/events`, eventSecret: secret,
      model: { baseUrl: world.fake.url, apiKey: REAL_MODEL_KEY, model: 'fake-text', ...model } as any,
    }));
    await receiver.waitFor((events) => events.length >= 1);
    const complete = (extra: Record<string, unknown> = {}) => fetch(`${sidecarUrlOf(sidecar)}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'hi' }], ...extra }),
    });
    return { complete, stop: async () => (await sidecar.kill(), await receiver.close()) };
  }

  test('takes the agent\'s own values over the run\'s and refuses those the model does not accept, before the provider', async (t) => {
    const run = await aSidecar({
      defaults: { temperature: null, reasoningEffort: 'high' },
      accepts: { supportsTemperature: false, reasoningLevels: ['low', 'high'] },
    });
    t.after(() => run.stop());
    assert.equal((await run.complete()).status, 200);
    assert.equal(world.fake.requests.at(-1)?.body.reasoning_effort, 'high');
    assert.equal((await run.complete({ reasoning_effort: 'low' })).status, 200);
    assert.equal(world.fake.requests.at(-1)?.body.reasoning_effort, 'low');

    for (const [extra, code] of [
      [{ temperature: 0.3 }, 'temperature_unsupported'],
      [{ reasoning_effort: 'medium' }, 'reasoning_level_unsupported'],
      [{ temperature: 'warm' }, 'invalid_request'],
    ] as const) {
      const before = world.fake.requests.length;
      const res = await run.complete(extra);
      assert.equal(res.status, 400);
      assert.equal(((await res.json()) as any).error.code, code);
      assert.equal(world.fake.requests.length, before, 'a refused call never reaches the provider');
    }
  });

  test('a model that does not reason refuses an agent\'s reasoning effort; a temperature beside the run\'s effort is refused', async (t) => {
    const plain = await aSidecar({ defaults: { temperature: 0.4, reasoningEffort: null }, accepts: { supportsTemperature: true, reasoningLevels: [] } });
    t.after(() => plain.stop());
    const res = await plain.complete({ reasoning_effort: 'low' });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as any).error.code, 'reasoning_unsupported');
    assert.equal((await plain.complete()).status, 200);
    assert.equal(world.fake.requests.at(-1)?.body.temperature, 0.4);

    const mixed = await aSidecar({ defaults: { temperature: null, reasoningEffort: 'low' }, accepts: { supportsTemperature: true, reasoningLevels: ['low'] } });
    t.after(() => mixed.stop());
    const both = await mixed.complete({ temperature: 0.9 });
    assert.equal(both.status, 400);
    assert.equal(((await both.json()) as any).error.code, 'temperature_with_reasoning_unsupported');
  });
});
