// Per-sandbox memory and CPU ceilings with cgroup v2, best effort: used when the unified
// hierarchy is mounted at the cgroup root with the memory and cpu controllers and we may write
// it (root); skipped with a stated reason otherwise (cgroup v1 or hybrid hosts, read-only mounts).
import { mkdir, readFile, readdir, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

export const DEFAULT_CGROUP_ROOT = '/sys/fs/cgroup';
const GROUP_NAME = 'agent-platform-sandboxes';
const CPU_PERIOD_US = 100_000;

export type CgroupSupport = { available: true; base: string } | { available: false; reason: string };

async function controllers(file: string): Promise<Set<string>> {
  return new Set((await readFile(file, 'utf8')).trim().split(/\s+/).filter(Boolean));
}

/** Detects cgroup v2 and prepares the parent group every sandbox group goes under. */
export async function prepareCgroups(root = DEFAULT_CGROUP_ROOT): Promise<CgroupSupport> {
  let available: Set<string>;
  try {
    available = await controllers(path.join(root, 'cgroup.controllers'));
  } catch {
    return { available: false, reason: `no cgroup v2 hierarchy at ${root} (cgroup v1 or hybrid host)` };
  }
  const missing = ['memory', 'cpu'].filter((c) => !available.has(c));
  if (missing.length > 0) return { available: false, reason: `cgroup v2 at ${root} lacks the ${missing.join(' and ')} controller` };
  const base = path.join(root, GROUP_NAME);
  try {
    const enabled = await controllers(path.join(root, 'cgroup.subtree_control'));
    if (!enabled.has('memory') || !enabled.has('cpu')) await writeFile(path.join(root, 'cgroup.subtree_control'), '+memory +cpu');
    await mkdir(base, { recursive: true });
    await writeFile(path.join(base, 'cgroup.subtree_control'), '+memory +cpu');
  } catch (err) {
    return { available: false, reason: `cgroup v2 at ${root} is not writable here: ${(err as Error).message}` };
  }
  return { available: true, base };
}

/** The process and all its descendants (a confined agent runs under two bwrap processes). */
export async function processTree(pid: number): Promise<number[]> {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    let tasks: string[];
    try {
      tasks = await readdir(`/proc/${out[i]}/task`);
    } catch {
      continue;
    }
    for (const task of tasks) {
      try {
        const children = (await readFile(`/proc/${out[i]}/task/${task}/children`, 'utf8')).trim();
        if (children) out.push(...children.split(/\s+/).map(Number));
      } catch {
        // the task ended meanwhile
      }
    }
  }
  return out;
}

/** Creates the sandbox's group with its ceilings and moves the processes into it; returns its path. */
export async function confineToCgroup(base: string, sandboxId: string, limits: { memoryMb: number; cpus: number }, pids: number[]): Promise<string> {
  const dir = path.join(base, sandboxId);
  await mkdir(dir);
  await writeFile(path.join(dir, 'memory.max'), String(Math.floor(limits.memoryMb * 1024 * 1024)));
  // no swap: the ceiling is the ceiling (absent when the kernel has no swap accounting)
  await writeFile(path.join(dir, 'memory.swap.max'), '0').catch(() => undefined);
  await writeFile(path.join(dir, 'cpu.max'), `${Math.max(1000, Math.round(limits.cpus * CPU_PERIOD_US))} ${CPU_PERIOD_US}`);
  for (const pid of pids) {
    await writeFile(path.join(dir, 'cgroup.procs'), String(pid)).catch((err: NodeJS.ErrnoException) => {
      // a process that already ended is nothing to confine
      if (err.code !== 'ESRCH') throw err;
    });
  }
  return dir;
}

/** Removes a sandbox group once its processes are gone (the kernel frees it a moment after exit). */
export async function removeCgroup(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      await rmdir(dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EBUSY') throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`cgroup ${dir} is still busy`);
}
