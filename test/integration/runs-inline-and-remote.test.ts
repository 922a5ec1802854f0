// Inline runs (a manifest and prompt sent with the launch, under INLINE_RUN_LIMITS, emptied after
// the retention period) and remote runs (executed elsewhere, reporting through the same sink).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { purgeExpiredInlineRuns } from '../../api/services/runs/retention.ts';
import { reconcileAbandonedRuns, ABANDONED_MARGIN_SECONDS } from '../../api/services/runs/reconciler.ts';
import { createRunSubmitter } from '../../api/services/runs/submitter.ts';
import type { RunWorkflowClient } from '../../workflows/run-client.ts';
import { createRunActivities, type RunMaterials } from '../../activities/run-activities.ts';
import type { SandboxAdapter } from '../../activities/sandbox/adapter.ts';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import { call } from '../support/http.ts';
import { aRunWorld, type RunWorld } from '../support/runs.ts';

let world: RunWorld;
let app: RunWorld['app'];
let api: RunWorld['api'];

const manifest = (extra: Record<string, unknown> = {}) => ({
  name: '@inline/greeter', version: '0.1.0', type: 'agent', schema_version: '0.3',
  input: { schema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] } },
  ...extra,
});

before(async () => {
  world = await aRunWorld({ env: { INLINE_RUN_LIMITS: '{"manifest_bytes": 2000, "prompt_bytes": 100, "max_skills": 1}' } });
  ({ app, api } = world);
});
after(() => world.close());

