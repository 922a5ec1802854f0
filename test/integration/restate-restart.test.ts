import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRestateServer, type RestateServerOptions } from '../../restate/launcher.ts';
import { freePort } from '../../lib/free-port.ts';
import { findWorkflowInvocation, registerDeployment } from '../../restate/admin.ts';
import { startWorkflowEndpoint } from '../../workflows/endpoint.ts';
import { createRunWorkflow } from '../../workflows/run.ts';
import { createRunWorkflowClient } from '../../workflows/run-client.ts';
import type { RunActivities, RunEnding } from '../../workflows/run-types.ts';

/** Activities that always find a healthy sandbox, recording what the workflow did. */
function aHealthySandbox() {
  const finalizeCalls: RunEnding[] = [];
  const teardowns: string[] = [];
  const activities: RunActivities = {
    boot: async (runId) => ({ sandboxId: `sbx_${runId}`, bootSeconds: 30, heartbeatSeconds: 1, timeoutSeconds: 60 }),
    lastHeartbeatAt: async () => Date.now(),
    sandboxAlive: async () => true,
    bootCheck: async () => ({ run: 'pending', sandbox: 'running' }),
    finalize: async (_runId, ending) => {
      finalizeCalls.push(ending);
      return { finalized: finalizeCalls.length === 1 };
    },
    teardown: async (_runId, sandboxId) => { teardowns.push(sandboxId); },
    expireApproval: async () => false,
  };
  return { activities, finalizeCalls, teardowns };
}

const silent = () => {};

/** Fixed ports and a data directory for one test; `cleanup` runs last-registered first when the test ends. */
async function aServerSetup(t: { after(fn: () => Promise<void>): void }) {
  const cleanups: Array<() => unknown> = [];
  t.after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });
  const baseDir = mkdtempSync(join(tmpdir(), 'restate-restart-'));
  cleanups.push(() => rmSync(baseDir, { recursive: true, force: true }));
  const [ingressPort, adminPort, nodePort, endpointPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const serverOptions: RestateServerOptions = { baseDir, ingressPort, adminPort, nodePort, logFile: join(baseDir, 'restate.log') };
  return { serverOptions, endpointPort, cleanup: (fn: () => unknown) => cleanups.push(fn) };
}

test('a run survives a restart of the restate server with the same data directory and ports', async (t) => {
  const { serverOptions, endpointPort, cleanup } = await aServerSetup(t);
  const sandbox = aHealthySandbox();
  let server = await startRestateServer(serverOptions);
  cleanup(() => server.stop());
  const endpoint = await startWorkflowEndpoint({ port: endpointPort, services: [createRunWorkflow(sandbox.activities)], logger: silent });
  cleanup(() => endpoint.close());
  const deployment = await registerDeployment(server.adminUrl, endpoint.url);
  const client = createRunWorkflowClient(server.ingressUrl);

  const { invocationId } = await client.submit('run_restart');
  await client.started('run_restart');
  await server.stop();
  server = await startRestateServer(serverOptions);
  t.diagnostic(`restart with existing data: healthy in ${server.startedInMs} ms`);
  const again = await registerDeployment(server.adminUrl, endpoint.url);
  await client.terminal('run_restart', { status: 'success', output: 'after restart' });
  const result = await client.attach('run_restart');

  assert.equal(again.id, deployment.id);
  assert.deepEqual(result, { ending: { status: 'success', output: 'after restart' }, finalized: true });
  assert.equal(sandbox.finalizeCalls.length, 1);
  assert.deepEqual(sandbox.teardowns, ['sbx_run_restart']);
  const invocation = await findWorkflowInvocation(server.adminUrl, 'run', 'run_restart');
  assert.equal(invocation?.id, invocationId);
  assert.equal(invocation?.status, 'completed');
  assert.equal(invocation?.pinned_deployment_id, deployment.id);
});

test('a run resumes on a new endpoint started on the same port after the old one closed', async (t) => {
  const { serverOptions, endpointPort, cleanup } = await aServerSetup(t);
  const sandbox = aHealthySandbox();
  const server = await startRestateServer(serverOptions);
  cleanup(() => server.stop());
  let endpoint = await startWorkflowEndpoint({ port: endpointPort, services: [createRunWorkflow(sandbox.activities)], logger: silent });
  cleanup(() => endpoint.close());
  await registerDeployment(server.adminUrl, endpoint.url);
  const client = createRunWorkflowClient(server.ingressUrl);

  await client.submit('run_endpoint_restart');
  await client.started('run_endpoint_restart');
  await endpoint.close();
  // Long enough for a liveness tick (every 2 s) to come due while nobody serves the workflow.
  await new Promise((r) => setTimeout(r, 2_500));
  endpoint = await startWorkflowEndpoint({ port: endpointPort, services: [createRunWorkflow(sandbox.activities)], logger: silent });
  await client.terminal('run_endpoint_restart', { status: 'success', output: 'resumed' });
  const result = await client.attach('run_endpoint_restart');

  assert.deepEqual(result, { ending: { status: 'success', output: 'resumed' }, finalized: true });
  assert.equal(sandbox.finalizeCalls.length, 1);
  assert.deepEqual(sandbox.teardowns, ['sbx_run_endpoint_restart']);
});
