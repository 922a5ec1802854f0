// RUN_ADAPTER=process: each run's agent runtime is a child process of this host, claimed from a
// warm pool, and its sidecar a session of the worker's one long-lived sidecar host
// (sidecar-host.ts), opened when the run is assigned. The agent runs under bubblewrap (own namespaces, no network, a
// read-only view of the system) when bwrap is available, and under per-sandbox cgroup v2
// ceilings when the host allows; otherwise it is an ordinary process with a V8 heap ceiling.
import { metrics } from '../../lib/metrics/index.ts';
import { mkdir, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from '../../lib/log.ts';
import { projectRoot } from '../../lib/project-root.ts';
import type { SandboxAdapter, SandboxSpec } from './adapter.ts';
import { DEFAULT_CGROUP_ROOT, prepareCgroups } from './cgroup.ts';
import { findBubblewrap, probeBubblewrap, probeNestedShell, SIDECAR_SOCKET_NAME } from './confinement.ts';
import { agentHeapMb, SandboxPair, sidecarHosts, type AgentShell, type PairSettings } from './sandbox-pair.ts';
import { WarmPool } from './warm-pool.ts';
import { checkWorkspacePaths } from './workspace-writer.ts';

/** the platform's default agent_memory_ceiling_mb: pooled agents get the heap ceiling for it */
const DEFAULT_POOL_MEMORY_MB = 1536;
// sun_path holds 108 bytes including the terminating NUL
const MAX_SOCKET_PATH = 107;

export interface ProcessAdapterOptions {
  /** project root holding dist/, node_modules and bin/start.mjs; found from this file when absent */
  root?: string;
  /** ready pairs kept waiting */
  warmPool: number;
  /**
   * pairs started at once (default: the cores, at least 2); more wait their turn, so a burst of
   * runs (all the runs waiting to start when a platform restarts) does not starve each pair's
   * start past its ready timeout, which counts from the pair's own start
   */
  coldStarts?: number;
  /** sandbox folders go under it: <workDir>/<sandboxId>/{workspace,files,ipc} */
  workDir: string;
  log?: Logger;
  /** 'auto' confines the agent with bubblewrap when it works here; 'off' never does */
  confine?: 'auto' | 'off';
  /** memory limit pooled pairs are started for; a run with another limit gets a fresh pair */
  poolMemoryMb?: number;
  cgroupRoot?: string;
  /**
   * SANDBOX_UNCONFINED_SHELL_UNSAFE: an agent that is not confined gets its shell tool anyway,
   * running commands as this host's user with its files and network
   */
  unconfinedShellUnsafe?: boolean;
}

export interface SandboxIsolation {
  confinement: 'bubblewrap' | 'none';
  /** why the agent is not confined, when it is not */
  confinementNote?: string;
  cgroup: 'v2' | 'none';
  cgroupNote?: string;
  /** the agent's shell tool: nested under bubblewrap, unconfined (the unsafe setting), or absent */
  shell: 'bubblewrap' | 'unconfined' | 'none';
  /** why the agent has no shell, when it has none */
  shellNote?: string;
}

export interface SandboxProcesses {
  /** the worker's sidecar host serving the run's session */
  sidecarPid: number;
  /** the run's session's TCP port on 127.0.0.1 (the unconfined agent's way in) */
  sidecarPort: number;
  /** the spawned agent process: bwrap when confined, node otherwise */
  agentPid: number;
  dir: string;
  confined: boolean;
}

export interface ProcessSandboxAdapter extends SandboxAdapter {
  readonly kind: 'process';
  readonly isolation: SandboxIsolation;
  /** the processes of a running sandbox, for diagnostics */
  processes(sandboxId: string): SandboxProcesses | undefined;
  warmCount(): number;
  /** resolves once the warm pool is full */
  whenWarm(): Promise<void>;
  /** how many run sessions the sidecar host holds, as it counts them itself (0 when none runs) */
  hostSessions(): Promise<number>;
}

async function ensureProgramBundle(root: string): Promise<void> {
  // loaded by path at run time so the bundler never inlines the build script into the platform
  const starter = (await import(pathToFileURL(path.join(root, 'bin', 'start.mjs')).href)) as { ensureBundle(): Promise<void> };
  await starter.ensureBundle();
}

async function chooseConfinement(
  opts: ProcessAdapterOptions,
  root: string,
  workDir: string,
): Promise<{ bwrap?: string; note?: string; nestedShell?: { ok: true } | { ok: false; reason: string } }> {
  if (opts.confine === 'off') return { note: 'confinement turned off' };
  const bwrap = findBubblewrap();
  if (!bwrap) return { note: 'bwrap is not on PATH' };
  const sampleSocket = path.join(workDir, `sbx_${'x'.repeat(20)}`, 'ipc', SIDECAR_SOCKET_NAME);
  if (Buffer.byteLength(sampleSocket) > MAX_SOCKET_PATH) return { note: `workDir is too long for a unix socket path (${sampleSocket})` };
  const probeDir = path.join(workDir, '.probe');
  await mkdir(path.join(probeDir, 'ipc'), { recursive: true });
  const layout = { root, workspaceDir: probeDir, ipcDir: path.join(probeDir, 'ipc') };
  const probe = await probeBubblewrap(bwrap, layout);
  const nestedShell = probe.ok ? await probeNestedShell(bwrap, layout) : undefined;
  await rm(probeDir, { recursive: true, force: true });
  if (probe.ok) return { bwrap, nestedShell };
  return { note: probe.reason.startsWith('no answer') ? `bwrap's probe gave ${probe.reason}` : `bwrap cannot create its namespaces here: ${probe.reason}` };
}

/** `start` with at most `limit` calls under way; the others wait, first come first served. */
function startsAtOnce<A, T>(limit: number, start: (arg: A) => Promise<T>): (arg: A) => Promise<T> {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async (arg) => {
    // a finished start hands its place straight to the next in line
    if (running < limit) running += 1;
    else await new Promise<void>((go) => waiting.push(go));
    try {
      return await start(arg);
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running -= 1;
    }
  };
}

export async function createProcessAdapter(opts: ProcessAdapterOptions): Promise<ProcessSandboxAdapter> {
  const root = opts.root ?? projectRoot();
  const workDir = path.resolve(opts.workDir);
  await mkdir(workDir, { recursive: true });
  // The confinement probe binds dist/ into its view: on a fresh checkout it must exist first.
  const [confinement, cgroups] = await Promise.all([
    ensureProgramBundle(root).then(() => chooseConfinement(opts, root, workDir)),
    prepareCgroups(opts.cgroupRoot ?? DEFAULT_CGROUP_ROOT),
  ]);
  let shell: AgentShell = null;
  let shellNote: string | undefined;
  if (confinement.bwrap) {
    if (confinement.nestedShell?.ok) shell = { kind: 'bubblewrap', bwrap: confinement.bwrap };
    else shellNote = `the shell's sandbox cannot nest in the agent's here: ${confinement.nestedShell?.ok === false ? confinement.nestedShell.reason : 'not probed'}`;
  } else if (opts.unconfinedShellUnsafe) {
    shell = { kind: 'unconfined' };
  } else {
    shellNote = 'the agent is not confined (SANDBOX_UNCONFINED_SHELL_UNSAFE=true would give it a shell anyway)';
  }
  const isolation: SandboxIsolation = {
    confinement: confinement.bwrap ? 'bubblewrap' : 'none',
    ...(confinement.note ? { confinementNote: confinement.note } : {}),
    cgroup: cgroups.available ? 'v2' : 'none',
    ...(cgroups.available ? {} : { cgroupNote: cgroups.reason }),
    shell: shell?.kind ?? 'none',
    ...(shellNote ? { shellNote } : {}),
  };
  opts.log?.info('process sandbox adapter ready', { ...isolation, warmPool: opts.warmPool });

  const settings: PairSettings = {
    root,
    workDir,
    bwrap: confinement.bwrap,
    shell,
    cgroupBase: cgroups.available ? cgroups.base : undefined,
    log: opts.log,
  };
  const poolHeapMb = agentHeapMb(opts.poolMemoryMb ?? DEFAULT_POOL_MEMORY_MB);
  const hosts = sidecarHosts(settings, poolHeapMb);
  const spawnPair = startsAtOnce(Math.max(1, opts.coldStarts ?? Math.max(2, availableParallelism())), (heapMb: number) => SandboxPair.spawn(settings, heapMb, hosts));
  const pool = new WarmPool(Math.max(0, opts.warmPool), poolHeapMb, () => spawnPair(poolHeapMb), opts.log);
  const active = new Map<string, SandboxPair>();
  const runOf = new Map<string, string>();
  let closed = false;

  // a platform that exits takes its sandboxes along (the programs also end on stdin EOF)
  const killAll = () => {
    for (const pair of [...active.values(), ...pool.pairs()]) pair.killNow();
    hosts.killNow();
  };
  process.once('exit', killAll);
  pool.fill();
  const unwatchPool = metrics.watch('sandbox_pool_size', () => [{ value: pool.warm, labels: { backend: 'process' } }]);

  const stop = async (sandboxId: string): Promise<void> => {
    const pair = active.get(sandboxId);
    if (!pair) return;
    await pair.stop();
    active.delete(sandboxId);
    runOf.delete(sandboxId);
    pool.fill();
  };

  return {
    kind: 'process',
    isolation,

    async start(spec: SandboxSpec) {
      if (closed) throw new Error('the process sandbox adapter is closed');
      checkWorkspacePaths(spec.workspace);
      const heapMb = agentHeapMb(spec.limits.memoryMb);
      const warm = pool.take(heapMb);
      const pair = warm ?? (await spawnPair(heapMb));
      if (closed) {
        await pair.stop();
        throw new Error('the process sandbox adapter is closed');
      }
      active.set(pair.id, pair);
      runOf.set(pair.id, spec.runId);
      try {
        await pair.assign(spec);
      } catch (err) {
        await stop(pair.id);
        throw err;
      } finally {
        // Starting a pair costs more CPU than a short run: while another pair still waits, the
        // refill waits for this run's end (stop), so the two do not share the cores.
        if (pool.warm === 0) pool.fill();
      }
      metrics.sandboxStarted('process', warm ? 'warm' : 'cold');
      opts.log?.debug('sandbox started', { runId: spec.runId, sandboxId: pair.id });
      return { sandboxId: pair.id };
    },

    async alive(sandboxId) {
      return active.get(sandboxId)?.alive() ?? false;
    },

    async state(sandboxId) {
      return active.get(sandboxId)?.state() ?? 'gone';
    },
    sandboxes() {
      return [...runOf].map(([sandboxId, runId]) => ({ sandboxId, runId }));
    },

    stop,

    async close() {
      closed = true;
      unwatchPool();
      await Promise.all([pool.drain(), ...[...active.keys()].map(stop)]);
      await hosts.close();
      process.off('exit', killAll);
    },

    processes(sandboxId) {
      const pair = active.get(sandboxId);
      return pair && { sidecarPid: pair.sidecar.host?.pid ?? -1, sidecarPort: pair.sidecar.port, agentPid: pair.agent.pid, dir: pair.dir, confined: pair.confined };
    },
    hostSessions: async () => (await hosts.now()?.count()) ?? 0,
    warmCount: () => pool.warm,
    whenWarm: () => pool.whenFull(),
  };
}
