// RUN_ADAPTER=docker: each run gets two containers, its agent runtime and its sidecar, started
// from the sandbox images (docker/build-images.sh), over the Engine API (dockerode).
// - The agent sits on a per-run --internal network whose only other member is its sidecar: no
//   route out, and the host's own ports are closed to that bridge (docker-network.ts).
// - The sidecar is also on the shared egress network (inter-container traffic off), where it
//   reaches model providers and, through relays on the gateway address, the platform and anything
//   else at a loopback or internal address.
// - Both: non-root, read-only root, every capability dropped, no-new-privileges, pids, memory and
//   CPU ceilings (docker-specs.ts); the agent writes only its workspace, the sidecar its files and
//   its state folder.
// - Local integrations' MCP servers each get a container, confined the same way, on a second
//   --internal network shared with the sidecar only (docker-local-servers.ts).
// - The programs take their assignment on stdin (the same handshake as the process backend). The
//   pair outlives a worker restart: a new adapter on the same work folder adopts the labelled
//   containers of its sandboxes (the engine may serve other deployments too) and re-opens their
//   relays before it answers (docker-adoption.ts), and the run's workflow, which
//   knows its sandbox by id, finds it running again. A sandbox's state is read from the Engine API
//   and the sidecar's state folder, never from a stream only the starting worker saw.
// - A warm pool (warmPool, SANDBOX_WARM_POOL) keeps pairs made up to their assignment; a run of the
//   pool's memory ceiling and no local integrations claims one (docker-warm-pool.ts).
import { metrics } from '../../lib/metrics/index.ts';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import Docker from 'dockerode';
import { randomBase62 } from '../../lib/ids.ts';
import type { Logger } from '../../lib/log.ts';
import type { SandboxAdapter, SandboxSpec } from './adapter.ts';
import { adoptSandboxes, ownedBy, pairState, sandboxRun } from './docker-adoption.ts';
import type { AttachedProgram } from './docker-attached-program.ts';
import { serverImage, writeServerFiles } from './docker-local-servers.ts';
import { LoopbackRelays } from './docker-network.ts';
import { assignPair, handOver, launchPair, relayedAssignment, removeSandboxParts } from './docker-pair.ts';
import { EGRESS_BRIDGE, ensureEgressNetwork, LABEL_SANDBOX, names } from './docker-specs.ts';
import { claimPooledPair, makePooledPair, unclaimedPooledFolder, type PooledDockerPair } from './docker-warm-pool.ts';
import { agentHeapMb } from './sandbox-pair.ts';
import { WarmPool } from './warm-pool.ts';
import { checkWorkspacePaths, writeWorkspace } from './workspace-writer.ts';

export { EGRESS_NETWORK, LABEL_POOLED, LABEL_ROLE, LABEL_RUN, LABEL_SANDBOX } from './docker-specs.ts';
export { MEMORY_EXCEEDED_CODE } from './docker-pair.ts';

/** the platform's default agent_memory_ceiling_mb and agent_cpu_ceiling: what pooled pairs are made for */
const DEFAULT_POOL_LIMITS = { memoryMb: 1536, cpus: 2 };

/** the docker backend's work folder in the worker's data directory */
export const DOCKER_WORK_FOLDER = 'docker-sandboxes';

export interface DockerAdapterOptions {
  /** folders bound into the containers go under it: <workDir>/<sandboxId>/{workspace,files,state} */
  workDir: string;
  sidecarImage: string;
  agentImage: string;
  /** images a local integration may name besides the agent image (LOCAL_INTEGRATION_IMAGES) */
  localIntegrationImages?: string[];
  /** the Engine API socket; /var/run/docker.sock when absent */
  socketPath?: string;
  log?: Logger;
  /** ready pairs kept waiting (SANDBOX_WARM_POOL); none when absent */
  warmPool?: number;
  /** the agent's memory ceiling pooled pairs are made for; a run with another one gets a fresh pair */
  poolMemoryMb?: number;
  /** the agent's CPU ceiling pooled pairs are made with; a claim sets the run's when it differs */
  poolCpus?: number;
}

export interface DockerSandboxAdapter extends SandboxAdapter {
  readonly kind: 'docker';
  /** names of a running sandbox's containers and run network, for diagnostics and tests */
  containers(sandboxId: string): { sidecar: string; agent: string; network: string; mcpNetwork: string };
  /** the Engine API client the adapter uses */
  readonly docker: Docker;
  /** the egress network's gateway address (where the relays listen) */
  readonly gateway: string;
  /** the pooled pairs waiting, by sandbox id */
  warmSandboxes(): string[];
  /** resolves once the warm pool is full */
  whenWarm(): Promise<void>;
}

interface Known {
  runId: string;
  programs?: { sidecar: AttachedProgram; agent: AttachedProgram };
}

