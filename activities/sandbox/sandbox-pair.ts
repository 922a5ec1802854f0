// One sandbox of the process backend: an agent runtime spawned ahead of need, ready and waiting
// for its assignment, used for one run only, and the run's session on the worker's long-lived
// sidecar host (sidecar-host.ts), opened at the assignment. Its folder holds the agent's
// workspace, the session's published files and (when confined) the session's socket.
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { randomBase62 } from '../../lib/ids.ts';
import type { Logger } from '../../lib/log.ts';
import type { SandboxSpec, SandboxState } from './adapter.ts';
import { confineToCgroup, processTree, removeCgroup } from './cgroup.ts';
import { confinedArgv, SANDBOX_IPC_DIR, SANDBOX_PATH_ENV, SANDBOX_WORKSPACE, sandboxNodePath, SIDECAR_SOCKET_NAME } from './confinement.ts';
import { cachedPairArgv } from './code-cache.ts';
import { spawnProgram, type ProgramProcess } from './program-process.ts';
import { SidecarHost, SidecarHosts } from './sidecar-host.ts';
import { processLiveness, readyLine } from './readiness.ts';
import { writeWorkspace } from './workspace-writer.ts';

const READY_TIMEOUT_MS = 30_000;
const ASSIGN_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 2_000;
/** a sidecar relays bodies of up to 32 MiB; a fixed heap keeps a runaway one from growing without bound */
export const SIDECAR_HEAP_MB = 256;
/** the process backend's sidecar host relays them for each of the runs it serves at once */
export const SIDECAR_HOST_HEAP_MB = 1024;
// a small young generation: idle and per-run private memory drops by a third for a few more scavenges
const NODE_MEMORY_FLAGS = ['--max-semi-space-size=1'];
// Sandboxes run at a lower CPU priority than the platform and the workflow engine: when starting
// and running agents fill the cores, launches, reads and run events are still served at once.
const SANDBOX_NICENESS = 19;
// what the sidecar may need from the host's environment: nothing secret, no platform setting
// (PROBLEM_CODE_LOG is the test run's record of emitted error codes, see lib/problem-log.ts)
const SIDECAR_ENV_KEYS = ['PATH', 'NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'TZ', 'LANG', 'PROBLEM_CODE_LOG'];

/**
 * The agent's shell tool, as its assignment tells it: each command in a nested bubblewrap
 * sandbox (bwrap as seen inside the agent's), run directly (an unconfined agent, only with
 * SANDBOX_UNCONFINED_SHELL_UNSAFE), or none.
 */
export type AgentShell = { kind: 'bubblewrap'; bwrap: string } | { kind: 'unconfined' } | null;

export interface PairSettings {
  root: string;
  workDir: string;
  /** bwrap executable when the agent runs confined */
  bwrap?: string;
  /** the shell the agent is given; none when absent */
  shell?: AgentShell;
  /** cgroup v2 parent group when ceilings can be set */
  cgroupBase?: string;
  /**
   * how long a program may take to say it is ready before its liveness is looked at (30 s); a
   * live, progressing one is waited for up to READY_CEILING_TIMEOUTS of these
   */
  readyTimeoutMs?: number;
  log?: Logger;
}

/** The agent's V8 heap ceiling for a memory limit: the rest is left to code, buffers and stacks. */
export function agentHeapMb(memoryMb: number): number {
  const margin = Math.min(256, Math.max(32, Math.floor(memoryMb / 4)));
  return Math.max(64, Math.floor(memoryMb - margin));
}

function sidecarEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { HOME: home, SIDECAR_MODE: 'host' };
  for (const key of SIDECAR_ENV_KEYS) if (process.env[key] !== undefined) env[key] = process.env[key];
  return env;
}

