// Where the CPU time of runs goes, every process counted: the platform process itself, its
// sandboxes' processes (sidecar, agent runtime with bubblewrap's processes, polled from /proc
// so the agent inside bubblewrap's PID namespace is seen: tree-cpu.ts), the embedded Restate
// server, the PostgreSQL backends serving the benchmark's database and the benchmark process
// (fake model and client); beside `node -e 0` started now and then in the same window (the
// floor a run's two fresh programs stand against), and the machine's busy time, which shows
// what other work took meanwhile. The platform's reaped-children time, the old reading that
// missed confined agents, is kept beside for comparison. Where the sandboxes have cgroup v2
// groups, the parent group's usage (removed groups' time stays in it) is shown as a cross-check:
// it covers the agents from their assignment on only.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { round } from '../support.ts';
import { cpuOf, cpuOfAll } from './process-stats.ts';
import { TreeCpuPoller } from './tree-cpu.ts';

export interface PlatformProcesses {
  platformPid: number;
  /** holds restate.pid */
  dataDir: string;
  /** PostgreSQL backends show the database name in their command line */
  dbName: string;
}

/** the parent of every sandbox's cgroup (activities/sandbox/cgroup.ts) */
const SANDBOX_CGROUP_STAT = '/sys/fs/cgroup/agent-platform-sandboxes/cpu.stat';
const POLL_MS = 20;
const NODE_E_0_EVERY_MS = 2_000;

interface Snapshot {
  platform: number;
  platform_reaped_children: number;
  restate: number;
  postgres_backends: number;
  bench_process: number;
  machine: number;
  cgroup_sandboxes: number | null;
}

/** Machine-wide busy CPU seconds (every core), from /proc/stat. */
function machineCpu(): number {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: busy = all but idle and iowait
  return (f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) / 100;
}

function cgroupUsage(): number | null {
  try {
    const usec = /^usage_usec (\d+)/m.exec(fs.readFileSync(SANDBOX_CGROUP_STAT, 'utf8'))?.[1];
    return usec === undefined ? null : Number(usec) / 1e6;
  } catch {
    return null;
  }
}

function restatePid(dataDir: string): number {
  return Number(fs.readFileSync(path.join(dataDir, 'restate.pid'), 'utf8'));
}

function snapshot(at: PlatformProcesses): Snapshot {
  const platform = cpuOf(at.platformPid);
  const own = process.cpuUsage();
  return {
    platform: platform?.own ?? 0,
    platform_reaped_children: platform?.reaped_children ?? 0,
    restate: cpuOf(restatePid(at.dataDir))?.own ?? 0,
    postgres_backends: cpuOfAll(` ${at.dbName} `),
    bench_process: (own.user + own.system) / 1e6,
    machine: machineCpu(),
    cgroup_sandboxes: cgroupUsage(),
  };
}

/** Own CPU seconds of this process's reaped children (`node -e 0` is one of them, waited for alone). */
function reapedChildrenOfThisProcess(): number {
  return cpuOf(process.pid)?.reaped_children ?? 0;
}

/** One `node -e 0`, its CPU seconds from this process's reaped-children time around it. */
async function nodeE0(): Promise<number> {
  const before = reapedChildrenOfThisProcess();
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', () => resolve());
  });
  return reapedChildrenOfThisProcess() - before;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : 0;
}

/** CPU seconds per second of each part with no run in flight (the pool full, its pairs idle). */
export type IdleRates = Record<string, number>;

/**
 * Counts from start() to stop(). The platform's children are named by their command: the
 * sidecar (dist/sidecar.cjs), the agent runtime (dist/agent-runtime.cjs or its startup snapshot dist/agent-runtime.<hash>.blob, or bwrap around it),
 * Restate (its pid), anything else.
 */
export class RunCpuMeter {
  private readonly before: Snapshot;
  private readonly tree: TreeCpuPoller;
  private readonly nodeSamples: number[] = [];
  private sampling: Promise<void>;
  private stopped = false;
  private readonly startedAt = Date.now();

  private constructor(private readonly at: PlatformProcesses, sampleEveryMs: number | null) {
    const restate = restatePid(at.dataDir);
    this.tree = new TreeCpuPoller(at.platformPid, (pid, command) => {
      if (pid === restate) return 'restate';
      if (command.includes('dist/sidecar.cjs')) return 'sidecar';
      if (command.includes('dist/agent-runtime.')) return 'agent_runtime'; // its bundle, or its startup snapshot
      return 'other_children';
    }, POLL_MS).start();
    this.before = snapshot(at);
    this.sampling = sampleEveryMs === null ? Promise.resolve() : this.sampleEvery(sampleEveryMs);
  }

