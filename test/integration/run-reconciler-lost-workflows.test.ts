// The reconciler's engine sweep against a real Restate server and the real `run` workflow: open
// runs whose workflow is gone or killed are failed workflow_lost; runs whose workflow is alive,
// runs submitted within the grace, and everything when the engine cannot be asked, are left alone.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { reconcileLostWorkflows } from '../../api/services/runs/reconciler.ts';
import { freePort } from '../../lib/free-port.ts';
import { findWorkflowInvocation, killInvocation, registerDeployment } from '../../restate/admin.ts';
import { startRestateServer, type RestateServer } from '../../restate/launcher.ts';
import { startWorkflowEndpoint, type WorkflowEndpoint } from '../../workflows/endpoint.ts';
import { createRunWorkflow } from '../../workflows/run.ts';
import { createRunWorkflowClient, type RunWorkflowClient } from '../../workflows/run-client.ts';
import type { RunActivities } from '../../workflows/run-types.ts';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { aDefaultModel } from '../support/runs.ts';

let fake: Awaited<ReturnType<typeof startFakeModel>>;
let app: TestApp;
let api: ReturnType<typeof client>;
let baseDir: string;
let server: RestateServer;
let endpoint: WorkflowEndpoint;
let runs: RunWorkflowClient;

// A sandbox that stays healthy for the whole file: the workflow waits on its timers.
const activities: RunActivities = {
  boot: async () => ({ sandboxId: 'sbx_scripted', timeoutSeconds: 600, bootSeconds: 600, heartbeatSeconds: 60 }),
  lastHeartbeatAt: async () => Date.now(),
  sandboxAlive: async () => true,
  bootCheck: async () => ({ run: 'pending', sandbox: 'running' }),
  finalize: async () => ({ finalized: false }),
  teardown: async () => undefined,
  expireApproval: async () => false,
};

before(async () => {
  fake = await startFakeModel();
  app = await startTestApp({ env: { EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host } });
  const org = await anOrg(app.deps.database.pool);
  const { key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId });
  api = client(app.url, { key });
  await aDefaultModel(app.url, key, fake.url);
  baseDir = mkdtempSync(join(tmpdir(), 'restate-reconciler-'));
  const [ingressPort, adminPort, nodePort, endpointPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  server = await startRestateServer({ baseDir, ingressPort, adminPort, nodePort, logFile: join(baseDir, 'restate.log') });
  endpoint = await startWorkflowEndpoint({ port: endpointPort, services: [createRunWorkflow(activities)], logger: () => {} });
  await registerDeployment(server.adminUrl, endpoint.url);
  runs = createRunWorkflowClient(server.ingressUrl);
});
after(async () => {
  await endpoint?.close();
  await server?.stop();
  if (baseDir) rmSync(baseDir, { recursive: true, force: true });
  await app?.close();
  await fake?.close();
});

/** An open inline run; `submittedAgo` seconds since the engine acknowledged it (null: never). */
async function anOpenRun(submittedAgo: number | null): Promise<string> {
  const res = await api.post('/api/runs/inline', {
    manifest: { name: '@inline/greeter', version: '0.1.0', type: 'agent', schema_version: '0.3' },
    prompt: 'Greet.',
    input: {},
  });
  assert.equal(res.status, 201, res.text);
  await app.deps.database.pool.query(
    `UPDATE runs SET status = 'running', started_at = now(), submitted_at = now() - make_interval(secs => $2::int) WHERE id = $1`,
    [res.body.id, submittedAgo],
  );
  return res.body.id;
}

async function runOf(id: string): Promise<{ status: string; error: { code: string; message: string } | null }> {
  return (await api.get(`/api/runs/${id}`)).body;
}

async function submitted(runId: string): Promise<string> {
  const { invocationId } = await runs.submit(runId);
  // Let the workflow take its first steps, so it is suspended on its timers.
  for (let i = 0; i < 50; i++) {
    const invocation = await findWorkflowInvocation(server.adminUrl, 'run', runId);
    if (invocation && invocation.journal_size > 2) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return invocationId;
}

describe('the lost-workflow sweep', () => {
  test('gone and killed workflows fail their run workflow_lost once; live, young and never-submitted runs are left alone', async () => {
    const pool = app.deps.database.pool;
    const gone = await anOpenRun(120);
    const killed = await anOpenRun(120);
    const live = await anOpenRun(120);
    const young = await anOpenRun(0);
    const unsubmitted = await anOpenRun(null);
    const killedInvocation = await submitted(killed);
    await submitted(live);
    await killInvocation(server.adminUrl, killedInvocation);
    for (let i = 0; i < 50 && (await findWorkflowInvocation(server.adminUrl, 'run', killed))?.status !== 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }

    const failed = await reconcileLostWorkflows(pool, server.adminUrl, 60);

    assert.deepEqual(new Set(failed), new Set([gone, killed]));
    const [goneRun, killedRun] = [await runOf(gone), await runOf(killed)];
    assert.equal(goneRun.status, 'failed');
    assert.equal(goneRun.error?.code, 'workflow_lost');
    assert.match(goneRun.error!.message, /gone from the workflow engine/);
    assert.equal(killedRun.error?.code, 'workflow_lost');
    assert.match(killedRun.error!.message, /was killed/);
    for (const id of [live, young, unsubmitted]) assert.equal((await runOf(id)).status, 'running', id);
    assert.deepEqual(await reconcileLostWorkflows(pool, server.adminUrl, 60), [], 'finalized once');
  });

  test('an engine that cannot be asked fails nothing', async () => {
    const orphan = await anOpenRun(120);
    const closedPort = await freePort();
    await assert.rejects(reconcileLostWorkflows(app.deps.database.pool, `http://127.0.0.1:${closedPort}`, 60));
    assert.equal((await runOf(orphan)).status, 'running');
    // The run is left for the next sweep against the real engine.
    assert.ok((await reconcileLostWorkflows(app.deps.database.pool, server.adminUrl, 60)).includes(orphan));
  });
});
