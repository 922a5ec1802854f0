// One sandbox of the process backend: a sidecar and an agent runtime spawned together, ready and
// waiting for their assignment, used for one run only. Its folder holds the agent's workspace,
// the sidecar's published files and (when confined) the sidecar's socket.
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { randomBase62 } from '../../lib/ids.ts';
import type { Logger } from '../../lib/log.ts';
import { END_HELD } from '../../lib/warm-start.ts';
import type { SandboxSpec, SandboxState } from './adapter.ts';
import { confineToCgroup, processTree, removeCgroup } from './cgroup.ts';
import { confinedArgv, SANDBOX_IPC_DIR, SANDBOX_PATH_ENV, SANDBOX_WORKSPACE, sandboxNodePath, SIDECAR_SOCKET_NAME } from './confinement.ts';
import { cachedPairArgv } from './code-cache.ts';
import { spawnPrograms, type ProgramProcess } from './program-process.ts';
import { processLiveness, readyLine } from './readiness.ts';
import { writeWorkspace } from './workspace-writer.ts';

const READY_TIMEOUT_MS = 30_000;
const ASSIGN_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 2_000;
/** the sidecar relays bodies of up to 32 MiB; a fixed heap keeps a runaway one from growing without bound */
export const SIDECAR_HEAP_MB = 256;
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
  const env: NodeJS.ProcessEnv = { HOME: home };
  for (const key of SIDECAR_ENV_KEYS) if (process.env[key] !== undefined) env[key] = process.env[key];
  return env;
}

export class SandboxPair {
  private cgroupDir: string | undefined;
  private stopping: Promise<void> | undefined;
  /** the sidecar said it holds the run's end */
  private endHeld = false;
  /** settles when either program has exited */
  readonly ended: Promise<void>;

  private constructor(
    readonly id: string,
    readonly dir: string,
    readonly heapMb: number,
    readonly confined: boolean,
    readonly sidecar: ProgramProcess,
    readonly agent: ProgramProcess,
    readonly sidecarPort: number,
    private readonly settings: PairSettings,
  ) {
    this.ended = Promise.race([sidecar.exited, agent.exited]);
  }

  static async spawn(settings: PairSettings, heapMb: number): Promise<SandboxPair> {
    const id = `sbx_${randomBase62(20)}`;
    const dir = path.join(settings.workDir, id);
    const workspace = path.join(dir, 'workspace');
    await mkdir(workspace, { recursive: true });
    await mkdir(path.join(dir, 'files'));
    await mkdir(path.join(dir, 'ipc'));

    const node = sandboxNodePath();
    const { sidecar: sidecarArgv, agent: agentArgv } = await cachedPairArgv(settings.root, node, {
      sidecar: [`--max-old-space-size=${SIDECAR_HEAP_MB}`, ...NODE_MEMORY_FLAGS],
      agent: [`--max-old-space-size=${heapMb}`, ...NODE_MEMORY_FLAGS],
    }, settings.log);
    const agentCommand = [node, ...agentArgv];
    const [sidecar, agent] = await spawnPrograms([
      ['sidecar', node, sidecarArgv, { cwd: dir, env: sidecarEnv(dir), niceness: SANDBOX_NICENESS }],
      // the agent's environment names no secret and no setting: PATH and HOME only
      settings.bwrap
        ? ['agent-runtime', settings.bwrap, confinedArgv({ root: settings.root, workspaceDir: workspace, ipcDir: path.join(dir, 'ipc'), bwrap: settings.bwrap }, agentCommand), {
            cwd: workspace,
            env: { PATH: SANDBOX_PATH_ENV, HOME: SANDBOX_WORKSPACE },
            niceness: SANDBOX_NICENESS,
          }]
        : ['agent-runtime', agentCommand[0], agentCommand.slice(1), {
            cwd: workspace,
            env: { PATH: process.env.PATH ?? SANDBOX_PATH_ENV, HOME: workspace },
            niceness: SANDBOX_NICENESS,
          }],
    ]).catch(async (err: Error) => {
      await rm(dir, { recursive: true, force: true });
      throw err;
    });

    // slow is not dead: under load a start outlasts its timeout, and starting another pair instead would only add to the load
    const ready = (program: ProgramProcess, label: string) => readyLine(program, {
      timeoutMs: settings.readyTimeoutMs ?? READY_TIMEOUT_MS,
      liveness: processLiveness(program.pid),
      onExtended: (waitedMs) => settings.log?.info('a sandbox program is slow to start but alive and progressing; waiting on', { sandboxId: id, program: label, waitedMs }),
    });
    const [sidecarReady, agentReady] = await Promise.allSettled([ready(sidecar, 'sidecar'), ready(agent, 'agent-runtime')]);
    const port = sidecarReady.status === 'fulfilled' ? sidecarReady.value.port : undefined;
    if (sidecarReady.status === 'rejected' || agentReady.status === 'rejected' || typeof port !== 'number' || agentReady.value.ready !== true) {
      await Promise.all([sidecar.terminate(0), agent.terminate(0)]);
      await rm(dir, { recursive: true, force: true });
      const reason = [sidecarReady, agentReady].map((r) => (r.status === 'rejected' ? (r.reason as Error).message : '')).filter(Boolean);
      throw new Error(`sandbox programs did not start: ${reason.join('; ') || 'unexpected ready line'}`);
    }
    return new SandboxPair(id, dir, heapMb, settings.bwrap !== undefined, sidecar, agent, port, settings);
  }

