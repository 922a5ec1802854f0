// RUN_ADAPTER=docker at the adapter: a run in its container pair, the pair's confinement, what the
// agent's network reaches (its sidecar, nothing else), a run whose platform and model are at an
// internal address of the host (relayed), a run over its memory ceiling, the boot check of the
// images, a pair adopted by the next adapter, and only by an adapter of its own work folder (the
// engine is shared), the removal of a work folder's sandboxes. Through the whole platform, a worker
// killed mid-run: test/e2e/run-docker-worker-restart.test.ts; in the compose deployment:
// test/e2e/compose-deployment.test.ts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import DockerClient from 'dockerode';
import type Docker from 'dockerode';
import { DEFAULT_AGENT_IMAGE, DEFAULT_SIDECAR_IMAGE, ensureSandboxImages } from '../../activities/sandbox/docker-images.ts';
import { PROTOCOL_LABEL, SANDBOX_PROTOCOL_VERSION } from '../../lib/sandbox-protocol.ts';
import {
  createDockerAdapter, EGRESS_NETWORK, LABEL_RUN, LABEL_SANDBOX, MEMORY_EXCEEDED_CODE, removeDockerSandboxes, type DockerSandboxAdapter,
} from '../../activities/sandbox/docker-adapter.ts';
import { LABEL_RELAYS, names as sandboxNames, runNetworkSpec } from '../../activities/sandbox/docker-specs.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { aDockerWorld, execNode, probeScript, type DockerWorld } from './sandbox-docker-harness.ts';
import { AGENT_IMAGE, DOCKER_REQUIRED, dockerForTests, SIDECAR_IMAGE } from '../support/docker.ts';
import { REPO, waitUntil, type EventReceiver } from './sidecar-run-harness.ts';
import { aSandboxSpec, MODEL_KEY } from './sandbox-process-harness.ts';

const unavailable = await dockerForTests();

function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((a) => a && a.family === 'IPv4' && !a.internal)
    .map((a) => a!.address);
}

