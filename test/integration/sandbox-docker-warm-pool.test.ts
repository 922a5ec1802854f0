// The docker backend's warm pool at the adapter: runs claim pooled pairs (confined as a cold pair,
// each with its own workspace and CPU ceiling) and the pool refills to its size; a run of another
// memory ceiling takes the cold path; a pooled pair killed or touched while waiting is not handed
// out; close() removes the waiting pairs; after a worker killed with SIGKILL, the next adapter on
// its work folder adopts the claimed pooled pair (its run read from the claim, its relays
// re-opened, the run completing) and removes the pooled pairs no run claimed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createDockerAdapter, LABEL_POOLED, LABEL_RUN, LABEL_SANDBOX, removeDockerSandboxes, type DockerSandboxAdapter,
} from '../../activities/sandbox/docker-adapter.ts';
import { CLAIM_FILE } from '../../activities/sandbox/docker-adoption.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { aDockerWorld, type DockerWorld } from './sandbox-docker-harness.ts';
import { AGENT_IMAGE, DOCKER_REQUIRED, dockerForTests, SIDECAR_IMAGE } from '../support/docker.ts';
import { REPO, waitUntil, type EventReceiver } from './sidecar-run-harness.ts';
import { aSandboxSpec } from './sandbox-process-harness.ts';

const unavailable = await dockerForTests();
const POOL_MEMORY_MB = 256;

