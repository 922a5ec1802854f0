// The run event sink: Standard Webhooks signatures, replay refusal, sink states, and what each
// event records (status, logs with debug visibility, usage totals).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { signedRunEventHeaders, signRunEvent } from '../../lib/run-events.ts';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { call, client } from '../support/http.ts';
import { aDefaultModel, importFixture } from '../support/runs.ts';

let fake: Awaited<ReturnType<typeof startFakeModel>>;
let app: TestApp;
let api: ReturnType<typeof client>;
let readOnly: ReturnType<typeof client>;

before(async () => {
  fake = await startFakeModel();
  app = await startTestApp({ env: { EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host } });
  const org = await anOrg(app.deps.database.pool);
  const { key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId });
  const { key: reader } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId, scopes: ['runs:read', 'runs:read-all'] });
  api = client(app.url, { key });
  readOnly = client(app.url, { key: reader });
  await importFixture(app.url, key, 'agent-echo');
  await aDefaultModel(app.url, key, fake.url);
});
after(async () => {
  await app.close();
  await fake.close();
});

async function aRun(): Promise<{ id: string; secret: string }> {
  const run = await api.post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'hi' } });
  assert.equal(run.status, 201);
  const { rows } = await app.deps.database.pool.query('SELECT event_secret FROM runs WHERE id = $1', [run.body.id]);
  return { id: run.body.id, secret: app.deps.secrets.open(rows[0].event_secret) };
}

let seq = 0;
function send(runId: string, secret: string, event: Record<string, unknown>, opts: { id?: string; nowSec?: number; headers?: Record<string, string> } = {}) {
  const raw = JSON.stringify({ sequence: ++seq, at: new Date().toISOString(), ...event });
  const headers = opts.headers ?? signedRunEventHeaders(secret, raw, { id: opts.id, nowSec: opts.nowSec });
  return call(app.url, 'POST', `/internal/runs/${runId}/events`, { rawBody: raw, headers: { 'content-type': 'application/json', ...headers } });
}

describe('signatures', () => {
  test('missing headers, a bad signature, a malformed or stale timestamp are each refused with their code', async () => {
    const { id, secret } = await aRun();
    const missing = await send(id, secret, { type: 'heartbeat' }, { headers: {} });
    assert.equal(missing.status, 401);
    assert.equal(missing.body.code, 'missing_signature_headers');

    const now = Math.floor(Date.now() / 1000);
    const wrongSecret = await send(id, secret, { type: 'heartbeat' }, { headers: { 'webhook-id': 'msg_x1', 'webhook-timestamp': String(now), 'webhook-signature': signRunEvent('whsec_' + Buffer.from('another secret!!').toString('base64'), 'msg_x1', now, '{}') } });
    assert.equal(wrongSecret.status, 401);
    assert.equal(wrongSecret.body.code, 'invalid_signature');

    const notATime = await send(id, secret, { type: 'heartbeat' }, { headers: { 'webhook-id': 'msg_x2', 'webhook-timestamp': 'yesterday', 'webhook-signature': 'v1,AAAA' } });
    assert.equal(notATime.status, 401);
    assert.equal(notATime.body.code, 'invalid_timestamp');

    const stale = await send(id, secret, { type: 'heartbeat' }, { nowSec: now - 3600 });
    assert.equal(stale.status, 401);
    assert.equal(stale.body.code, 'timestamp_out_of_tolerance');
  });

  test('a webhook-id already accepted for the run answers 409 message_replayed', async () => {
    const { id, secret } = await aRun();
    assert.equal((await send(id, secret, { type: 'heartbeat' }, { id: 'msg_same' })).status, 204);
    const again = await send(id, secret, { type: 'heartbeat' }, { id: 'msg_same' });
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'message_replayed');
  });
});

