// A forger attacks a run whose sink is already open (its secret opened and kept by the API after a
// genuine first event): every event must still be verified against that run's own secret, so a
// forged, re-signed, tampered or cross-run event changes nothing and is refused with its code.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { newRunEventSecret, signedRunEventHeaders, signRunEvent } from '../../lib/run-events.ts';
import { call } from '../support/http.ts';
import { aRunWorld, type RunWorld } from '../support/runs.ts';

let world: RunWorld;
let app: RunWorld['app'];
let api: RunWorld['api'];

before(async () => {
  world = await aRunWorld();
  ({ app, api } = world);
});
after(() => world.close());

async function anOpenRun(): Promise<{ id: string; secret: string }> {
  const run = await api.post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'hi' } });
  assert.equal(run.status, 201, run.text);
  const { rows } = await app.deps.database.pool.query('SELECT event_secret FROM runs WHERE id = $1', [run.body.id]);
  const secret = app.deps.secrets.open(rows[0].event_secret);
  // The genuine first event opens the sink: from here on the API checks events with the kept secret.
  const first = await post(run.body.id, secret, { sequence: 1, type: 'started', data: {} });
  assert.equal(first.status, 204, first.text);
  return { id: run.body.id, secret };
}

function post(runId: string, secret: string, event: Record<string, unknown>, opts: { headers?: Record<string, string>; raw?: string } = {}) {
  const raw = opts.raw ?? JSON.stringify({ at: new Date().toISOString(), ...event });
  const headers = opts.headers ?? signedRunEventHeaders(secret, raw);
  return call(app.url, 'POST', `/internal/runs/${runId}/events`, { rawBody: raw, headers: { 'content-type': 'application/json', ...headers } });
}

async function stored(runId: string): Promise<{ status: string; output: unknown; last_sequence: number }> {
  const { rows } = await app.deps.database.pool.query('SELECT status, output, last_sequence FROM runs WHERE id = $1', [runId]);
  return rows[0];
}

const forgedEnding = (sequence: number) => ({ sequence, type: 'output', data: { output: { forged: true } } });

test('an event signed with a made-up secret is refused after the sink is open, and records nothing', async () => {
  const { id } = await anOpenRun();
  const before = await stored(id);
  const res = await post(id, newRunEventSecret(), forgedEnding(2));
  assert.equal(res.status, 401);
  assert.equal(res.body.code, 'invalid_signature');
  const done = await post(id, newRunEventSecret(), { sequence: 3, type: 'completed', data: { text: 'forged' } });
  assert.equal(done.status, 401);
  assert.deepEqual(await stored(id), before);
});

test("another run's genuine secret cannot sign events for this run", async () => {
  const victim = await anOpenRun();
  const attacker = await anOpenRun();
  const res = await post(victim.id, attacker.secret, { sequence: 2, type: 'completed', data: { text: 'forged' } });
  assert.equal(res.status, 401);
  assert.equal(res.body.code, 'invalid_signature');
  assert.equal((await stored(victim.id)).status, 'running');
});

test('a genuine signature over another body (tampered in flight) is refused', async () => {
  const { id, secret } = await anOpenRun();
  const genuine = JSON.stringify({ sequence: 2, type: 'heartbeat' });
  const headers = signedRunEventHeaders(secret, genuine);
  const res = await post(id, secret, {}, { headers, raw: JSON.stringify({ sequence: 2, type: 'completed', data: { text: 'tampered' } }) });
  assert.equal(res.status, 401);
  assert.equal(res.body.code, 'invalid_signature');
  assert.equal((await stored(id)).status, 'running');
});

test('a signature moved to another webhook-id or timestamp is refused', async () => {
  const { id, secret } = await anOpenRun();
  const raw = JSON.stringify({ sequence: 2, type: 'completed', data: { text: 'moved' } });
  const now = Math.floor(Date.now() / 1000);
  const signature = signRunEvent(secret, 'msg_original', now, raw);
  const otherId = await post(id, secret, {}, { raw, headers: { 'webhook-id': 'msg_other', 'webhook-timestamp': String(now), 'webhook-signature': signature } });
  assert.equal(otherId.status, 401);
  assert.equal(otherId.body.code, 'invalid_signature');
  const otherTime = await post(id, secret, {}, { raw, headers: { 'webhook-id': 'msg_original', 'webhook-timestamp': String(now - 1), 'webhook-signature': signature } });
  assert.equal(otherTime.status, 401);
  assert.equal(otherTime.body.code, 'invalid_signature');
  assert.equal((await stored(id)).status, 'running');
});

test('missing or stale signature headers are refused after the sink is open', async () => {
  const { id, secret } = await anOpenRun();
  const missing = await post(id, secret, { sequence: 2, type: 'heartbeat' }, { headers: {} });
  assert.equal(missing.status, 401);
  assert.equal(missing.body.code, 'missing_signature_headers');
  const raw = JSON.stringify({ sequence: 2, type: 'heartbeat' });
  const stale = await post(id, secret, {}, { raw, headers: signedRunEventHeaders(secret, raw, { nowSec: Math.floor(Date.now() / 1000) - 3600 }) });
  assert.equal(stale.status, 401);
  assert.equal(stale.body.code, 'timestamp_out_of_tolerance');
});

test('a captured genuine event replayed after the sink is open is refused with 409 and applied once', async () => {
  const { id, secret } = await anOpenRun();
  const raw = JSON.stringify({ sequence: 2, type: 'log', data: { level: 'info', message: 'once' } });
  const headers = signedRunEventHeaders(secret, raw);
  assert.equal((await post(id, secret, {}, { raw, headers })).status, 204);
  const again = await post(id, secret, {}, { raw, headers });
  assert.equal(again.status, 409);
  assert.equal(again.body.code, 'message_replayed');
  const logs = await api.get(`/api/runs/${id}/logs`);
  assert.deepEqual(logs.body.data.map((l: { message: string }) => l.message), ['once']);
});

test('the genuine runner still ends its run after the forgeries were refused', async () => {
  const { id, secret } = await anOpenRun();
  assert.equal((await post(id, newRunEventSecret(), { sequence: 2, type: 'failed', data: { code: 'forged', message: 'x' } })).status, 401);
  assert.equal((await post(id, newRunEventSecret(), { sequence: 2, type: 'output', data: { output: { echo: 'forged' } } })).status, 401);
  assert.equal((await post(id, secret, { sequence: 2, type: 'output', data: { output: { echo: 'genuine' } } })).status, 204);
  const done = await post(id, secret, { sequence: 3, type: 'completed', data: {} });
  assert.equal(done.status, 204, done.text);
  const run = await stored(id);
  assert.equal(run.status, 'success');
  assert.deepEqual(run.output, { echo: 'genuine' });
});