  stderrTail(): string {
    return this.sidecar.stderrTail() + this.agent.stderrTail();
  }

  alive(): boolean {
    return this.stopping === undefined && this.sidecar.running() && this.agent.running();
  }

  /**
   * The sidecar is the sandbox's life once it holds the run's end: the agent exits as soon as it
   * has handed its result over, and the sidecar delivers it (or exits when it gives up).
   */
  state(): SandboxState {
    if (this.stopping !== undefined || !this.sidecar.running()) return 'gone';
    if (this.endHeld) return 'ending';
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
    // the sidecar serves only whoever presents this: its agent, which gets it on stdin like the sidecar
    const token = randomBytes(32).toString('base64url');
    this.sidecar.send({ ...spec.sidecar, token, filesDir: path.join(this.dir, 'files'), socketPath: this.confined ? socketPath : undefined });
    const ack = await this.sidecar.nextLine(ASSIGN_TIMEOUT_MS);
    if (ack.assigned !== true) throw new Error('the sidecar did not take its assignment');
    this.sidecar.watchLines((line) => {
      if (line[END_HELD] === true) this.endHeld = true;
    });
    // the agent learns here whether it is confined and which shell it may offer its model
    const shell = this.settings.shell ?? null;
    this.agent.send(
      this.confined
        ? { workspace: SANDBOX_WORKSPACE, sidecarUrl: 'http://sidecar', sidecarToken: token, sidecarSocket: `${SANDBOX_IPC_DIR}/${SIDECAR_SOCKET_NAME}`, confined: true, shell }
        : { workspace, sidecarUrl: `http://127.0.0.1:${this.sidecarPort}`, sidecarToken: token, confined: false, shell },
    );
  }

  /** SIGTERM both programs, SIGKILL after the grace, then remove the folder and the cgroup. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await Promise.all([this.sidecar.terminate(STOP_GRACE_MS), this.agent.terminate(STOP_GRACE_MS)]);
      await rm(this.dir, { recursive: true, force: true });
      if (this.cgroupDir) {
        await removeCgroup(this.cgroupDir).catch((err: Error) =>
          this.settings.log?.warn('sandbox cgroup left behind', { sandboxId: this.id, error: err.message }),
        );
      }
    })();
    return this.stopping;
  }

  /** For the parent's exit hook: no waiting, no cleanup beyond the kill. */
  killNow(): void {
    this.sidecar.killNow();
    this.agent.killNow();
  }
}