export async function createDockerAdapter(opts: DockerAdapterOptions): Promise<DockerSandboxAdapter> {
  const docker = new Docker({ socketPath: opts.socketPath ?? '/var/run/docker.sock' });
  const workDir = path.resolve(opts.workDir);
  await mkdir(workDir, { recursive: true });
  const gateway = await ensureEgressNetwork(docker);
  const relays = new LoopbackRelays(gateway, EGRESS_BRIDGE, opts.log);
  const images = { sidecar: opts.sidecarImage, agent: opts.agentImage, localAllowed: opts.localIntegrationImages ?? [] };
  /** the sandboxes this adapter answers for, with their run, and the attach streams of those it started */
  const known = new Map<string, Known>();
  const stopping = new Map<string, Promise<void>>();
  let closed = false;
  const stateDirOf = (sandboxId: string) => path.join(workDir, sandboxId, 'state');

  const removeSandbox = async (sandboxId: string): Promise<void> => {
    const entry = known.get(sandboxId);
    entry?.programs?.sidecar.detach();
    entry?.programs?.agent.detach();
    await removeSandboxParts(docker, workDir, sandboxId);
    known.delete(sandboxId);
  };

  const stop = (sandboxId: string): Promise<void> => {
    let pending = stopping.get(sandboxId);
    if (!pending) {
      pending = removeSandbox(sandboxId).finally(() => stopping.delete(sandboxId));
      stopping.set(sandboxId, pending);
    }
    return pending;
  };

  // The pairs a previous worker on this work folder left running are this adapter's now (their
  // runs' workflows re-attach by sandbox id; the reaper stops those whose run has ended). Its
  // pooled pairs that no run claimed are nobody's: removed, like its run networks whose
  // containers are gone (a crash between the two) and its pooled folders with no parts yet.
  const owned = ownedBy(workDir);
  const { adopted, unclaimed } = await adoptSandboxes(docker, relays, workDir, opts.log);
  for (const [sandboxId, runId] of adopted) known.set(sandboxId, { runId });
  for (const sandboxId of unclaimed) await stop(sandboxId);
  for (const net of await docker.listNetworks({ filters: { label: [LABEL_SANDBOX] } })) {
    const sandboxId = net.Labels?.[LABEL_SANDBOX];
    if (sandboxId && !known.has(sandboxId) && (await owned(sandboxId))) await stop(sandboxId);
  }
  for (const e of await readdir(workDir, { withFileTypes: true })) {
    if (e.isDirectory() && !known.has(e.name) && (await unclaimedPooledFolder(path.join(workDir, e.name)))) await stop(e.name);
  }
  if (unclaimed.size) opts.log?.info('unclaimed pooled docker sandboxes removed', { sandboxes: [...unclaimed] });

  const poolLimits = { memoryMb: opts.poolMemoryMb ?? DEFAULT_POOL_LIMITS.memoryMb, cpus: opts.poolCpus ?? DEFAULT_POOL_LIMITS.cpus };
  const poolHeapMb = agentHeapMb(poolLimits.memoryMb);
  const pool = new WarmPool<PooledDockerPair>(Math.max(0, opts.warmPool ?? 0), poolHeapMb, () => makePooledPair(docker, {
    workDir, images, relays, limits: poolLimits, heapMb: poolHeapMb, remove: stop,
  }), opts.log);
  pool.fill();
  const unwatchPool = metrics.watch('sandbox_pool_size', () => [{ value: pool.warm, labels: { backend: 'docker' } }]);

  /** A waiting pair for this run, if one fits and is fresh; one that is not is removed, never handed out. */
  const claimable = async (spec: SandboxSpec): Promise<PooledDockerPair | undefined> => {
    if (spec.limits.memoryMb !== poolLimits.memoryMb || (spec.localServers ?? []).length > 0) return undefined;
    for (let pair = pool.take(poolHeapMb); pair; pair = pool.take(poolHeapMb)) {
      if (await pair.fresh()) return pair;
      opts.log?.warn('a waiting docker sandbox had exited or was touched: removed', { sandboxId: pair.id, stderr: pair.stderrTail() });
      void pair.stop().catch(() => undefined);
    }
    return undefined;
  };

  const startPooled = async (spec: SandboxSpec, pair: PooledDockerPair): Promise<{ sandboxId: string }> => {
    const sandboxId = pair.id;
    known.set(sandboxId, { runId: spec.runId, programs: pair.launched.programs });
    try {
      const assignment = await claimPooledPair(pair, spec, relays);
      await assignPair(pair.launched, assignment, spec.limits.memoryMb, opts.log);
      opts.log?.debug('docker sandbox started', { runId: spec.runId, sandboxId, pooled: true });
      return { sandboxId };
    } catch (err) {
      await stop(sandboxId).catch(() => undefined);
      throw err;
    }
  };

  const startCold = async (spec: SandboxSpec): Promise<{ sandboxId: string }> => {
    const servers = spec.localServers ?? [];
    const sandboxId = `sbx_${randomBase62(20)}`;
    const dir = path.join(workDir, sandboxId);
    const entry: Known = { runId: spec.runId };
    known.set(sandboxId, entry);
    // where a start's time goes (logged at debug): what a warm pool takes off
    const phases: Record<string, number> = {};
    let since = performance.now();
    const phase = (name: string) => {
      const now = performance.now();
      phases[name] = Math.round(now - since);
      since = now;
    };
    try {
      const workspace = path.join(dir, 'workspace');
      await Promise.all([workspace, path.join(dir, 'files'), stateDirOf(sandboxId)].map((d) => mkdir(d, { recursive: true })));
      await writeWorkspace(workspace, spec.workspace);
      await writeServerFiles(dir, servers);
      await handOver(dir);
      const assignment = await relayedAssignment(spec.sidecar, relays);
      phase('folders_ms');
      const pair = await launchPair(docker, {
        sandboxId, runId: spec.runId, dir, images, relays, limits: spec.limits, heapMb: agentHeapMb(spec.limits.memoryMb), servers,
      }, (programs) => (entry.programs = programs), phase);
      await assignPair(pair, assignment, spec.limits.memoryMb, opts.log);
      phase('assigned_ms');
      opts.log?.debug('docker sandbox started', { runId: spec.runId, sandboxId, ...phases });
      return { sandboxId };
    } catch (err) {
      await stop(sandboxId).catch(() => undefined);
      throw err;
    }
  };

  const start = async (spec: SandboxSpec): Promise<{ sandboxId: string }> => {
    if (closed) throw new Error('the docker sandbox adapter is closed');
    checkWorkspacePaths(spec.workspace);
    // a local server's image is the tenant's choice: one the operator does not allow is refused before anything exists
    for (const server of spec.localServers ?? []) serverImage(server, opts.agentImage, opts.localIntegrationImages ?? []);
    const pooled = await claimable(spec);
    try {
      const started = await (pooled ? startPooled(spec, pooled) : startCold(spec));
      metrics.sandboxStarted('docker', pooled ? 'warm' : 'cold');
      return started;
    } finally {
      // as in the process backend: while another pair waits, the refill waits for a run's end
      if (pool.warm === 0) pool.fill();
    }
  };

  const state = async (sandboxId: string) => {
    if (stopping.has(sandboxId)) return 'gone' as const;
    if (pool.pairs().some((p) => p.id === sandboxId)) return 'gone' as const;
    const found = await pairState(docker, names(sandboxId), stateDirOf(sandboxId));
    // a pair found after this adapter started (another worker's, adopted late) is this adapter's from now on
    if (found !== 'gone' && !known.has(sandboxId)) {
      const info = await docker.getContainer(names(sandboxId).sidecar).inspect().catch(() => null);
      const runId = info ? await sandboxRun(path.join(workDir, path.basename(sandboxId)), info.Config.Labels) : '';
      // a pooled pair no run claimed is no run's sandbox
      if (runId === null) return 'gone' as const;
      known.set(sandboxId, { runId });
    }
    return found;
  };

  return {
    kind: 'docker',
    docker,
    gateway,
    start,
    state,
    async alive(sandboxId) {
      return (await state(sandboxId)) === 'running';
    },
    sandboxes() {
      return [...known].map(([sandboxId, k]) => ({ sandboxId, runId: k.runId }));
    },
    stop(sandboxId) {
      return stop(sandboxId).finally(() => pool.fill());
    },
    async close() {
      closed = true;
      unwatchPool();
      // the waiting pairs are no run's: removed (a pair being made is removed once it is)
      await pool.drain();
      // the runs' containers stay: a worker that restarts adopts them (the reaper removes those of ended runs)
      for (const k of known.values()) {
        k.programs?.sidecar.detach();
        k.programs?.agent.detach();
      }
      await Promise.all(stopping.values());
      await relays.close();
    },
    containers(sandboxId) {
      const n = names(sandboxId);
      return { sidecar: n.sidecar, agent: n.agent, network: n.network, mcpNetwork: n.mcpNetwork };
    },
    warmSandboxes: () => pool.pairs().map((p) => p.id),
    whenWarm: () => pool.whenFull(),
  };
}