/** The argv of the programs, from their code caches (written by a rehearsal when missing). */
function programArgv(settings: PairSettings, heapMb: number) {
  return cachedPairArgv(settings.root, sandboxNodePath(), {
    sidecar: [`--max-old-space-size=${SIDECAR_HOST_HEAP_MB}`, ...NODE_MEMORY_FLAGS],
    agent: [`--max-old-space-size=${heapMb}`, ...NODE_MEMORY_FLAGS],
  }, settings.log);
}

/** The worker's sidecar host, started (niced like the agents, with no secret in its environment) when first needed. */
export function sidecarHosts(settings: PairSettings, poolHeapMb: number): SidecarHosts {
  return new SidecarHosts(async () => {
    const { sidecar } = await programArgv(settings, poolHeapMb);
    return SidecarHost.start({
      // in no sandbox's folder (nor the sandboxes' parent): it belongs to no run
      command: sandboxNodePath(), args: sidecar, cwd: '/', env: sidecarEnv('/'),
      niceness: SANDBOX_NICENESS, readyTimeoutMs: settings.readyTimeoutMs, log: settings.log,
    });
  }, settings.log);
}

export class SandboxPair {
  private cgroupDir: string | undefined;
  private stopping: Promise<void> | undefined;
  /** the host serving the run's session, once assigned */
  private host: SidecarHost | null = null;
  private port = 0;
  /** settles when the agent has exited */
  readonly ended: Promise<void>;

  private constructor(
    readonly id: string,
    readonly dir: string,
    readonly heapMb: number,
    readonly confined: boolean,
    readonly agent: ProgramProcess,
    private readonly hosts: SidecarHosts,
    private readonly settings: PairSettings,
  ) {
    this.ended = agent.exited;
  }

  /** Starts the agent runtime, and the worker's sidecar host when none runs, and waits for both to be ready. */
  static async spawn(settings: PairSettings, heapMb: number, hosts: SidecarHosts): Promise<SandboxPair> {
    const id = `sbx_${randomBase62(20)}`;
    const dir = path.join(settings.workDir, id);
    const workspace = path.join(dir, 'workspace');
    await mkdir(workspace, { recursive: true });
    await mkdir(path.join(dir, 'files'));
    await mkdir(path.join(dir, 'ipc'));

    const node = sandboxNodePath();
    const { agent: agentArgv } = await programArgv(settings, heapMb);
    const agentCommand = [node, ...agentArgv];
    const hostReady = hosts.current();
    const agent = await spawnProgram(
      // the agent's environment names no secret and no setting: PATH and HOME only
      ...(settings.bwrap
        ? ['agent-runtime', settings.bwrap, confinedArgv({ root: settings.root, workspaceDir: workspace, ipcDir: path.join(dir, 'ipc'), bwrap: settings.bwrap }, agentCommand), {
            cwd: workspace,
            env: { PATH: SANDBOX_PATH_ENV, HOME: SANDBOX_WORKSPACE },
            niceness: SANDBOX_NICENESS,
          }] as const
        : ['agent-runtime', agentCommand[0], agentCommand.slice(1), {
            cwd: workspace,
            env: { PATH: process.env.PATH ?? SANDBOX_PATH_ENV, HOME: workspace },
            niceness: SANDBOX_NICENESS,
          }] as const),
    ).catch(async (err: Error) => {
      await hostReady.catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
      throw err;
    });

    // slow is not dead: under load a start outlasts its timeout, and starting another pair instead would only add to the load
    const agentReady = readyLine(agent, {
      timeoutMs: settings.readyTimeoutMs ?? READY_TIMEOUT_MS,
      liveness: processLiveness(agent.pid),
      onExtended: (waitedMs) => settings.log?.info('a sandbox program is slow to start but alive and progressing; waiting on', { sandboxId: id, program: 'agent-runtime', waitedMs }),
    });
    const [hostStarted, agentStarted] = await Promise.allSettled([hostReady, agentReady]);
    if (hostStarted.status === 'rejected' || agentStarted.status === 'rejected' || agentStarted.value.ready !== true) {
      await agent.terminate(0);
      await rm(dir, { recursive: true, force: true });
      const reason = [hostStarted, agentStarted].map((r) => (r.status === 'rejected' ? (r.reason as Error).message : '')).filter(Boolean);
      throw new Error(`sandbox programs did not start: ${reason.join('; ') || 'unexpected ready line'}`);
    }
    return new SandboxPair(id, dir, heapMb, settings.bwrap !== undefined, agent, hosts, settings);
  }

