// CPU time of every process under a root process, including those inside bubblewrap's PID
// namespace: a confined agent's node is reaped by bwrap's init inside the namespace, and its time
// never reaches the platform's reaped-children counter (a 300 ms busy loop shows 0.00 CPU-s
// there). So the tree is polled from the host's /proc: each process's own user + system time,
// last seen, kept per process (pid and start time, so a reused pid is a new process) after it
// has ended; a process already running at the first poll counts from there. What a process uses between its last poll and its exit is missed: at most one
// interval of one core per process, hence a short interval.
import fs from 'node:fs';
import { statFields, ticksToSeconds } from './process-stats.ts';

interface Seen {
  part: string;
  cpu: number;
  /** its CPU time when the first poll found it running already: not the window's */
  before: number;
  /** running at the first poll */
  already: boolean;
}

/** The direct children of `pid` (every thread's), from /proc/<pid>/task/<tid>/children. */
function childrenOf(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const task of tasks) {
    try {
      const list = fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      if (list) for (const c of list.split(/\s+/)) out.push(Number(c));
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** Own CPU seconds and start time (the process's identity with its pid); null once it is gone. */
function statOf(pid: number): { cpu: number; start: string } | null {
  const field = statFields(pid);
  return field ? { cpu: ticksToSeconds(Number(field(14)) + Number(field(15))), start: field(22) } : null;
}

export function commandOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return '';
  }
}

/**
 * Polls the descendants of `rootPid` every `intervalMs`. Each direct child of the root names the
 * part its whole subtree counts under (`partOf`, called once per child); the root itself is not
 * counted (its own time is read directly by the caller).
 */
export class TreeCpuPoller {
  private readonly seen = new Map<string, Seen>();
  private readonly partOfChild = new Map<string, string>();
  private readonly commandsOf = new Map<string, Set<string>>();
  /** direct children of the root named after the first poll, by part (one per program started) */
  private readonly childrenStarted = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private rootCommand: string | undefined;
  polls = 0;

  constructor(
    private readonly rootPid: number,
    private readonly partOf: (childPid: number, command: string) => string,
    readonly intervalMs = 20,
  ) {}

  start(): this {
    this.poll();
    this.timer = setInterval(() => this.poll(), this.intervalMs);
    return this;
  }

  /** One last poll, then no more. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.poll();
  }

  poll(): void {
    const first = this.polls === 0;
    this.polls += 1;
    this.rootCommand ??= commandOf(this.rootPid);
    for (const child of childrenOf(this.rootPid)) {
      const stat = statOf(child);
      if (!stat) continue;
      const key = `${child}:${stat.start}`;
      let part = this.partOfChild.get(key);
      if (part === undefined) {
        const command = commandOf(child);
        // forked but not yet exec'd: it still shows the root's command line (or none); named at a
        // later poll, its time so far is next to nothing
        if (!command || command === this.rootCommand) continue;
        part = this.partOf(child, command);
        this.partOfChild.set(key, part);
        if (!first) this.childrenStarted.set(part, (this.childrenStarted.get(part) ?? 0) + 1);
        const seen = this.commandsOf.get(part) ?? new Set<string>();
        seen.add(command.slice(0, 100));
        this.commandsOf.set(part, seen);
      }
      const stack = [child];
      while (stack.length) {
        const pid = stack.pop()!;
        const s = pid === child ? stat : statOf(pid);
        if (!s) continue;
        const k = `${pid}:${s.start}`;
        const prev = this.seen.get(k);
        if (!prev) this.seen.set(k, { part, cpu: s.cpu, before: first ? s.cpu : 0, already: first });
        else if (s.cpu > prev.cpu) prev.cpu = s.cpu;
        stack.push(...childrenOf(pid));
      }
    }
  }

  /** CPU seconds since start() by part, ended processes included. */
  totals(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const { part, cpu, before } of this.seen.values()) out[part] = (out[part] ?? 0) + cpu - before;
    return out;
  }

  /** The distinct command lines (their start) of the root's children counted under `part`. */
  commands(part: string): string[] {
    return [...(this.commandsOf.get(part) ?? [])];
  }

  /** Programs the root started after the first poll (its direct children), by part. */
  started(): Record<string, number> {
    return Object.fromEntries(this.childrenStarted);
  }

  /** Processes seen so far by part; `started` only those started after the first poll. */
  processes(started = false): Record<string, number> {
    const out: Record<string, number> = {};
    for (const { part, already } of this.seen.values()) if (!started || !already) out[part] = (out[part] ?? 0) + 1;
    return out;
  }
}