/**
 * Removes every sandbox of a work folder whose worker is gone for good (a deployment taken down
 * with its data): the runs they served are over. The shared egress network stays, other workers
 * may use it. Answers the sandboxes removed.
 */
export async function removeDockerSandboxes(opts: { workDir: string; socketPath?: string }): Promise<string[]> {
  const docker = new Docker({ socketPath: opts.socketPath ?? '/var/run/docker.sock' });
  const workDir = path.resolve(opts.workDir);
  const owned = ownedBy(workDir);
  const found = new Set<string>();
  for (const c of await docker.listContainers({ all: true, filters: { label: [LABEL_SANDBOX] } })) found.add(c.Labels[LABEL_SANDBOX]);
  for (const net of await docker.listNetworks({ filters: { label: [LABEL_SANDBOX] } })) if (net.Labels?.[LABEL_SANDBOX]) found.add(net.Labels[LABEL_SANDBOX]);
  // folders left without parts (a crash before the first was made)
  for (const e of await readdir(workDir, { withFileTypes: true }).catch(() => [])) if (e.isDirectory() && e.name.startsWith('sbx_')) found.add(e.name);
  const removed: string[] = [];
  for (const sandboxId of found) {
    if (!(await owned(sandboxId))) continue;
    await removeSandboxParts(docker, workDir, sandboxId);
    removed.push(sandboxId);
  }
  return removed;
}