describe('inline runs', () => {
  test('validate answers the normalized manifest; launch answers a pending inline run', async () => {
    const body = { manifest: manifest(), prompt: 'Greet {{who}}.', input: { who: 'Ada' } };
    const checked = await api.post('/api/runs/inline/validate', body);
    assert.equal(checked.status, 200, checked.text);
    assert.equal(checked.body.valid, true);
    const run = await api.post('/api/runs/inline', body);
    assert.equal(run.status, 201, run.text);
    assert.equal(run.body.kind, 'inline');
    assert.equal(run.body.packageId, '@inline/greeter');
    assert.deepEqual(run.body.input, { who: 'Ada' });
  });

  test('an invalid manifest, a manifest over manifest_bytes or over max_skills is 400 invalid_inline_manifest', async () => {
    const bad = await api.post('/api/runs/inline', { manifest: { name: 'nope', version: 'x', type: 'agent' }, prompt: 'hi' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'invalid_inline_manifest');
    assert.ok(bad.body.errors.every((e: any) => e.field.startsWith('manifest.')));
    const big = await api.post('/api/runs/inline', { manifest: manifest({ description: 'x'.repeat(3000) }), prompt: 'hi', input: { who: 'a' } });
    assert.equal(big.status, 400);
    assert.equal(big.body.code, 'invalid_inline_manifest');
    const skills = await api.post('/api/runs/inline', { manifest: manifest({ dependencies: { skills: { '@a/one': '^1.0.0', '@a/two': '^1.0.0' } } }), prompt: 'hi', input: { who: 'a' } });
    assert.equal(skills.status, 400);
    assert.equal(skills.body.code, 'invalid_inline_manifest');
  });

  test('a prompt over prompt_bytes is refused; input is checked against the inline input schema', async () => {
    const long = await api.post('/api/runs/inline', { manifest: manifest(), prompt: 'p'.repeat(101), input: { who: 'a' } });
    assert.equal(long.status, 400);
    assert.equal(long.body.errors[0].field, 'prompt');
    const input = await api.post('/api/runs/inline', { manifest: manifest(), prompt: 'hi', input: {} });
    assert.equal(input.status, 400);
    assert.equal(input.body.code, 'invalid_input');
  });

  test('after the retention period the manifest and prompt are emptied and logs deleted; the run record stays', async () => {
    const run = (await api.post('/api/runs/inline', { manifest: manifest(), prompt: 'hi', input: { who: 'a' } })).body;
    const pool = app.deps.database.pool;
    await pool.query(`UPDATE runs SET status = 'success', created_at = now() - interval '31 days' WHERE id = $1`, [run.id]);
    await pool.query(`INSERT INTO run_logs (run_id, sequence, level, message) VALUES ($1, 1, 'info', 'old')`, [run.id]);
    assert.ok((await purgeExpiredInlineRuns(pool, 30)) >= 1);
    const { rows } = await pool.query('SELECT inline_manifest, inline_prompt, purged_at FROM runs WHERE id = $1', [run.id]);
    assert.equal(rows[0].inline_manifest, null);
    assert.equal(rows[0].inline_prompt, null);
    assert.ok(rows[0].purged_at);
    assert.equal((await pool.query('SELECT 1 FROM run_logs WHERE run_id = $1', [run.id])).rowCount, 0);
    assert.equal((await api.get(`/api/runs/${run.id}`)).status, 200);
  });
});

describe('remote runs', () => {
  test('the sink address and secret are answered once; the remote runner reports through them', async () => {
    const created = await api.post('/api/runs/remote', { packageId: '@fixtures/agent-echo', input: { message: 'elsewhere' } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.kind, 'remote');
    const { events_url: eventsUrl, secret } = created.body.sink;
    assert.match(secret, /^whsec_/);
    assert.match(eventsUrl, new RegExp(`/internal/runs/${created.body.id}/events$`));
    const raw = JSON.stringify({ sequence: 1, type: 'started', at: new Date().toISOString(), data: {} });
    const posted = await call(app.url, 'POST', new URL(eventsUrl).pathname, { rawBody: raw, headers: { 'content-type': 'application/json', ...signedRunEventHeaders(secret, raw) } });
    assert.equal(posted.status, 204);
    const read = await api.get(`/api/runs/${created.body.id}`);
    assert.equal(read.body.status, 'running');
    assert.equal(read.body.sink, undefined, 'the secret is not shown again');

    // The runner reported `started` before the engine booted the run's workflow: the boot still
    // takes the run (a remote run has no sandbox to start), it does not fail it run_not_pending.
    const activities = createRunActivities({
      pool: app.deps.database.pool, db: app.deps.database.db, secrets: app.deps.secrets, log: app.deps.log,
      adapter: { start: async () => assert.fail('no sandbox for a remote run'), alive: async () => false, stop: async () => undefined } as unknown as SandboxAdapter,
      materials: {} as RunMaterials, eventsBaseUrl: app.url, bootSeconds: 60, heartbeatSeconds: 10, egressAllowInternalHosts: [], limits: { memoryMb: 512, cpus: 1 },
    });
    const booted = await activities.boot(created.body.id);
    assert.equal(booted.sandboxId, 'remote');
    assert.equal(await activities.sandboxAlive(created.body.id, booted.sandboxId), true);
  });

  test('the engine sweeper resubmits unacknowledged pending runs of every kind, and only those', async () => {
    const pool = app.deps.database.pool;
    const remote = await api.post('/api/runs/remote', { packageId: '@fixtures/agent-echo', input: { message: 'swept?' } });
    const inline = await api.post('/api/runs/inline', { manifest: manifest(), prompt: 'Greet {{who}}.', input: { who: 'Bo' } });
    assert.equal(remote.status, 201, remote.text);
    assert.equal(inline.status, 201, inline.text);
    // both look unacknowledged for a while, as after a crash between the insert and the submission
    await pool.query(`UPDATE runs SET created_at = now() - interval '1 minute' WHERE id = ANY($1)`, [[remote.body.id, inline.body.id]]);
    const submitted: string[] = [];
    const engine = { submit: async (id: string) => void submitted.push(id) } as unknown as RunWorkflowClient;
    const submitter = createRunSubmitter(pool, engine, app.deps.log);
    try {
      await submitter.sweep();
    } finally {
      await submitter.stop();
    }
    assert.ok(submitted.includes(inline.body.id), 'the inline run is resubmitted');
    assert.ok(submitted.includes(remote.body.id), 'the remote run is resubmitted: its workflow keeps its deadlines');
    const { rows } = await pool.query('SELECT id FROM runs WHERE id = ANY($1) AND submitted_at IS NOT NULL', [[remote.body.id, inline.body.id]]);
    assert.equal(rows.length, 2, 'both are acknowledged after the sweep');
    submitted.length = 0;
    const again = createRunSubmitter(pool, engine, app.deps.log);
    try {
      await again.sweep();
    } finally {
      await again.stop();
    }
    assert.ok(!submitted.includes(remote.body.id) && !submitted.includes(inline.body.id), 'acknowledged runs are not submitted again');
  });
});

describe('the reconciler', () => {
  test('a run left open past every deadline is failed run_abandoned once; remote runs alike; younger runs are left alone', async () => {
    const pool = app.deps.database.pool;
    const launch = async () => {
      const r = await api.post('/api/runs/inline', { manifest: manifest(), prompt: 'Greet {{who}}.', input: { who: 'Cy' } });
      assert.equal(r.status, 201, r.text);
      return r.body;
    };
    const stuck = await launch();
    const young = await launch();
    const remote = (await api.post('/api/runs/remote', { packageId: '@fixtures/agent-echo', input: { message: 'far' } })).body;
    await pool.query(`UPDATE runs SET status = 'running', started_at = now() WHERE id = $1`, [stuck.id]);
    // past boot + timeout + the finalization margin by a minute, for the stuck and the remote run
    const age = `${60 + ABANDONED_MARGIN_SECONDS + stuck.timeout_seconds + 60} seconds`;
    await pool.query(`UPDATE runs SET created_at = now() - $2::interval WHERE id = ANY($1)`, [[stuck.id, remote.id], age]);
    const failed = await reconcileAbandonedRuns(pool, 60);
    assert.ok(failed.includes(stuck.id) && failed.includes(remote.id));
    assert.ok(!failed.includes(young.id));
    const read = (await api.get(`/api/runs/${stuck.id}`)).body;
    assert.equal(read.status, 'failed');
    assert.equal(read.error.code, 'run_abandoned');
    assert.equal((await api.get(`/api/runs/${young.id}`)).body.status, 'pending');
    assert.equal((await api.get(`/api/runs/${remote.id}`)).body.error.code, 'run_abandoned');
    assert.ok(!(await reconcileAbandonedRuns(pool, 60)).includes(stuck.id), 'finalized once');
  });
});
