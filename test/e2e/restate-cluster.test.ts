// Restate as a three-node cluster (the engine's own clustering: replicated metadata server,
// replicated log, replication 2), three restate-server processes on loopback, without docker. The
// platform's run workflow is served to it and the platform's clients are given every node's
// address (the comma-separated RESTATE_INGRESS_URL / RESTATE_ADMIN_URL). One node is killed
// (SIGKILL, the node the clients talk to first) while runs are in flight: every run ends, each
// recorded once, and a run launched afterwards succeeds through the two nodes left.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../lib/free-port.ts';
import { restateFetch } from '../../lib/restate-failover.ts';
import { queryInvocations, registerDeployment } from '../../restate/admin.ts';
import { startRestateServer, type RestateServer } from '../../restate/launcher.ts';
import { startWorkflowEndpoint, type WorkflowEndpoint } from '../../workflows/endpoint.ts';
import { createRunWorkflow } from '../../workflows/run.ts';
import { createRunWorkflowClient, type RunWorkflowClient } from '../../workflows/run-client.ts';
import { aSandboxWorld, quietLogger } from '../support/run-workflow-world.ts';

const NODES = 3;
const RUNS = 12;

describe('a three-node Restate cluster with replication 2', () => {
  const baseDir = mkdtempSync(join(tmpdir(), 'restate-cluster-'));
  const world = aSandboxWorld();
  const nodes: Array<{ server: RestateServer; nodePort: number; name: string }> = [];
  let endpoint: WorkflowEndpoint;
  let client: RunWorkflowClient;
  let ingressList = '';
  let adminList = '';
  const logOf = (name: string) => join(baseDir, `${name}.log`);

  before(async () => {
    const ports = await Promise.all(Array.from({ length: NODES }, async () => ({ ingressPort: await freePort(), adminPort: await freePort(), nodePort: await freePort() })));
    const metadataAddresses = ports.map((p) => `http://127.0.0.1:${p.nodePort}`);
    // all at once: the provisioning node waits for the others before the log is writable
    const started = await Promise.allSettled(ports.map((p, i) => startRestateServer({
      ...p, baseDir: join(baseDir, `n${i + 1}`), nodeName: `n${i + 1}`, logFile: logOf(`n${i + 1}`), startTimeoutMs: 60_000,
      cluster: { name: 'platform-test', metadataAddresses, autoProvision: i === 0, replication: 2, partitions: 8 },
    })));
    started.forEach((s, i) => { if (s.status === 'fulfilled') nodes.push({ server: s.value, nodePort: ports[i].nodePort, name: `n${i + 1}` }); });
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    ingressList = nodes.map((n) => n.server.ingressUrl).join(',');
    adminList = nodes.map((n) => n.server.adminUrl).join(',');
    endpoint = await startWorkflowEndpoint({ port: await freePort(), services: [createRunWorkflow(world.activities)], logger: quietLogger });
    await registerDeployment(adminList, endpoint.url);
    client = createRunWorkflowClient(ingressList);
  });

  after(async () => {
    for (const node of nodes) await node.server.stop().catch(() => undefined);
    await endpoint?.close();
    rmSync(baseDir, { recursive: true, force: true });
  });

  test('the cluster forms: three nodes, every one serving the same deployment', async () => {
    for (const node of nodes) {
      // the registration went through one node; the others learn it from the replicated metadata,
      // which may take a moment on a busy machine
      let deployments: Array<{ uri?: string }> = [];
      for (let i = 0; i < 100; i++) {
        const res = await fetch(`${node.server.adminUrl}/deployments`);
        assert.equal(res.status, 200);
        deployments = ((await res.json()) as { deployments: Array<{ uri?: string }> }).deployments;
        if (deployments.length > 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.deepEqual(deployments.map((d) => d.uri?.replace(/\/+$/, '')), [endpoint.url.replace(/\/+$/, '')], `${node.name} lists the deployment registered through the list`);
    }
    // the cluster's nodes, as the engine's own table lists them
    const rows = await queryInvocations<{ name: string }>(adminList, 'SELECT name FROM sys_node ORDER BY name').catch(() => null);
    if (rows) assert.deepEqual(rows.map((r) => r.name), ['n1', 'n2', 'n3']);
  });

  test('killing the node the clients talk to first while runs are in flight: every run ends once, and the next one succeeds', async (t) => {
    const runs = Array.from({ length: RUNS }, () => world.aRun({ timings: { timeoutSeconds: 120, bootSeconds: 60 } }));
    for (const { runId } of runs) await client.submit(runId);
    for (const { runId } of runs) await client.started(runId);
    // half of them end before the node goes, half after
    for (const { runId } of runs.slice(0, RUNS / 2)) await client.terminal(runId, { status: 'success', output: runId });

    const victim = nodes[0];
    process.kill(victim.server.pid, 'SIGKILL');
    const killedAt = performance.now();
    // the killed node's ingress no longer answers: the clients move on to the next address
    assert.equal(await fetch(`${victim.server.ingressUrl}/restate/health`).then(() => 'answered', () => 'refused'), 'refused');

    for (const { runId } of runs.slice(RUNS / 2)) await client.terminal(runId, { status: 'success', output: runId });
    const results = await Promise.all(runs.map(({ runId }) => client.attach(runId)));
    t.diagnostic(`all ${RUNS} runs ended ${Math.round(performance.now() - killedAt)} ms after the kill`);

    results.forEach((result, i) => assert.deepEqual(result.ending, { status: 'success', output: runs[i].runId }));
    t.diagnostic(`boots per run: ${runs.map((r) => r.record.bootAttempts).join(' ')}; finalize calls: ${runs.map((r) => r.record.finalizeCalls.length).join(' ')}; teardowns: ${runs.map((r) => r.record.teardowns.length).join(' ')}`);
    for (const { record, sandbox } of runs) {
      // an activity the killed node had in flight (its result not yet in the replicated log) runs
      // again on the node that takes over: at least once, as across any engine failure
      assert.ok(record.bootAttempts >= 1, 'booted');
      // the ending is recorded by the first finalize call; a repeat (an activity retried across the
      // node's loss) would be told it was already recorded, so it must carry the same ending
      assert.ok(record.finalizeCalls.length >= 1);
      for (const call of record.finalizeCalls) assert.deepEqual(call, record.finalizeCalls[0]);
      // teardown is idempotent (the platform's removes what is there): it may be repeated the same way
      assert.ok(record.teardowns.length >= 1, 'torn down');
      for (const torn of record.teardowns) assert.equal(torn, sandbox.sandboxId);
    }

    // launched afterwards, through the two nodes left
    const next = world.aRun();
    await client.submit(next.runId);
    await client.started(next.runId);
    await client.terminal(next.runId, { status: 'success', output: 'after' });
    assert.deepEqual((await client.attach(next.runId)).ending, { status: 'success', output: 'after' });
    assert.ok((await restateFetch(adminList, '/health')).ok, 'the admin API answers through the list');
    assert.doesNotMatch(readFileSync(logOf('n2'), 'utf8'), /panicked/);
  });
});
