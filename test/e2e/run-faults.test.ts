// No failure of a process leaves a run stuck or finalizes it twice: the platform killed with
// SIGKILL mid-run and restarted, the Restate server killed mid-run, the sidecar host killed mid-run
// (the process backend's one sidecar process: every run on it is lost).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importFixture, waitForStatus } from '../support/runs.ts';
import pg from 'pg';

// The boot deadline stays the default: a restart starts the engine again (its servers end with the
// platform), and a loaded machine's restart must not outlast the deadline of a run that had started.
const FAST_LIVENESS = { RUN_HEARTBEAT_SECONDS: '1', SANDBOX_WARM_POOL: '0' };

/** A scripted model and a platform process using it, each stopped when the test ends however it ends. */
async function world(t: TestContext, modelOptions: Parameters<typeof startFakeModel>[0], model: string) {
  // undone last made first
  const undo: Array<() => Promise<void>> = [];
  t.after(async () => {
    for (const step of undo.reverse()) await step();
  });
  const fake = await startFakeModel(modelOptions);
  undo.push(() => fake.close());
  const platform = await startPlatformProcess({ env: { ...FAST_LIVENESS, EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host } });
  undo.push(() => platform.stop());
  const pool = new pg.Pool({ connectionString: platform.db.url, max: 2 });
  undo.push(() => pool.end());
  const org = await anOrg(pool);
  const { key } = await aKey(pool, { ...org, userId: org.ownerId });
  await importFixture(platform.url, key, 'agent-echo');
  await aDefaultModel(platform.url, key, fake.url, model);
  return { platform, pool, api: client(platform.url, { key }) };
}

/** The run workflow's own result: what it ended with and whether its compare-and-set recorded it. */
async function workflowResult(platform: PlatformProcess, runId: string): Promise<{ ending: { status: string; error?: { code: string } }; finalized: boolean }> {
  const ports = JSON.parse(fs.readFileSync(path.join(platform.dataDir, 'ports.json'), 'utf8'));
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${ports.restateIngress}/restate/workflow/run/${runId}/output`).catch(() => null);
    if (res?.ok) return (await res.json()) as any;
    // A run that failed ends its workflow as a failure; the result is kept by its `result` handler.
    if (res && res.status !== 470 && res.status !== 404) {
      const kept = await fetch(`http://127.0.0.1:${ports.restateIngress}/run/${runId}/result`, { method: 'POST' }).then((r) => r.json(), () => null);
      if (kept) return kept as any;
    }
    if (Date.now() > deadline) throw new Error(`no workflow result for ${runId}: ${res?.status}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function childPids(pid: number, pattern: string): number[] {
  const out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes(pattern)).map((l) => Number(l.trim().split(/\s+/)[0]));
}

async function assertFinalizedOnce(platform: PlatformProcess, pool: pg.Pool, runId: string, status: string, code?: string) {
  const result = await workflowResult(platform, runId);
  assert.equal(result.ending.status, status);
  if (code) assert.equal(result.ending.error?.code, code);
  const { rows } = await pool.query('SELECT status, error, finished_at FROM runs WHERE id = $1', [runId]);
  assert.equal(rows[0].status, status);
  assert.ok(rows[0].finished_at, 'finished_at is set');
  // Either the workflow recorded the ending, or it found it already recorded: never both changed it.
  if (result.finalized) assert.equal(rows[0].error?.code ?? undefined, code);
}

describe('fault tolerance of runs', () => {
  test('the platform killed with SIGKILL mid-run and restarted ends the run failed sandbox_lost, once', async (t) => {
    const { platform, pool, api } = await world(t, {}, 'fake-hang');
    const run = (await api.post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'x' } })).body;
    await waitForStatus(api, run.id, (s) => s === 'running', 30_000);
    await platform.kill('SIGKILL');
    await platform.restart();
    const ended = await waitForStatus(api, run.id, (s) => !['pending', 'running'].includes(s), 60_000);
    assert.equal(ended.status, 'failed');
    assert.ok(['sandbox_lost', 'heartbeat_lost'].includes(ended.error.code), ended.error.code);
    await assertFinalizedOnce(platform, pool, run.id, 'failed', ended.error.code);
  });

  test('the Restate server killed mid-run is restarted and the run still ends, once', async (t) => {
    const { platform, pool, api } = await world(t, { latencyMs: 1500 }, 'fake');
    const run = (await api.post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'x' } })).body;
    await waitForStatus(api, run.id, (s) => s === 'running', 30_000);
    const restatePid = Number(fs.readFileSync(path.join(platform.dataDir, 'restate.pid'), 'utf8'));
    process.kill(restatePid, 'SIGKILL');
    const ended = await waitForStatus(api, run.id, (s) => !['pending', 'running'].includes(s), 90_000);
    assert.equal(ended.status, 'success', JSON.stringify(ended.error));
    await assertFinalizedOnce(platform, pool, run.id, 'success');
    const newPid = Number(fs.readFileSync(path.join(platform.dataDir, 'restate.pid'), 'utf8'));
    assert.notEqual(newPid, restatePid, 'the platform started a new Restate server');
  });

  test('the sidecar host killed mid-run ends the run on it failed sandbox_lost, once', async (t) => {
    const { platform, pool, api } = await world(t, {}, 'fake-hang');
    const run = (await api.post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'x' } })).body;
    await waitForStatus(api, run.id, (s) => s === 'running', 30_000);
    const sidecars = childPids(platform.proc.pid!, 'dist/sidecar.cjs');
    assert.equal(sidecars.length, 1, 'one sidecar host serves every sandbox of the worker');
    process.kill(sidecars[0], 'SIGKILL');
    const ended = await waitForStatus(api, run.id, (s) => !['pending', 'running'].includes(s), 30_000);
    assert.equal(ended.status, 'failed');
    assert.equal(ended.error.code, 'sandbox_lost');
    await assertFinalizedOnce(platform, pool, run.id, 'failed', 'sandbox_lost');
  });
});