  /** The sidecar host serving the run (null before the assignment) and the session's TCP port. */
  get sidecar(): { host: SidecarHost | null; port: number } {
    return { host: this.host, port: this.port };
  }

  stderrTail(): string {
    return this.agent.stderrTail();
  }

  alive(): boolean {
    if (this.stopping !== undefined || !this.agent.running()) return false;
    return this.host === null || this.host.state(this.id) !== 'gone';
  }

  /**
   * The session is the sandbox's life once it holds the run's end: the agent exits as soon as it
   * has handed its result over, and the session delivers it (or is dropped when it gives up). A
   * session gone (its host died, or it could not deliver the end) is the sandbox gone.
   */
  state(): SandboxState {
    if (this.stopping !== undefined) return 'gone';
    if (this.host === null) return this.agent.running() ? 'running' : 'gone';
    const session = this.host.state(this.id);
    if (session === 'gone') return 'gone';
    if (session === 'ending') return 'ending';
    return this.agent.running() ? 'running' : 'gone';
  }

  /** Writes the workspace, sets the ceilings, then assigns the sidecar and, once it serves the run, the agent. */
  async assign(spec: SandboxSpec): Promise<void> {
    const workspace = path.join(this.dir, 'workspace');
    await writeWorkspace(workspace, spec.workspace);
    if (this.settings.cgroupBase) {
      try {
        this.cgroupDir = await confineToCgroup(this.settings.cgroupBase, this.id, spec.limits, await processTree(this.agent.pid));
      } catch (err) {
        this.settings.log?.warn('sandbox runs without its cgroup ceilings', { sandboxId: this.id, error: (err as Error).message });
      }
    }
    const socketPath = path.join(this.dir, 'ipc', SIDECAR_SOCKET_NAME);
    // the session serves only whoever presents this: its agent, which gets it on stdin
    const token = randomBytes(32).toString('base64url');
    const host = await this.hosts.current();
    this.host = host;
    this.port = await host.open(this.id, { ...spec.sidecar, token, filesDir: path.join(this.dir, 'files'), socketPath: this.confined ? socketPath : undefined }, ASSIGN_TIMEOUT_MS);
    // the agent learns here whether it is confined and which shell it may offer its model
    const shell = this.settings.shell ?? null;
    this.agent.send(
      this.confined
        ? { workspace: SANDBOX_WORKSPACE, sidecarUrl: 'http://sidecar', sidecarToken: token, sidecarSocket: `${SANDBOX_IPC_DIR}/${SIDECAR_SOCKET_NAME}`, confined: true, shell }
        : { workspace, sidecarUrl: `http://127.0.0.1:${this.port}`, sidecarToken: token, confined: false, shell },
    );
  }

  /** Closes the run's session, SIGTERMs the agent (SIGKILL after the grace), then removes the folder and the cgroup. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await Promise.all([this.host?.close(this.id), this.agent.terminate(STOP_GRACE_MS)]);
      await rm(this.dir, { recursive: true, force: true });
      if (this.cgroupDir) {
        await removeCgroup(this.cgroupDir).catch((err: Error) =>
          this.settings.log?.warn('sandbox cgroup left behind', { sandboxId: this.id, error: err.message }),
        );
      }
    })();
    return this.stopping;
  }

  /** For the parent's exit hook: no waiting, no cleanup beyond the kill (the host is the adapter's). */
  killNow(): void {
    this.agent.killNow();
  }
}