  /**
   * Counting from now; `node -e 0` every `sampleEveryMs` beside the runs (under load), or only
   * when the caller asks (sampleNode(): between runs one at a time, so none is slowed by it).
   */
  static start(at: PlatformProcesses, opts: { sampleEveryMs: number | null } = { sampleEveryMs: NODE_E_0_EVERY_MS }): RunCpuMeter {
    return new RunCpuMeter(at, opts.sampleEveryMs);
  }

  private async sampleEvery(ms: number): Promise<void> {
    while (!this.stopped) {
      await this.sampleNode();
      await new Promise((r) => setTimeout(r, ms));
    }
  }

  /** One `node -e 0` now. */
  async sampleNode(): Promise<void> {
    this.nodeSamples.push(await nodeE0());
  }

  /**
   * What each part uses per second with nothing to do, over `seconds`: subtracted from a window's
   * total, it leaves the runs' own (marginal) share.
   */
  static async idle(at: PlatformProcesses, seconds: number): Promise<IdleRates> {
    const meter = new RunCpuMeter(at, null);
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const { parts, seconds: took } = meter.finish();
    return Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, v / took]));
  }

  private finish() {
    this.stopped = true;
    this.tree.stop();
    const after = snapshot(this.at);
    const seconds = (Date.now() - this.startedAt) / 1000;
    const delta = (k: Exclude<keyof Snapshot, 'cgroup_sandboxes'>) => Math.max(0, after[k] - this.before[k]);
    const tree = this.tree.totals();
    const parts = {
      agent_runtime: tree.agent_runtime ?? 0,
      sidecar: tree.sidecar ?? 0,
      platform: delta('platform'),
      // the engine's own children, if any, are in its tree
      engine_restate: Math.max(delta('restate'), tree.restate ?? 0),
      postgres_backends: delta('postgres_backends'),
    };
    return { after, seconds, delta, tree, parts };
  }

  /** Stops counting; per-run figures for `runs` runs (and their marginal share, given the idle rates). */
  async stop(runs: number, idle?: IdleRates) {
    const { after, seconds, delta, tree, parts } = this.finish();
    await this.sampling;
    const n = Math.max(1, runs);
    const run = Object.values(parts).reduce((s, v) => s + v, 0);
    const marginal = idle && Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, Math.max(0, v - (idle[k] ?? 0) * seconds)]));
    const marginalRun = marginal && Object.values(marginal).reduce((s, v) => s + v, 0);
    const nodeE0Median = median(this.nodeSamples);
    const bench = delta('bench_process');
    const others = tree.other_children ?? 0;
    const machine = delta('machine');
    const perRun = (v: number) => round(v / n, 3);
    return {
      runs_counted: runs,
      method: `the platform's process tree polled from /proc every ${POLL_MS} ms (confined agents included), over ${this.tree.polls} polls`,
      per_part: Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, perRun(v)])),
      all_parts: perRun(run),
      node_e_0: { samples: this.nodeSamples.length, median_cpu_s: round(nodeE0Median, 3) },
      ratio_to_two_node_e_0: nodeE0Median > 0 ? round(run / n / (2 * nodeE0Median), 2) : null,
      // less what each part uses anyway with nothing to do, over the same window
      marginal: marginal ? {
        idle_cores_subtracted: Object.fromEntries(Object.entries(idle!).map(([k, v]) => [k, round(v, 3)])),
        per_part: Object.fromEntries(Object.entries(marginal).map(([k, v]) => [k, perRun(v)])),
        all_parts: perRun(marginalRun!),
        ratio_to_two_node_e_0: nodeE0Median > 0 ? round(marginalRun! / n / (2 * nodeE0Median), 2) : null,
      } : null,
      processes_seen: this.tree.processes(),
      // programs the platform started in the window, per run: more than one agent per run is a
      // start wasted; the process backend's sidecar host is started once per worker, not per run
      agent_starts_per_run: round((this.tree.started().agent_runtime ?? 0) / n, 2),
      sidecar_starts_per_run: round((this.tree.started().sidecar ?? 0) / n, 2),
      other_platform_children: { cpu_s: perRun(others), commands: this.tree.commands('other_children') },
      bench_process_fake_model_and_client: perRun(bench),
      old_method_platform_reaped_children: perRun(delta('platform_reaped_children')),
      cgroup_v2_sandboxes_after_assignment:
        after.cgroup_sandboxes !== null && this.before.cgroup_sandboxes !== null ? perRun(after.cgroup_sandboxes - this.before.cgroup_sandboxes) : null,
      machine_busy_cores: round(machine / seconds, 2),
      others_on_the_machine_busy_cores: round(Math.max(0, machine - run - bench - others - this.nodeSamples.reduce((a, b) => a + b, 0)) / seconds, 2),
    };
  }
}
