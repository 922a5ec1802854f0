// Resuming a failed run from its last checkpoint: a real run (sidecar and agent processes, the
// scripted model) writes a workspace file and makes an api_call, then its model fails until the
// retries are spent; the run ends failed with a checkpoint of those two steps. Its resume is a new
// run (resumed_from) of the same version, input and model that starts from that checkpoint: the
// file is back in its workspace, its model sees the earlier conversation, and the upstream was
// called once in all. A run that completed no step has nothing to resume (no_checkpoint); a run
// still going or ended otherwise is refused; another organization's caller gets 404.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createProcessAdapter, type ProcessSandboxAdapter } from '../../activities/sandbox/process-adapter.ts';
import { finalizeRun } from '../../db/run-finalization.ts';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { call, client } from '../support/http.ts';
import { conformanceChecker } from '../support/openapi-conformance.ts';
import { importPackage } from '../support/runs.ts';
import { anIntegration, anIntegrationWorld, apiKeyAuth, archive, executeInSandbox, type IntegrationWorld } from './integrations-harness.ts';

const CRM_KEY = 'crm-key-resume-test-7c2e';

let world: IntegrationWorld;
let crm: Server;
let crmUrl: string;
let crmCalls = 0;
let adapter: ProcessSandboxAdapter;
let workDir: string;

before(async () => {
  // the upstream answers its key; its first call also starts the model's outage, so the run's next step fails
  crm = createServer((req, res) => {
    req.resume();
    crmCalls += 1;
    world.fake.setOutage(true);
    const ok = req.headers['x-api-key'] === CRM_KEY;
    res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' }).end(JSON.stringify(ok ? { contacts: 7 } : { error: 'no key' }));
  });
  await new Promise<void>((resolve) => crm.listen(0, '127.0.0.1', resolve));
  crmUrl = `http://127.0.0.1:${(crm.address() as AddressInfo).port}`;
  world = await anIntegrationWorld([new URL(crmUrl).host], {}, 'fake-script');
  workDir = await mkdtemp(join(tmpdir(), 'resume-run-'));
  adapter = await createProcessAdapter({ warmPool: 0, workDir });
  await anIntegration(world, '@acme/crm', apiKeyAuth(`${crmUrl}/api`));
  const connected = await world.api.post('/api/integrations/@acme/crm/auths/key/connect/fields', { credentials: { api_key: CRM_KEY } });
  assert.equal(connected.status, 201, connected.text);
  const own = (await aKey(world.app.deps.database.pool, { ...world.org, userId: world.org.ownerId })).key;
  const script = [
    { tool: 'workspace_write', arguments: { path: 'notes/plan.txt', content: 'ask the crm, then report' } },
    { tool: 'acme_crm__api_call', arguments: { method: 'GET', url: `${crmUrl}/api/contacts` } },
    { tool: 'workspace_read', arguments: { path: 'notes/plan.txt' } },
    { tool: 'output', arguments: { crm: '{{result:1}}', notes: '{{result:2}}' } },
  ];
  await importPackage(world.app.url, own, archive({
    name: '@acme/resumer', version: '1.0.0', type: 'agent', schema_version: '0.3',
    dependencies: { integrations: { '@acme/crm': '*' } },
    integrations_configuration: { '@acme/crm': { tools: ['api_call'] } },
    runtime_tools: ['output'],
    input: { schema: { type: 'object', properties: { topic: { type: 'string' } } } },
    output: { schema: { type: 'object', properties: { crm: { type: 'string' }, notes: { type: 'string' } }, required: ['crm', 'notes'] } },
  }, { 'prompt.md': `Plan, ask the CRM, report.\n\n\`\`\`fake-model-script\n${JSON.stringify(script)}\n\`\`\`\n` }));
});
after(async () => {
  await adapter?.close();
  await world?.close();
  if (workDir) await rm(workDir, { recursive: true, force: true });
  if (crm) {
    crm.closeAllConnections();
    await new Promise<void>((resolve) => crm.close(() => resolve()));
  }
});

/** Boots the run in a real sandbox (sidecar and agent processes) and waits for its ending. */
const execute = (runId: string) => executeInSandbox(world, adapter, runId);

const checkpointOf = async (runId: string) =>
  (await world.app.deps.database.pool.query('SELECT step, state, bytes FROM run_checkpoints WHERE run_id = $1', [runId])).rows[0];

