// What support staff see and do in the workflow engine, on a really started platform: a failed
// run's workflow is listed as failed; cancelling a run's workflow through the Restate admin API
// ends the run cancelled at once, and killing it ends the run within a reconciler sweep; either
// way the run's sandbox (its processes and its folder) is gone.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { cancelInvocation, findWorkflowInvocation, killInvocation } from '../../restate/admin.ts';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importFixture } from '../support/runs.ts';

const ECHO = '/api/agents/@fixtures/agent-echo/run';
// No warm pool: every sandbox process of the platform belongs to the run under test.
const ENV = { RUN_HEARTBEAT_SECONDS: '1', RUN_BOOT_SECONDS: '20', SANDBOX_WARM_POOL: '0', RUN_RECONCILE_SECONDS: '2' };

let platform: PlatformProcess;
let fake: Awaited<ReturnType<typeof startFakeModel>>;
let api: ReturnType<typeof client>;
const models: Record<string, string> = {};

before(async () => {
  fake = await startFakeModel();
  platform = await startPlatformProcess({ env: { ...ENV, EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host } });
  const pool = new pg.Pool({ connectionString: platform.db.url, max: 1 });
  const org = await anOrg(pool);
  const { key } = await aKey(pool, { ...org, userId: org.ownerId });
  await pool.end();
  api = client(platform.url, { key });
  await importFixture(platform.url, key, 'agent-echo');
  await aDefaultModel(platform.url, key, fake.url, 'fake-hang');
  const credential = (await api.get('/api/model-provider-credentials')).body.data[0].id;
  const res = await api.post('/api/models', { credential_id: credential, model: 'fake-text', name: 'fake-text' });
  assert.equal(res.status, 201, res.text);
  models['fake-text'] = res.body.id;
});
after(async () => {
  await platform?.stop();
  await fake?.close();
});

async function until<T>(what: string, ms: number, probe: () => Promise<T | null | undefined | false>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => null);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms\n${platform.output().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function runStatus(runId: string): Promise<any> {
  const res = await api.get(`/api/runs/${runId}`);
  return res.status === 200 ? res.body : null;
}

/**
 * The platform's agent runtimes (direct children: started from their bundle or its startup snapshot)
 * and sandbox folders. A run's sidecar is a session of the worker's long-lived sidecar host, which
 * outlives the run.
 */
function sandboxTraces(): { pids: number[]; folders: string[] } {
  const out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(platform.proc.pid)], { encoding: 'utf8' });
  const pids = out.split('\n').filter((l) => /dist\/agent-runtime\./.test(l)).map((l) => Number(l.trim().split(/\s+/)[0]));
  const dir = path.join(platform.dataDir, 'sandboxes');
  const folders = fs.existsSync(dir) ? fs.readdirSync(dir).filter((name) => name.startsWith('sbx_')) : [];
  return { pids, folders };
}

async function aRunningRun(): Promise<{ runId: string; invocationId: string }> {
  const launched = await api.post(ECHO, { input: { message: 'stuck' } });
  assert.equal(launched.status, 201, launched.text);
  const runId = launched.body.id;
  await until('the run running', 30_000, async () => (await runStatus(runId))?.status === 'running');
  const traces = sandboxTraces();
  assert.equal(traces.pids.length, 1, 'an agent runtime');
  assert.equal(traces.folders.length, 1, 'one sandbox folder');
  const invocation = await findWorkflowInvocation(platform.restateAdminUrl(), 'run', runId);
  assert.ok(invocation, 'the run id is the workflow key');
  return { runId, invocationId: invocation.id };
}

async function assertSandboxGone(ms: number): Promise<void> {
  await until('the sandbox teardown', ms, async () => {
    const { pids, folders } = sandboxTraces();
    return pids.length === 0 && folders.length === 0;
  });
}

describe('runs in the workflow engine', () => {
  test('a failed run shows its workflow as failed, with the run error code', async () => {
    const launched = await api.post(ECHO, { input: { message: 'x' }, model_id: models['fake-text'] });
    assert.equal(launched.status, 201, launched.text);
    const run = (await api.get(`/api/runs/${launched.body.id}?wait=40`)).body;
    assert.equal(run.status, 'failed');
    assert.equal(run.error.code, 'no_output');

    const invocation = await until('the workflow completed', 20_000, async () => {
      const found = await findWorkflowInvocation(platform.restateAdminUrl(), 'run', run.id);
      return found?.status === 'completed' ? found : null;
    });
    assert.equal(invocation.completion_result, 'failure');
    assert.equal(invocation.completion_failure, '[500] run failed: no_output');
  });

  test('cancelling the workflow through the admin API ends the run cancelled by the operator and removes its sandbox', async () => {
    const { runId, invocationId } = await aRunningRun();

    await cancelInvocation(platform.restateAdminUrl(), invocationId);

    const ended = await until('the run ended', 15_000, async () => {
      const run = await runStatus(runId);
      return run && !['pending', 'running'].includes(run.status) ? run : null;
    });
    assert.equal(ended.status, 'cancelled');
    assert.equal(ended.error.code, 'run_cancelled_by_operator');
    await assertSandboxGone(15_000);
  });

  test('killing the workflow through the admin API ends the run workflow_lost within a sweep and reaps its sandbox', async () => {
    const { runId, invocationId } = await aRunningRun();

    await killInvocation(platform.restateAdminUrl(), invocationId);

    // Sweeps every 2 s with a 2 s grace: 30 s leaves room for a loaded machine, not for the far deadline.
    const ended = await until('the run ended', 30_000, async () => {
      const run = await runStatus(runId);
      return run && !['pending', 'running'].includes(run.status) ? run : null;
    });
    assert.equal(ended.status, 'failed');
    assert.equal(ended.error.code, 'workflow_lost');
    assert.match(ended.error.message, /killed/);
    await assertSandboxGone(20_000);

    // Support's next step: the same agent, the same input.
    const rerun = await api.post(ECHO, { rerun_from: runId });
    assert.equal(rerun.status, 201, rerun.text);
    assert.equal(rerun.body.rerun_of, runId);
    assert.deepEqual(rerun.body.input, { message: 'stuck' });
    await api.post(`/api/runs/${rerun.body.id}/cancel`, {});
  });
});
