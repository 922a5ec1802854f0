// Waiting for a sandbox program's ready line without mistaking slowness for death. Under load a
// niced program may take longer than its ready timeout to start; killing it then and starting
// another only adds a second start to the load (1.3-1.5 agent starts per run were seen at 10
// runs in flight). So the timeout is a check, not a verdict: when it passes, the program's
// liveness is looked at, and the wait goes on, a timeout at a time up to a ceiling, while the
// program lives and is runnable, was held (stopped), or used CPU since the last look. A program
// that exited fails at once (as before); one that is alive but idle, neither runnable nor
// progressing, for a whole timeout is stuck and fails as before.
import { readFile } from 'node:fs/promises';
import { processTree } from './cgroup.ts';

/** How a program looks when its ready timeout has passed. */
export type Liveness = 'progressing' | 'stalled' | 'dead';

/** Thrown by nextLine when the time ran out with the program still there. */
export class NoAnswerError extends Error {}

/** How many ready timeouts a live, progressing program is given in all. */
export const READY_CEILING_TIMEOUTS = 5;

export interface LineSource {
  nextLine(timeoutMs: number): Promise<Record<string, unknown>>;
}

/**
 * The program's next line, waiting `timeoutMs` at a time while `liveness` says it is progressing,
 * at most `ceilingMs` in all; `onExtended` hears each extension (for the log).
 */
export async function readyLine(
  program: LineSource,
  opts: { timeoutMs: number; ceilingMs?: number; liveness: () => Promise<Liveness>; onExtended?: (waitedMs: number) => void },
): Promise<Record<string, unknown>> {
  const started = Date.now();
  const ceiling = opts.ceilingMs ?? opts.timeoutMs * READY_CEILING_TIMEOUTS;
  let extensions = 0;
  for (;;) {
    try {
      return await program.nextLine(Math.min(opts.timeoutMs, Math.max(1, ceiling - (Date.now() - started))));
    } catch (err) {
      if (!(err instanceof NoAnswerError)) throw err;
      const waited = Date.now() - started;
      if (waited >= ceiling || (await opts.liveness()) !== 'progressing') {
        throw extensions > 0 ? new NoAnswerError(`${err.message} (${waited} ms in all: the wait was extended ${extensions} times while it lived and progressed)`) : err;
      }
      extensions += 1;
      opts.onExtended?.(waited);
    }
  }
}

interface ProcessReading {
  /** the state letter of /proc/<pid>/stat: R runnable, S/D sleeping, T/t stopped, Z zombie */
  state: string;
  cpu: number;
}

async function readProcess(pid: number): Promise<ProcessReading | null> {
  let stat: string;
  try {
    stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields after the command: state 3, utime 14, stime 15 (1-based over the whole line)
  return { state: f[0], cpu: Number(f[14 - 3]) + Number(f[15 - 3]) };
}

/**
 * Liveness of a process and its descendants (a confined agent is bwrap, bwrap's init in the PID
 * namespace and node) from the host's /proc: dead when none is left but zombies; progressing
 * when one is runnable or stopped (held, not dead: it goes on once continued) or the tree used
 * CPU since the previous look; stalled otherwise.
 */
export function processLiveness(pid: number): () => Promise<Liveness> {
  // a program is timed from its start, when its CPU time was 0
  let lastCpu = 0;
  return async () => {
    const readings = (await Promise.all((await processTree(pid)).map(readProcess))).filter((r): r is ProcessReading => r !== null && r.state !== 'Z' && r.state !== 'X');
    if (readings.length === 0) return 'dead';
    const cpu = readings.reduce((s, r) => s + r.cpu, 0);
    const moved = cpu > lastCpu;
    lastCpu = cpu;
    return moved || readings.some((r) => r.state === 'R' || r.state === 'T' || r.state === 't') ? 'progressing' : 'stalled';
  };
}