describe('resuming a failed run from its last checkpoint', () => {
  let failed: any;
  let resumed: any;

  test('a run whose model fails after a completed api_call ends failed, with a sealed checkpoint of its two steps', async () => {
    const launch = await world.api.post('/api/agents/@acme/resumer/run', { input: { topic: 'contacts' } });
    assert.equal(launch.status, 201, launch.text);
    failed = await execute(launch.body.id);
    assert.equal(failed.status, 'failed', JSON.stringify(failed));
    assert.equal(crmCalls, 1);
    const checkpoint = await checkpointOf(failed.id);
    assert.equal(checkpoint.step, 2);
    // sealed at rest: neither the upstream's answer nor the file's text is readable in the row
    assert.ok(!checkpoint.state.includes('contacts') && !checkpoint.state.includes('ask the crm'));
    const state = JSON.parse(world.app.deps.secrets.open(checkpoint.state));
    assert.deepEqual(state.files.map((f: any) => [f.path, Buffer.from(f.content, 'base64').toString()]), [['notes/plan.txt', 'ask the crm, then report']]);
    assert.ok(JSON.stringify(state.messages).includes('contacts'), 'the api_call result is in the conversation');
  });

  test('resume answers 201 with a new run (resumed_from) of the same version, input and model; Idempotency-Key replays it', async () => {
    world.fake.setOutage(false);
    const headers = { 'idempotency-key': 'resume-once-1' };
    const first = await world.api.post(`/api/runs/${failed.id}/resume`, undefined, { headers });
    assert.equal(first.status, 201, first.text);
    assert.equal(first.headers.get('location'), `/api/runs/${first.body.id}`);
    const again = await world.api.post(`/api/runs/${failed.id}/resume`, undefined, { headers });
    assert.equal(again.status, 201, again.text);
    assert.equal(again.body.id, first.body.id);
    resumed = first.body;
    assert.notEqual(resumed.id, failed.id);
    assert.equal(resumed.resumed_from, failed.id);
    assert.equal(resumed.status, 'pending');
    for (const k of ['packageId', 'agent_version', 'model_id', 'model_settings', 'timeout_seconds', 'triggered_by'] as const) assert.deepEqual(resumed[k], failed[k], k);
    assert.deepEqual(resumed.input, { topic: 'contacts' });
    const check = conformanceChecker((await call(world.app.url, 'GET', '/api/openapi.json')).body);
    assert.deepEqual(check('POST', `/api/runs/${failed.id}/resume`, first), []);
    assert.equal((await world.api.get(`/api/runs/${resumed.id}`)).body.resumed_from, failed.id);
    const original = (await world.api.get(`/api/runs/${failed.id}`)).body;
    assert.deepEqual(original, failed, 'the original run is unchanged');
  });

  test('a run still pending is refused (run_in_progress)', async () => {
    const refused = await world.api.post(`/api/runs/${resumed.id}/resume`);
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.code, 'run_in_progress');
  });

  test('the resumed run starts from the checkpoint: file restored, prior conversation seen, the upstream not called again', async () => {
    const firstRequest = world.fake.requests.length;
    const run = await execute(resumed.id);
    assert.equal(run.status, 'success', JSON.stringify(run.error));
    assert.equal(crmCalls, 1, 'the completed api_call was not made again');
    assert.equal(JSON.parse(run.result.output.crm).body, JSON.stringify({ contacts: 7 }));
    assert.match(run.result.output.notes, /ask the crm, then report/);
    const seen = world.fake.requests[firstRequest].body.messages;
    const called = seen.filter((m: any) => m.role === 'assistant').flatMap((m: any) => m.tool_calls ?? []).map((c: any) => c.function.name);
    assert.deepEqual(called, ['workspace_write', 'acme_crm__api_call']);
    assert.ok(seen.some((m: any) => m.role === 'tool' && String(m.content).includes('contacts')), 'the model saw the api_call result');
    // a run that succeeded cannot be resumed: its checkpoint went with its ending; the original keeps its own
    assert.equal(await checkpointOf(resumed.id), undefined);
    assert.equal((await checkpointOf(failed.id)).step, 2);
  });

  test('a run that ended success is refused (run_not_resumable); the checkpoint route is closed after the end', async () => {
    const refused = await world.api.post(`/api/runs/${resumed.id}/resume`);
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.code, 'run_not_resumable');
    const { rows } = await world.app.deps.database.pool.query('SELECT event_secret FROM runs WHERE id = $1', [resumed.id]);
    const raw = JSON.stringify({ step: 9, messages: [{ role: 'user', content: 'late' }], files: [], removed: [] });
    const late = await call(world.app.url, 'POST', `/internal/runs/${resumed.id}/checkpoint`, {
      headers: { ...signedRunEventHeaders(world.app.deps.secrets.open(rows[0].event_secret), raw), 'content-type': 'application/json' }, rawBody: raw,
    });
    assert.equal(late.status, 410, late.text);
    assert.equal(late.body.code, 'run_sink_closed');
  });

  test('a run failed before completing any step has no checkpoint (no_checkpoint)', async () => {
    const launch = await world.api.post('/api/agents/@acme/resumer/run', { input: {} });
    assert.equal(launch.status, 201, launch.text);
    await finalizeRun(world.app.deps.database.pool, launch.body.id, { status: 'failed', error: { code: 'agent_error', message: 'model unavailable' } });
    const refused = await world.api.post(`/api/runs/${launch.body.id}/resume`);
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.code, 'no_checkpoint');
    assert.match(refused.headers.get('content-type')!, /application\/problem\+json/);
  });

  test('the checkpoint route keeps the latest step of an open run, refuses a malformed one, and a cancelled run drops its checkpoint', async () => {
    const launch = await world.api.post('/api/agents/@acme/resumer/run', { input: {} });
    const runId = launch.body.id;
    const secret = await world.runSecret(runId);
    const post = (body: unknown) => {
      const raw = JSON.stringify(body);
      return call(world.app.url, 'POST', `/internal/runs/${runId}/checkpoint`, {
        headers: { ...signedRunEventHeaders(secret, raw), 'content-type': 'application/json' }, rawBody: raw,
      });
    };
    const at = (step: number) => ({ step, messages: [{ role: 'user', content: `step ${step}` }], files: [{ path: 'a.txt', content: Buffer.from(`${step}`).toString('base64') }], removed: [] });
    assert.equal((await post(at(2))).status, 204);
    assert.equal((await post(at(1))).status, 204, 'an earlier step is no failure');
    assert.equal((await checkpointOf(runId)).step, 2, 'but the later one stays');
    const bad = await post({ ...at(3), files: [{ path: '../../etc/passwd', content: '' }] });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.body.code, 'invalid_request');
    assert.equal((await checkpointOf(runId)).step, 2);
    const cancelled = await world.api.post(`/api/runs/${runId}/cancel`, {});
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(await checkpointOf(runId), undefined, 'a cancelled run cannot be resumed: its checkpoint is dropped');
    const refused = await world.api.post(`/api/runs/${runId}/resume`);
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.code, 'run_not_resumable');
  });

  test("another organization's caller and another end-user get 404; a key without agents:run 403; a body with unknown fields 400", async () => {
    const other = await anOrg(world.app.deps.database.pool);
    const { key } = await aKey(world.app.deps.database.pool, { ...other, userId: other.ownerId });
    const foreign = await client(world.app.url, { key }).post(`/api/runs/${failed.id}/resume`);
    assert.equal(foreign.status, 404, foreign.text);
    assert.equal(foreign.body.code, 'not_found');
    const reader = (await aKey(world.app.deps.database.pool, { ...world.org, userId: world.org.ownerId, scopes: ['runs:read', 'runs:read-all'] })).key;
    const readOnly = await client(world.app.url, { key: reader }).post(`/api/runs/${failed.id}/resume`);
    assert.equal(readOnly.status, 403, readOnly.text);
    // an end-user of the same space (the key acting for them) resumes only their own runs: 404
    const endUser = await world.api.post('/api/end-users', { externalId: 'resume-outsider', name: 'Outsider' });
    assert.equal(endUser.status, 201, endUser.text);
    const asEndUser = await world.api.post(`/api/runs/${failed.id}/resume`, undefined, { headers: { 'Service-User': endUser.body.id } });
    assert.deepEqual([asEndUser.status, asEndUser.body.code], [404, 'not_found'], asEndUser.text);
    const bad = await world.api.post(`/api/runs/${failed.id}/resume`, { from_step: 1 });
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.headers.get('content-type')!, /application\/problem\+json/);
    const runs = await world.app.deps.database.pool.query('SELECT count(*)::int AS n FROM runs WHERE resumed_from = $1', [failed.id]);
    assert.equal(runs.rows[0].n, 1, 'refused calls created no run');
  });
});
