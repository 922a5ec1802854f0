// The execution phase's liveness under faults of the platform itself: silence the platform caused
// (a stalled or unreachable database) is not the sandbox's silence, and a sandbox whose sidecar
// is delivering the run's end is alive although its heartbeats have stopped.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { startRestateServer, type RestateServer } from '../../restate/launcher.ts';
import { freePort } from '../../lib/free-port.ts';
import { registerDeployment } from '../../restate/admin.ts';
import { startWorkflowEndpoint, type WorkflowEndpoint } from '../../workflows/endpoint.ts';
import { createRunWorkflow } from '../../workflows/run.ts';
import { createRunWorkflowClient, type RunWorkflowClient } from '../../workflows/run-client.ts';
import type { RunActivities, SandboxRef } from '../../workflows/run-types.ts';

// Heartbeat 1 s: a liveness tick every 2 s, silence allowed up to 3 s.
const TIMINGS = { bootSeconds: 5, heartbeatSeconds: 1, timeoutSeconds: 60 };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One run's outside world: a sandbox that heartbeats every second, and a database that records
 * those heartbeats unless it is stalled (queries wait) or down (queries fail).
 */
class World {
  readonly runId = `run_${randomUUID()}`;
  readonly sandbox: SandboxRef = { sandboxId: `sbx_${this.runId}`, ...TIMINGS };
  state: boolean | 'ending' = true;
  heartbeating = true;
  stalled = false;
  down = false;
  lastEventAt = Date.now();
  private readonly beat = setInterval(() => {
    if (this.heartbeating && !this.stalled && !this.down) this.lastEventAt = Date.now();
  }, 1000);

  async query<T>(answer: () => T): Promise<T> {
    while (this.stalled) await sleep(50);
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    return answer();
  }

  close(): void {
    clearInterval(this.beat);
  }
}

describe('run workflow liveness under platform faults', { concurrency: true }, () => {
  const worlds = new Map<string, World>();
  const worldOf = (runId: string) => worlds.get(runId)!;
  const activities: RunActivities = {
    boot: async (runId) => worldOf(runId).sandbox,
    lastHeartbeatAt: (runId) => worldOf(runId).query(() => worldOf(runId).lastEventAt),
    sandboxAlive: (runId) => worldOf(runId).query(() => worldOf(runId).state),
    bootCheck: (runId) => worldOf(runId).query(() => {
      const { state } = worldOf(runId);
      return { run: 'pending' as const, sandbox: state === true ? 'running' as const : state === 'ending' ? 'ending' as const : 'gone' as const };
    }),
    finalize: async () => ({ finalized: true }),
    teardown: async () => undefined,
    expireApproval: async () => false,
  };
  let baseDir: string;
  let server: RestateServer;
  let endpoint: WorkflowEndpoint;
  let client: RunWorkflowClient;

  before(async () => {
    baseDir = mkdtempSync(join(tmpdir(), 'restate-liveness-'));
    const [ingressPort, adminPort, nodePort, endpointPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    server = await startRestateServer({ baseDir, ingressPort, adminPort, nodePort, logFile: join(baseDir, 'restate.log') });
    const workflow = createRunWorkflow(activities, {
      retry: { liveness: { maxRetryAttempts: 2, initialRetryInterval: 50, maxRetryInterval: 100 } },
    });
    endpoint = await startWorkflowEndpoint({
      port: endpointPort,
      services: [workflow],
      logger: (meta: { level: string }, message?: unknown, ...rest: unknown[]) => {
        if (meta.level === 'error') console.error(message, ...rest);
      },
    });
    await registerDeployment(server.adminUrl, endpoint.url);
    client = createRunWorkflowClient(server.ingressUrl);
  });

  after(async () => {
    for (const world of worlds.values()) world.close();
    await endpoint?.close();
    await server?.stop();
    if (baseDir) rmSync(baseDir, { recursive: true, force: true });
  });

  async function aStartedRun(): Promise<World> {
    const world = new World();
    worlds.set(world.runId, world);
    await client.submit(world.runId);
    await client.started(world.runId);
    return world;
  }

  test('a sidecar still delivering the run\'s end keeps the run alive after its heartbeats stop', async () => {
    const world = await aStartedRun();
    await sleep(1500);
    // the agent handed over its end and exited; the sidecar cannot get it through yet
    world.heartbeating = false;
    world.state = 'ending';
    await sleep(8000);
    assert.equal(await client.output(world.runId), null, 'still waiting for the end');
    await client.terminal(world.runId, { status: 'success', output: { done: true } });

    const { ending } = await client.attach(world.runId);

    assert.deepEqual(ending, { status: 'success', output: { done: true } });
  });

  test('a sidecar that gives up delivering the end leaves the run failed sandbox_lost', async () => {
    const world = await aStartedRun();
    world.heartbeating = false;
    world.state = 'ending';
    await sleep(5000);
    world.state = false;

    const { ending } = await client.attach(world.runId);

    assert.equal(ending.status === 'failed' && ending.error.code, 'sandbox_lost');
  });

  test('a database stalled for 8 s does not fail a heartbeating run', async () => {
    const world = await aStartedRun();
    await sleep(1500);
    world.stalled = true;
    await sleep(8000);
    world.stalled = false;
    await sleep(5000);
    assert.equal(await client.output(world.runId), null, 'not ended by the stall');
    await client.terminal(world.runId, { status: 'success', output: 1 });

    const { ending } = await client.attach(world.runId);

    assert.deepEqual(ending, { status: 'success', output: 1 });
  });

  test('a database down for longer than the liveness step retries makes the run wait, not fail', async () => {
    const world = await aStartedRun();
    await sleep(1500);
    world.down = true;
    await sleep(8000);
    world.down = false;
    await sleep(5000);
    assert.equal(await client.output(world.runId), null, 'not ended by the outage');
    await client.terminal(world.runId, { status: 'success', output: 2 });

    const { ending } = await client.attach(world.runId);

    assert.deepEqual(ending, { status: 'success', output: 2 });
  });

  test('a sandbox silent while the database answers still fails heartbeat_lost', async () => {
    const world = await aStartedRun();
    await sleep(1500);
    world.heartbeating = false;

    const { ending } = await client.attach(world.runId);

    assert.equal(ending.status === 'failed' && ending.error.code, 'heartbeat_lost');
  });
});
