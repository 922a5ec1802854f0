// Where the CPU time of a run goes: the platform process, its ended sandboxes (their CPU time is
// added to the platform's reaped-children time), the embedded Restate server, the PostgreSQL
// backends serving the benchmark's database, and the benchmark process (fake model and client);
// next to the machine's busy time, which shows what other work took meanwhile.
import fs from 'node:fs';
import path from 'node:path';
import { round } from '../support.ts';
import { cpuOf, cpuOfAll } from './process-stats.ts';

export interface PlatformProcesses {
  platformPid: number;
  /** holds restate.pid */
  dataDir: string;
  /** PostgreSQL backends show the database name in their command line */
  dbName: string;
}

export interface CpuSnapshot {
  platform: number;
  sandboxes: number;
  restate: number;
  postgres_backends: number;
  bench_process: number;
  machine: number;
}

/** Machine-wide busy CPU seconds (every core), from /proc/stat. */
function machineCpu(): number {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: busy = all but idle and iowait
  return (f[0] + f[1] + f[2] + f[5] + f[6] + f[7]) / 100;
}

/** Where CPU time goes: the platform, its ended sandboxes (reaped children), Restate, the benchmark database's backends, this process. */
export function cpuSnapshot(at: PlatformProcesses): CpuSnapshot {
  const platform = cpuOf(at.platformPid);
  const restatePid = Number(fs.readFileSync(path.join(at.dataDir, 'restate.pid'), 'utf8'));
  const own = process.cpuUsage();
  return {
    platform: platform?.own ?? 0,
    sandboxes: platform?.reaped_children ?? 0,
    restate: cpuOf(restatePid)?.own ?? 0,
    postgres_backends: cpuOfAll(` ${at.dbName} `),
    bench_process: (own.user + own.system) / 1e6,
    machine: machineCpu(),
  };
}

export function cpuPerRun(before: CpuSnapshot, after: CpuSnapshot, runs: number, seconds: number) {
  const per = (k: keyof CpuSnapshot) => round(Math.max(0, after[k] - before[k]) / Math.max(1, runs), 3);
  const ours = (['platform', 'sandboxes', 'restate', 'postgres_backends', 'bench_process'] as const).reduce((s, k) => s + Math.max(0, after[k] - before[k]), 0);
  const machine = after.machine - before.machine;
  return {
    runs_counted: runs,
    platform_process: per('platform'), sandboxes_sidecar_and_agent: per('sandboxes'), restate: per('restate'),
    postgres_backends: per('postgres_backends'), bench_process_fake_model_and_client: per('bench_process'),
    all_of_the_above: round(ours / Math.max(1, runs), 3),
    machine_busy_cores: round(machine / seconds, 2),
    others_on_the_machine_busy_cores: round(Math.max(0, machine - ours) / seconds, 2),
  };
}