describe('what events record', () => {
  test('started moves the run to running; logs read back in sequence, debug only with runs:delete; usage is summed', async () => {
    const { id, secret } = await aRun();
    assert.equal((await send(id, secret, { type: 'started', data: {} })).status, 204);
    assert.equal((await api.get(`/api/runs/${id}`)).body.status, 'running');
    await send(id, secret, { type: 'log', data: { level: 'info', message: 'visible' } });
    await send(id, secret, { type: 'log', data: { level: 'debug', message: 'internal detail' } });
    await send(id, secret, { type: 'metric', data: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, model: 'fake', cost_usd: 0.25 } });
    await send(id, secret, { type: 'metric', data: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, model: 'fake', cost_usd: 0.5 } });

    const all = await api.get(`/api/runs/${id}/logs`);
    assert.deepEqual(all.body.data.map((l: any) => l.message), ['visible', 'internal detail']);
    const limited = await readOnly.get(`/api/runs/${id}/logs`);
    assert.deepEqual(limited.body.data.map((l: any) => l.message), ['visible']);
    const after = await api.get(`/api/runs/${id}/logs?since=${all.body.data[0].sequence}`);
    assert.deepEqual(after.body.data.map((l: any) => l.message), ['internal detail']);

    const run = (await api.get(`/api/runs/${id}`)).body;
    assert.deepEqual(run.cost, { usd: 0.75, prompt_tokens: 11, completion_tokens: 7 });
  });

  test('an expired sink answers 410 run_sink_expired; a finished run 410 run_sink_closed', async () => {
    const { id, secret } = await aRun();
    await app.deps.database.pool.query(`UPDATE runs SET sink_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
    const expired = await send(id, secret, { type: 'heartbeat' });
    assert.equal(expired.status, 410);
    assert.equal(expired.body.code, 'run_sink_expired');
    const extended = await api.patch(`/api/runs/${id}/sink/extend`, { seconds: 600 });
    assert.equal(extended.status, 200, extended.text);
    assert.equal((await send(id, secret, { type: 'heartbeat' })).status, 204);
    // the run's sink has been opened once now: later events are checked as they are recorded
    await app.deps.database.pool.query(`UPDATE runs SET sink_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
    assert.equal((await send(id, secret, { type: 'heartbeat' })).body.code, 'run_sink_expired');
    assert.equal((await api.patch(`/api/runs/${id}/sink/extend`, { seconds: 600 })).status, 200);
    assert.equal((await send(id, secret, { type: 'heartbeat' })).status, 204);
    await api.post(`/api/runs/${id}/cancel`, {});
    const closed = await send(id, secret, { type: 'heartbeat' });
    assert.equal(closed.status, 410);
    assert.equal(closed.body.code, 'run_sink_closed');
    const late = await api.patch(`/api/runs/${id}/sink/extend`, { seconds: 600 });
    assert.equal(late.status, 409);
    assert.equal(late.body.code, 'run_not_running');
  });

  test('an event for a run deleted after its first events is 404', async () => {
    const { id, secret } = await aRun();
    assert.equal((await send(id, secret, { type: 'heartbeat' })).status, 204);
    await app.deps.database.pool.query(`DELETE FROM runs WHERE id = $1`, [id]);
    assert.equal((await send(id, secret, { type: 'heartbeat' })).status, 404);
  });

  test('an event whose text PostgreSQL cannot store (a NUL byte) is refused with 400, not a 500', async () => {
    const { id, secret } = await aRun();
    const res = await send(id, secret, { type: 'log', data: { level: 'info', message: 'nul \u0000 here' } });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.code, 'validation_failed');
    assert.equal((await send(id, secret, { type: 'log', data: { level: 'info', message: 'fine' } })).status, 204);
  });

  test('an event for an unknown run is 404', async () => {
    const res = await send('run_doesnotexist', 'whsec_' + Buffer.from('x'.repeat(24)).toString('base64'), { type: 'heartbeat' });
    assert.equal(res.status, 404);
  });
});