describe('a run on the docker backend', { skip: unavailable ?? false }, () => {
  let world: DockerWorld;
  let model: FakeModel;
  let receiver: EventReceiver;
  let adapter: DockerSandboxAdapter;
  let hostPort: number;
  let secret: string;
  const eventsOf = (runId: string) => world.eventsOf(runId);

  before(async () => {
    world = await aDockerWorld('sbx-docker-');
    ({ model, receiver, adapter, hostPort, secret } = world);
  });
  after(() => world?.close());

  test('the pair is confined, the run completes through the relays, stop removes containers, network and firewall rules', async () => {
    const spec = aSandboxSpec({ runId: 'run_docker_one', eventsBaseUrl: receiver.url, secret, modelUrl: model.url, memoryMb: 256 });
    spec.limits.cpus = 1;
    const { sandboxId } = await adapter.start(spec);
    const names = adapter.containers(sandboxId);
    assert.equal(await adapter.state(sandboxId), 'running');
    const agent = await adapter.docker.getContainer(names.agent).inspect();
    const sidecar = await adapter.docker.getContainer(names.sidecar).inspect();
    for (const c of [agent, sidecar]) {
      assert.equal(c.Config.User, '10001:10001');
      assert.equal(c.HostConfig.ReadonlyRootfs, true);
      assert.deepEqual(c.HostConfig.CapDrop, ['ALL']);
      assert.ok(c.HostConfig.SecurityOpt?.includes('no-new-privileges'));
      assert.equal(c.Config.Labels[LABEL_SANDBOX], sandboxId);
      assert.equal(c.Config.Labels[LABEL_RUN], 'run_docker_one');
      for (const value of [...(c.Config.Env ?? []), ...(c.Config.Cmd ?? [])]) {
        assert.ok(!value.includes('whsec_') && !value.includes(MODEL_KEY), value);
      }
    }
    assert.equal(agent.HostConfig.Memory, 256 * 1024 * 1024);
    assert.equal(agent.HostConfig.NanoCpus, 1e9);
    assert.equal(agent.HostConfig.PidsLimit, 128);
    assert.deepEqual(Object.keys(agent.NetworkSettings.Networks), [names.network]);
    assert.deepEqual(Object.keys(sidecar.NetworkSettings.Networks).sort(), [EGRESS_NETWORK, names.network].sort());
    const network = await adapter.docker.getNetwork(names.network).inspect();
    assert.equal(network.Internal, true);
    assert.equal(network.Labels?.[LABEL_SANDBOX], sandboxId);

    await waitUntil(() => eventsOf('run_docker_one').some((e) => e.type === 'completed'), 30_000);
    const output = eventsOf('run_docker_one').find((e) => e.type === 'output');
    assert.deepEqual(output?.type === 'output' && output.data.output, { summary: 'three apples', count: 3 });
    for (const r of model.requests) assert.equal(r.authorization, `Bearer ${MODEL_KEY}`);

    const bridge = `apr${sandboxId.slice(4, 16)}`;
    assert.match(execFileSync('iptables', ['-S', 'INPUT'], { encoding: 'utf8' }), new RegExp(bridge));
    await adapter.stop(sandboxId);
    await adapter.stop(sandboxId);
    assert.equal(await adapter.state(sandboxId), 'gone');
    for (const name of [names.agent, names.sidecar]) await assert.rejects(adapter.docker.getContainer(name).inspect(), /404|no such container/i);
    await assert.rejects(adapter.docker.getNetwork(names.network).inspect(), /404|not found/i);
    assert.doesNotMatch(execFileSync('iptables', ['-S', 'INPUT'], { encoding: 'utf8' }), new RegExp(bridge));
  });

  test("an agent reaches its sidecar only: not the host's ports, not another run's network, not outside; the sidecar reaches the relays only", async () => {
    const hang = (runId: string) => {
      const spec = aSandboxSpec({ runId, eventsBaseUrl: receiver.url, secret, modelUrl: model.url, memoryMb: 256 });
      spec.sidecar.model = { ...spec.sidecar.model!, model: 'fake-hang' };
      return spec;
    };
    const [a, b] = await Promise.all([adapter.start(hang('run_docker_net_a')), adapter.start(hang('run_docker_net_b'))]);
    try {
      const netOf = async (sandboxId: string) => {
        const names = adapter.containers(sandboxId);
        const sidecar = await adapter.docker.getContainer(names.sidecar).inspect();
        const network = await adapter.docker.getNetwork(names.network).inspect();
        const nets = sidecar.NetworkSettings.Networks as Record<string, { IPAddress: string }>;
        return { names, runIp: nets[names.network].IPAddress, egressIp: nets[EGRESS_NETWORK].IPAddress, gateway: network.IPAM?.Config?.[0]?.Gateway as string };
      };
      const [na, nb] = await Promise.all([netOf(a.sandboxId), netOf(b.sandboxId)]);
      const sidecarPort = Number(new URL(await waitForSidecarPort(adapter.docker, na.names.sidecar)).port);
      // the host answers on these addresses itself: a refusal below is the sandbox's, not a dead port
      const hostTargets = [...hostAddresses(), adapter.gateway, na.gateway].map((ip) => `${ip}:${hostPort}`);
      const relays = JSON.parse((await adapter.docker.getContainer(na.names.sidecar).inspect()).Config.Labels['org.agent-platform.relays']) as Array<{ port: number }>;
      const relayPort = relays[0].port;

      const fromAgent = (await execNode(adapter.docker, na.names.agent, probeScript([
        `${na.runIp}:${sidecarPort}`, ...hostTargets, `${nb.runIp}:${sidecarPort}`, `${nb.egressIp}:${sidecarPort}`, `${adapter.gateway}:${relayPort}`, '192.0.2.1:80',
      ]))) as Record<string, string>;
      assert.equal(fromAgent[`${na.runIp}:${sidecarPort}`], 'connected', JSON.stringify(fromAgent));
      for (const [target, result] of Object.entries(fromAgent)) {
        if (target !== `${na.runIp}:${sidecarPort}`) assert.notEqual(result, 'connected', `the agent reached ${target}: ${JSON.stringify(fromAgent)}`);
      }

      const fromSidecar = (await execNode(adapter.docker, na.names.sidecar, probeScript([
        ...hostTargets, `${nb.egressIp}:${sidecarPort}`, `${adapter.gateway}:${relayPort}`,
      ]))) as Record<string, string>;
      assert.equal(fromSidecar[`${adapter.gateway}:${relayPort}`], 'connected', JSON.stringify(fromSidecar));
      for (const [target, result] of Object.entries(fromSidecar)) {
        if (target !== `${adapter.gateway}:${relayPort}`) assert.notEqual(result, 'connected', `the sidecar reached ${target}: ${JSON.stringify(fromSidecar)}`);
      }
    } finally {
      await Promise.all([adapter.stop(a.sandboxId), adapter.stop(b.sandboxId)]);
    }
  });

  test("a pair outlives its adapter: the next re-opens its relays before it answers, keeps other processes' relays open, and judges the pair from the engine and the sidecar's state folder", async () => {
    // each model turn takes a while: the run is still going when its first adapter goes away
    const slow = await startFakeModel({ latencyMs: 1500 });
    const dir = await mkdtemp(join(tmpdir(), 'sbx-docker-adopt-'));
    const first = await createDockerAdapter({ workDir: dir, sidecarImage: SIDECAR_IMAGE, agentImage: AGENT_IMAGE });
    let second: DockerSandboxAdapter | undefined;
    const spec = aSandboxSpec({ runId: 'run_docker_adopt', eventsBaseUrl: receiver.url, secret, modelUrl: slow.url, memoryMb: 256 });
    try {
      const { sandboxId } = await first.start(spec);
      const names = first.containers(sandboxId);
      const relayed = JSON.parse((await first.docker.getContainer(names.sidecar).inspect()).Config.Labels[LABEL_RELAYS]) as Array<{ target: string; port: number }>;
      await waitUntil(() => eventsOf('run_docker_adopt').some((e) => e.type === 'started'), 30_000);
      assert.equal(await first.state(sandboxId), 'running');
      // the ports the suite's adapter (another live worker, as far as these two know) has open
      const others = openedEgressPorts().filter((p) => !relayed.some((r) => r.port === p));
      assert.ok(others.length > 0, 'the suite adapter has relays open');
      // the worker goes away (its relays and their firewall openings with it); the pair stays
      await first.close();
      for (const r of relayed) assert.equal(await connects(first.gateway, r.port), false, `relay ${r.target} closed`);

      second = await createDockerAdapter({ workDir: dir, sidecarImage: SIDECAR_IMAGE, agentImage: AGENT_IMAGE });
      assert.ok(second.sandboxes().some((s) => s.sandboxId === sandboxId && s.runId === 'run_docker_adopt'));
      // the sidecar's relays listen, and are let in, again on the ports its URLs name
      for (const r of relayed) {
        assert.equal(await connects(second.gateway, r.port), true, `relay ${r.target} on ${r.port}`);
        assert.ok(openedEgressPorts().includes(r.port), `port ${r.port} open to the egress network`);
      }
      for (const p of others) assert.ok(openedEgressPorts().includes(p), `the live relay port ${p} stayed open`);
      assert.equal(await second.state(sandboxId), 'running');

      await waitUntil(() => eventsOf('run_docker_adopt').some((e) => e.type === 'completed'), 60_000);
      assert.equal((await second.docker.getContainer(names.agent).wait()).StatusCode, 0);
      // the agent has exited and its sidecar holds the end: a fact of its state folder, read by a worker that never saw its output
      assert.ok(existsSync(join(dir, sandboxId, 'state', 'end-held')));
      assert.equal(await second.state(sandboxId), 'ending');
      // a sidecar that exited is gone, whatever it held
      await second.docker.getContainer(names.sidecar).kill();
      assert.equal(await second.state(sandboxId), 'gone');
    } finally {
      const owner = second ?? first;
      for (const s of owner.sandboxes()) await owner.stop(s.sandboxId);
      await second?.close();
      await first.close();
      await slow.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('a platform and a model at an internal address of the host (a docker network of their own) are reached through relays', async () => {
    // the host's address on a network made here: a container of the egress network cannot reach it itself
    const net = `ap-test-internal-${randomBytes(3).toString('hex')}`;
    await adapter.docker.createNetwork({ Name: net, Driver: 'bridge', Internal: true });
    const hostAddress = ((await adapter.docker.getNetwork(net).inspect()) as { IPAM: { Config: Array<{ Gateway: string }> } }).IPAM.Config[0].Gateway;
    const forwards: Server[] = [];
    const forward = async (target: string): Promise<string> => {
      const server = createServer((inbound) => {
        const outbound = connect({ host: '127.0.0.1', port: Number(new URL(target).port) });
        inbound.pipe(outbound).pipe(inbound);
        inbound.on('error', () => outbound.destroy());
        outbound.on('error', () => inbound.destroy());
      });
      await new Promise<void>((resolve) => server.listen(0, hostAddress, resolve));
      forwards.push(server);
      const url = new URL(target);
      url.host = `${hostAddress}:${(server.address() as { port: number }).port}`;
      return url.toString().replace(/\/$/, '');
    };
    try {
      const spec = aSandboxSpec({
        runId: 'run_docker_internal', eventsBaseUrl: await forward(receiver.url), secret, modelUrl: await forward(model.url), memoryMb: 256,
      });
      const { sandboxId } = await adapter.start(spec);
      try {
        const relayed = JSON.parse((await adapter.docker.getContainer(adapter.containers(sandboxId).sidecar).inspect()).Config.Labels[LABEL_RELAYS]) as Array<{ target: string }>;
        for (const url of [spec.sidecar.eventsUrl, spec.sidecar.model!.baseUrl]) assert.ok(relayed.some((r) => r.target === new URL(url).host), `${url} relayed`);
        await waitUntil(() => eventsOf('run_docker_internal').some((e) => e.type === 'completed'), 30_000);
        const output = eventsOf('run_docker_internal').find((e) => e.type === 'output');
        assert.deepEqual(output?.type === 'output' && output.data.output, { summary: 'three apples', count: 3 });
      } finally {
        await adapter.stop(sandboxId);
      }
    } finally {
      for (const server of forwards) server.close();
      await adapter.docker.getNetwork(net).remove();
    }
  });

  test("an adapter adopts and removes only its own work folder's sandboxes; removeDockerSandboxes takes a gone worker's away", async () => {
    const mine = await mkdtemp(join(tmpdir(), 'sbx-docker-mine-'));
    const others = await mkdtemp(join(tmpdir(), 'sbx-docker-others-'));
    const first = await createDockerAdapter({ workDir: mine, sidecarImage: SIDECAR_IMAGE, agentImage: AGENT_IMAGE });
    const spec = aSandboxSpec({ runId: 'run_docker_owned', eventsBaseUrl: receiver.url, secret, modelUrl: model.url, memoryMb: 256 });
    spec.sidecar.model = { ...spec.sidecar.model!, model: 'fake-hang' };
    const { sandboxId } = await first.start(spec);
    const n = first.containers(sandboxId);
    // a run network whose containers were never made (a worker that died between the two)
    const stray = `sbx_${randomBytes(10).toString('hex')}`;
    await mkdir(join(mine, stray));
    await first.docker.createNetwork(runNetworkSpec(stray, 'run_docker_stray'));
    const running = async () => (await first.docker.getContainer(n.sidecar).inspect()).State.Running && (await first.docker.getContainer(n.agent).inspect()).State.Running;
    try {
      await first.close();
      // another worker on this engine: neither adopts the pair nor clears the network
      const other = await createDockerAdapter({ workDir: others, sidecarImage: SIDECAR_IMAGE, agentImage: AGENT_IMAGE });
      assert.deepEqual(other.sandboxes(), []);
      await other.close();
      assert.deepEqual(await removeDockerSandboxes({ workDir: others }), []);
      assert.equal(await running(), true);
      await first.docker.getNetwork(sandboxNames(stray).network).inspect();
      assert.match(execFileSync('iptables', ['-S', 'INPUT'], { encoding: 'utf8' }), new RegExp(sandboxNames(sandboxId).bridge));

      // its own worker gone for good: everything of its folder goes
      assert.deepEqual((await removeDockerSandboxes({ workDir: mine })).sort(), [sandboxId, stray].sort());
      for (const name of [n.agent, n.sidecar]) await assert.rejects(first.docker.getContainer(name).inspect(), /404|no such container/i);
      for (const network of [n.network, sandboxNames(stray).network]) await assert.rejects(first.docker.getNetwork(network).inspect(), /404|not found/i);
      assert.doesNotMatch(execFileSync('iptables', ['-S', 'INPUT'], { encoding: 'utf8' }), new RegExp(sandboxNames(sandboxId).bridge));
      assert.equal(existsSync(join(mine, sandboxId)), false);
      assert.equal(existsSync(join(mine, stray)), false);
    } finally {
      await removeDockerSandboxes({ workDir: mine });
      await rm(mine, { recursive: true, force: true });
      await rm(others, { recursive: true, force: true });
    }
  });

  test('a run whose agent goes over its memory ceiling fails with agent_memory_exceeded', async () => {
    const spec = aSandboxSpec({ runId: 'run_docker_oom', eventsBaseUrl: receiver.url, secret, modelUrl: model.url, memoryMb: 128 });
    // an input far larger than the agent's 96 MiB heap: reading and parsing it goes over the ceiling
    const big = { summary: 'x'.repeat(48 * 1024 * 1024), count: 1, more: 'y'.repeat(48 * 1024 * 1024) };
    spec.workspace = spec.workspace.map((f) => (f.path === 'input.json' ? { path: f.path, content: Buffer.from(JSON.stringify(big)) } : f));
    const { sandboxId } = await adapter.start(spec);
    try {
      await waitUntil(() => eventsOf('run_docker_oom').some((e) => e.type === 'failed'), 30_000);
      const failed = eventsOf('run_docker_oom').find((e) => e.type === 'failed');
      assert.equal(failed?.type === 'failed' && failed.data.code, MEMORY_EXCEEDED_CODE, JSON.stringify(failed));
      assert.match(JSON.stringify(failed), /memory ceiling of 128 MiB/);
    } finally {
      await adapter.stop(sandboxId);
    }
  });
});

test('the docker backend is tested here when CI requires it', () => {
  if (DOCKER_REQUIRED) assert.equal(unavailable, null);
  else if (unavailable) assert.match(unavailable, /docker/);
});

/** the TCP ports the firewall lets in from the egress network (the relays') */
function openedEgressPorts(): number[] {
  return execFileSync('iptables', ['-S', 'INPUT'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes('-i ap-egress0') && line.includes('-j ACCEPT'))
    .flatMap((line) => /--dport (\d+)/.exec(line)?.[1] ?? [])
    .map(Number);
}

/** whether something listens on host:port (the egress gateway is an address of this host) */
function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.setTimeout(2000, () => (socket.destroy(), resolve(false)));
    socket.on('connect', () => (socket.destroy(), resolve(true)));
    socket.on('error', () => resolve(false));
  });
}

/** the sidecar's port, from its ready line in the container's log */
async function waitForSidecarPort(docker: Docker, sidecar: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const log = ((await docker.getContainer(sidecar).logs({ stdout: true, stderr: false })) as Buffer).toString('latin1');
    const port = /"port":(\d+)/.exec(log)?.[1];
    if (port) return `http://sidecar:${port}`;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no ready line from the sidecar');
}

describe('the docker backend boot check', { skip: unavailable ?? false }, () => {
  const OLD = 'agent-platform/test-protocol-mismatch:p0';
  before(() => {
    // an image of another protocol version, built from the local base image
    execFileSync('docker', ['build', '-q', '-t', OLD, '--label', `${PROTOCOL_LABEL}=0`, '-'], { input: `FROM agent-platform/base:p${SANDBOX_PROTOCOL_VERSION}\n` });
  });
  after(() => {
    execFileSync('docker', ['image', 'rm', '-f', OLD]);
  });

  test('configured images of another protocol version, or missing ones, stop the boot with a clear message', async () => {
    const docker = new DockerClient();
    await assert.rejects(
      ensureSandboxImages(docker, { root: REPO, sidecarImage: OLD, agentImage: AGENT_IMAGE }),
      new RegExp(`DOCKER_SIDECAR_IMAGE=${OLD} speaks sandbox protocol 0, but this platform speaks version ${SANDBOX_PROTOCOL_VERSION}`),
    );
    await assert.rejects(
      ensureSandboxImages(docker, { root: REPO, sidecarImage: SIDECAR_IMAGE, agentImage: 'agent-platform/none-such:p1' }),
      /DOCKER_AGENT_IMAGE=agent-platform\/none-such:p1: no such image/,
    );
    await assert.rejects(ensureSandboxImages(docker, { root: REPO, sidecarImage: SIDECAR_IMAGE }), /set together/);
    assert.deepEqual(await ensureSandboxImages(docker, { root: REPO, sidecarImage: SIDECAR_IMAGE, agentImage: AGENT_IMAGE }), { sidecarImage: SIDECAR_IMAGE, agentImage: AGENT_IMAGE });
    // none configured: the defaults, current with this checkout's bundles
    assert.deepEqual(await ensureSandboxImages(docker, { root: REPO }), { sidecarImage: DEFAULT_SIDECAR_IMAGE, agentImage: DEFAULT_AGENT_IMAGE });
  });
});
