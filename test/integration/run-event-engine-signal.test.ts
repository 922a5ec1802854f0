// Event ingestion's engine branch, with a real Restate server: when the engine does not take a
// runner's signal (it answers with a refusal, or it is unreachable), the event is not kept as
// accepted: the runner is told 502 with Retry-After and its retry of the same delivery is applied
// again instead of being refused as a replay. A terminal event is finalized by the API all the
// same, so the run's ending never waits for the engine.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { freePort } from '../../lib/free-port.ts';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import { startRestateServer, type RestateServer } from '../../restate/launcher.ts';
import { createRunWorkflowClient } from '../../workflows/run-client.ts';
import { call } from '../support/http.ts';
import { aRunWorld, type RunWorld } from '../support/runs.ts';

let restate: RestateServer;
let restateDir: string;
let world: RunWorld;
let app: RunWorld['app'];
let api: RunWorld['api'];

before(async () => {
  restateDir = mkdtempSync(join(tmpdir(), 'engine-signal-'));
  const [ingressPort, adminPort, nodePort] = await Promise.all([freePort(), freePort(), freePort()]);
  // No deployment is registered: the engine refuses every signal to the run workflow.
  restate = await startRestateServer({ baseDir: restateDir, ingressPort, adminPort, nodePort });
  world = await aRunWorld({ app: { runs: createRunWorkflowClient(restate.ingressUrl, { signalRetryMs: 300 }) } });
  ({ app, api } = world);
});
after(async () => {
  await world.close();
  await restate.stop().catch(() => {});
  rmSync(restateDir, { recursive: true, force: true });
});

async function aRun(): Promise<{ id: string; secret: string }> {
  const run = await api.post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'hi' } });
  assert.equal(run.status, 201, run.text);
  const { rows } = await app.deps.database.pool.query('SELECT event_secret FROM runs WHERE id = $1', [run.body.id]);
  return { id: run.body.id, secret: app.deps.secrets.open(rows[0].event_secret) };
}

function deliver(runId: string, raw: string, headers: Record<string, string>) {
  return call(app.url, 'POST', `/internal/runs/${runId}/events`, { rawBody: raw, headers: { 'content-type': 'application/json', ...headers } });
}

test('a started signal the engine refuses answers 502 with Retry-After, and the same delivery retried is applied again, not refused as a replay', async () => {
  const { id, secret } = await aRun();
  const raw = JSON.stringify({ sequence: 1, type: 'started', data: {} });
  const headers = signedRunEventHeaders(secret, raw);
  const first = await deliver(id, raw, headers);
  assert.equal(first.status, 502, first.text);
  assert.equal(first.body.code, 'bad_gateway');
  assert.equal(first.headers.get('retry-after'), '1');
  const { rows } = await app.deps.database.pool.query('SELECT count(*)::int AS n FROM run_event_ids WHERE run_id = $1', [id]);
  assert.equal(rows[0].n, 0, 'the refused delivery is forgotten');
  const retried = await deliver(id, raw, headers);
  assert.equal(retried.status, 502, `a retry must reach the engine again, not be a replay: ${retried.text}`);
});

test('a terminal event the engine refuses still ends the run, answered 204', async () => {
  const { id, secret } = await aRun();
  const output = JSON.stringify({ sequence: 1, type: 'output', data: { output: { echo: 'hi' } } });
  assert.equal((await deliver(id, output, signedRunEventHeaders(secret, output))).status, 204);
  const done = JSON.stringify({ sequence: 2, type: 'completed', data: {} });
  const res = await deliver(id, done, signedRunEventHeaders(secret, done));
  assert.equal(res.status, 204, res.text);
  const run = await api.get(`/api/runs/${id}`);
  assert.equal(run.body.status, 'success');
  assert.deepEqual(run.body.result?.output ?? run.body.output, { echo: 'hi' });
});

test('with the engine unreachable, a started event answers 502 and its retry is applied again', async () => {
  await restate.stop();
  const { id, secret } = await aRun();
  const raw = JSON.stringify({ sequence: 1, type: 'started', data: {} });
  const headers = signedRunEventHeaders(secret, raw);
  const first = await deliver(id, raw, headers);
  assert.equal(first.status, 502, first.text);
  assert.equal(first.body.code, 'bad_gateway');
  const retried = await deliver(id, raw, headers);
  assert.equal(retried.status, 502, retried.text);
});
