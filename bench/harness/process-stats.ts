// The sandbox processes of a platform process, found in /proc, their memory and CPU time. The process
// adapter spawns each program as a direct child of the platform: the sidecar (node
// dist/sidecar.cjs, working folder = the sandbox folder) and the agent runtime (node
// dist/agent-runtime.cjs, or bwrap around it when confined; working folder = <sandbox>/workspace).
import fs from 'node:fs';
import path from 'node:path';

/** USER_HZ: the unit of the CPU times in /proc/<pid>/stat (100 on every Linux port we run on) */
const CLOCK_TICKS = 100;

export interface ProcessMemory {
  pid: number;
  command: string;
  rss_mb: number;
  pss_mb: number;
}

export interface SandboxProcesses {
  dir: string;
  /** the workspace holds the run's files once the pair is assigned; a waiting pair's is empty */
  assigned: boolean;
  sidecar: number[];
  /** the agent's whole tree: bwrap's helper processes and node */
  agent: number[];
}

function children(): Map<number, number[]> {
  const byParent = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // the command sits in parentheses and may hold spaces: fields resume after the last ')'
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const list = byParent.get(ppid) ?? [];
    list.push(Number(entry));
    byParent.set(ppid, list);
  }
  return byParent;
}

function subtree(pid: number, byParent: Map<number, number[]>): number[] {
  const out = [pid];
  for (const c of byParent.get(pid) ?? []) out.push(...subtree(c, byParent));
  return out;
}

function commandOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return '';
  }
}

function cwdOf(pid: number): string {
  try {
    return fs.readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return '';
  }
}

/** Every sandbox (waiting or assigned) of the platform process `platformPid`. */
export function sandboxesOf(platformPid: number): SandboxProcesses[] {
  const byParent = children();
  const byDir = new Map<string, SandboxProcesses>();
  const entry = (dir: string) => {
    let s = byDir.get(dir);
    if (!s) {
      let assigned = false;
      try {
        assigned = fs.readdirSync(path.join(dir, 'workspace')).length > 0;
      } catch {
        // removed meanwhile
      }
      s = { dir, assigned, sidecar: [], agent: [] };
      byDir.set(dir, s);
    }
    return s;
  };
  for (const child of byParent.get(platformPid) ?? []) {
    const tree = subtree(child, byParent);
    const commands = tree.map(commandOf);
    if (commands[0].includes('dist/sidecar.cjs')) entry(cwdOf(child)).sidecar.push(...tree);
    else if (commands.some((c) => c.includes('dist/agent-runtime.'))) entry(path.dirname(cwdOf(child))).agent.push(...tree);
  }
  return [...byDir.values()];
}

/** Rss and Pss of one process from /proc/<pid>/smaps_rollup; null once it is gone. */
export function memoryOf(pid: number): ProcessMemory | null {
  let rollup: string;
  try {
    rollup = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  } catch {
    return null;
  }
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? 0);
  return { pid, command: commandOf(pid).slice(0, 120), rss_mb: kb('Rss') / 1024, pss_mb: kb('Pss') / 1024 };
}

export function rssOf(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/**
 * A process's /proc/<pid>/stat field `n` (1-based over the whole line: state 3, utime 14, stime 15,
 * cutime 16, cstime 17, starttime 22) as read once; null once the process is gone.
 */
export function statFields(pid: number): ((n: number) => string) | null {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // the command may hold spaces and parentheses: the fields start after its last ')'
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (n) => f[n - 3]!;
}

/** Seconds of CPU for a count of clock ticks. */
export const ticksToSeconds = (ticks: number) => ticks / CLOCK_TICKS;

/** CPU seconds of a process (user + system) and of its children it has reaped; null once it is gone. */
export function cpuOf(pid: number): { own: number; reaped_children: number } | null {
  const field = statFields(pid);
  if (!field) return null;
  const ticks = (n: number) => Number(field(n));
  return { own: ticksToSeconds(ticks(14) + ticks(15)), reaped_children: ticksToSeconds(ticks(16) + ticks(17)) };
}

/** CPU seconds of every process whose command line contains `needle`, machine-wide. */
export function cpuOfAll(needle: string): number {
  let total = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    if (!commandOf(Number(entry)).includes(needle)) continue;
    total += cpuOf(Number(entry))?.own ?? 0;
  }
  return total;
}