describe('the docker warm pool', { skip: unavailable ?? false }, () => {
  let world: DockerWorld;
  let model: FakeModel;
  let receiver: EventReceiver;
  let adapter: DockerSandboxAdapter;
  let workDir: string;
  let secret: string;
  const eventsOf = (runId: string) => world.eventsOf(runId);
  const outputOf = async (runId: string) => {
    await waitUntil(() => eventsOf(runId).some((e) => e.type === 'completed'), 60_000);
    const output = eventsOf(runId).find((e) => e.type === 'output');
    return output?.type === 'output' ? output.data.output : undefined;
  };
  const aRun = (runId: string, input: { summary: string; count: number }, memoryMb = POOL_MEMORY_MB) =>
    aSandboxSpec({ runId, eventsBaseUrl: receiver.url, secret, modelUrl: model.url, memoryMb, input });
  /** containers the engine holds for a sandbox (this file's only: sandbox ids are random) */
  const partsOf = async (a: DockerSandboxAdapter, sandboxId: string) =>
    a.docker.listContainers({ all: true, filters: { label: [`${LABEL_SANDBOX}=${sandboxId}`] } });

  before(async () => {
    world = await aDockerWorld('sbx-docker-pool-', { warmPool: 2, poolMemoryMb: POOL_MEMORY_MB, poolCpus: 1 });
    ({ model, receiver, adapter, workDir, secret } = world);
  });
  after(() => world?.close());

  test('two runs claim pooled pairs, confined as cold ones, each with its own workspace and CPU ceiling; the pool refills to its size', async () => {
    await adapter.whenWarm();
    const waiting = adapter.warmSandboxes();
    assert.equal(waiting.length, 2);
    for (const id of waiting) assert.equal(await adapter.state(id), 'gone', 'a waiting pair is no run\'s sandbox');
    assert.deepEqual(adapter.sandboxes(), []);

    const first = aRun('run_pool_a', { summary: 'pooled pears', count: 5 });
    first.limits.cpus = 2;
    const second = aRun('run_pool_b', { summary: 'pooled plums', count: 9 });
    second.limits.cpus = 1;
    const [a, b] = await Promise.all([adapter.start(first), adapter.start(second)]);
    assert.deepEqual([a.sandboxId, b.sandboxId].sort(), [...waiting].sort());
    assert.deepEqual(adapter.warmSandboxes(), []);
    try {
      for (const [{ sandboxId }, runId, cpus] of [[a, 'run_pool_a', 2], [b, 'run_pool_b', 1]] as const) {
        const names = adapter.containers(sandboxId);
        const agent = await adapter.docker.getContainer(names.agent).inspect();
        const sidecar = await adapter.docker.getContainer(names.sidecar).inspect();
        for (const c of [agent, sidecar]) {
          assert.equal(c.Config.User, '10001:10001');
          assert.equal(c.HostConfig.ReadonlyRootfs, true);
          assert.deepEqual(c.HostConfig.CapDrop, ['ALL']);
          assert.ok(c.HostConfig.SecurityOpt?.includes('no-new-privileges'));
          assert.equal(c.Config.Labels[LABEL_POOLED], 'true');
          assert.equal(c.Config.Labels[LABEL_RUN], undefined);
        }
        assert.equal(agent.HostConfig.Memory, POOL_MEMORY_MB * 1024 * 1024);
        assert.equal(agent.HostConfig.NanoCpus, cpus * 1e9, 'the run\'s CPU ceiling, set at claim');
        assert.equal(agent.HostConfig.PidsLimit, 128);
        assert.deepEqual(Object.keys(agent.NetworkSettings.Networks), [names.network]);
        assert.equal((await adapter.docker.getNetwork(names.network).inspect()).Internal, true);
        assert.deepEqual(JSON.parse(readFileSync(join(workDir, sandboxId, CLAIM_FILE), 'utf8')).runId, runId);
        // a pooled run is quick: its agent may already have handed its end to the sidecar
        assert.ok(['running', 'ending'].includes(await adapter.state(sandboxId)));
      }
      assert.deepEqual(adapter.sandboxes().sort((x, y) => x.runId.localeCompare(y.runId)), [
        { sandboxId: a.sandboxId, runId: 'run_pool_a' }, { sandboxId: b.sandboxId, runId: 'run_pool_b' },
      ]);
      assert.deepEqual(await outputOf('run_pool_a'), { summary: 'pooled pears', count: 5 });
      assert.deepEqual(await outputOf('run_pool_b'), { summary: 'pooled plums', count: 9 });
    } finally {
      await Promise.all([adapter.stop(a.sandboxId), adapter.stop(b.sandboxId)]);
    }
    for (const { sandboxId } of [a, b]) assert.deepEqual(await partsOf(adapter, sandboxId), []);
    await adapter.whenWarm();
    const refilled = adapter.warmSandboxes();
    assert.equal(refilled.length, 2);
    assert.ok(!refilled.includes(a.sandboxId) && !refilled.includes(b.sandboxId));
    for (const id of refilled) assert.equal((await partsOf(adapter, id)).filter((c) => c.State === 'running').length, 2);
  });

  test('a run with another memory ceiling takes the cold path and completes; the waiting pairs stay', async () => {
    await adapter.whenWarm();
    const waiting = adapter.warmSandboxes();
    const { sandboxId } = await adapter.start(aRun('run_pool_cold', { summary: 'cold cherries', count: 4 }, 512));
    try {
      assert.ok(!waiting.includes(sandboxId));
      assert.deepEqual(adapter.warmSandboxes(), waiting);
      const agent = await adapter.docker.getContainer(adapter.containers(sandboxId).agent).inspect();
      assert.equal(agent.Config.Labels[LABEL_RUN], 'run_pool_cold');
      assert.equal(agent.HostConfig.Memory, 512 * 1024 * 1024);
      assert.deepEqual(await outputOf('run_pool_cold'), { summary: 'cold cherries', count: 4 });
    } finally {
      await adapter.stop(sandboxId);
    }
  });

  test('pooled pairs killed, or touched, while waiting are not handed out; they are removed and replaced', async () => {
    await adapter.whenWarm();
    const killed = adapter.warmSandboxes();
    // one pair's agent killed; the other's workspace no longer empty
    await adapter.docker.getContainer(adapter.containers(killed[0]).agent).kill();
    writeFileSync(join(workDir, killed[1], 'workspace', 'prompt.md'), 'left by someone else');
    const { sandboxId } = await adapter.start(aRun('run_pool_after_kill', { summary: 'fresh figs', count: 2 }));
    try {
      assert.ok(!killed.includes(sandboxId), `the run got ${sandboxId}, a killed pair`);
      assert.deepEqual(await outputOf('run_pool_after_kill'), { summary: 'fresh figs', count: 2 });
    } finally {
      await adapter.stop(sandboxId);
    }
    for (let i = 0; i < 300 && (await Promise.all(killed.map((id) => partsOf(adapter, id)))).some((parts) => parts.length > 0); i++) await new Promise((r) => setTimeout(r, 100));
    for (const id of killed) assert.deepEqual(await partsOf(adapter, id), []);
    for (const id of killed) assert.equal(existsSync(join(workDir, id)), false);
    await adapter.whenWarm();
    assert.ok(adapter.warmSandboxes().every((id) => !killed.includes(id)));
  });

  test('after a worker killed with SIGKILL, the next adapter adopts its claimed pooled pair, whose run completes, and removes the unclaimed ones; close() removes its own waiting pairs', async () => {
    // each model turn takes a while: the run is still going when its worker dies
    const slow = await startFakeModel({ latencyMs: 1500 });
    const dir = await mkdtemp(join(tmpdir(), 'sbx-docker-pool-crash-'));
    const host = spawn(process.execPath, ['--import', 'tsx', 'test/integration/sandbox-docker-pool-host.ts', dir, receiver.url, secret, slow.url], {
      cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    host.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    let next: DockerSandboxAdapter | undefined;
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        host.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          if (out.includes('\n')) resolve(out.split('\n')[0]);
        });
        host.on('exit', (code) => reject(new Error(`the host exited (${code}): ${stderr}`)));
      });
      const { claimed, pooled, waiting } = JSON.parse(line) as { claimed: string; pooled: string[]; waiting: string[] };
      assert.ok(pooled.includes(claimed), 'the host\'s run got a pooled pair');
      assert.equal(waiting.length, 1);
      host.kill('SIGKILL');
      await new Promise((resolve) => host.once('exit', resolve));
      // the killed worker left both: the claimed pair and the one still waiting
      for (const id of [claimed, ...waiting]) assert.equal((await partsOf(adapter, id)).filter((c) => c.State === 'running').length, 2);

      next = await createDockerAdapter({ workDir: dir, sidecarImage: SIDECAR_IMAGE, agentImage: AGENT_IMAGE, warmPool: 1, poolMemoryMb: POOL_MEMORY_MB });
      assert.deepEqual(next.sandboxes(), [{ sandboxId: claimed, runId: 'run_docker_pool_crash' }]);
      for (const id of waiting) {
        assert.deepEqual(await partsOf(next, id), []);
        assert.equal(existsSync(join(dir, id)), false);
      }
      assert.equal(await next.state(claimed), 'running');
      // its events and model calls go through the relays its claim names, re-opened by this adapter
      assert.deepEqual(await outputOf('run_docker_pool_crash'), { summary: 'crash pears', count: 7 });

      await next.whenWarm();
      const own = next.warmSandboxes();
      assert.equal(own.length, 1);
      await next.close();
      assert.deepEqual(await partsOf(next, own[0]), []);
      assert.equal(existsSync(join(dir, own[0])), false);
      // the run's pair is not the pool's: it stays for the next worker (or the reaper)
      assert.equal((await partsOf(next, claimed)).length, 2);
    } finally {
      host.kill('SIGKILL');
      await next?.close();
      await removeDockerSandboxes({ workDir: dir });
      await rm(dir, { recursive: true, force: true });
      await slow.close();
    }
  });
});

test('the docker warm pool is tested here when CI requires it', () => {
  if (DOCKER_REQUIRED) assert.equal(unavailable, null);
  else if (unavailable) assert.match(unavailable, /docker/);
});
