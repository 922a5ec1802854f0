// One child program of a sandbox (sidecar or agent runtime): spawned with its stdin kept open as
// a pipe (the programs end when it closes), its stdout read as JSON lines for the warm-start
// handshake, the tail of its stderr kept for diagnostics. The process itself is started and
// owned by the spawner thread (spawner.ts).
import { NoAnswerError } from './readiness.ts';
import { spawnChild, type SpawnedChild } from './spawner.ts';

const STDERR_TAIL_CHARS = 4000;
const MAX_QUEUED_LINES = 16;

export interface ProgramProcess {
  readonly pid: number;
  readonly exited: Promise<void>;
  running(): boolean;
  /** the next JSON line on stdout; rejects if the process exits or the time runs out first (NoAnswerError) */
  nextLine(timeoutMs: number): Promise<Record<string, unknown>>;
  /** hands every later JSON line on stdout (and any still queued) to `listener` instead of nextLine */
  watchLines(listener: (line: Record<string, unknown>) => void): void;
  /** writes one JSON line on stdin */
  send(message: unknown): void;
  stderrTail(): string;
  /** SIGTERM, then SIGKILL after graceMs; resolves once the process is gone */
  terminate(graceMs: number): Promise<void>;
  /** SIGKILL now, synchronously (for the parent's exit hook) */
  killNow(): void;
}

/**
 * Starts a program; `niceness` is set as soon as it has started, before it gets far (the
 * processes it starts, bwrap's, inherit it). Rejects only when the spawn itself is refused.
 */
export async function spawnProgram(
  label: string,
  command: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; niceness?: number },
): Promise<ProgramProcess> {
  const child: SpawnedChild = await spawnChild(command, args, opts);
  let stderr = '';
  let stdoutBuffer = '';
  const lines: string[] = [];
  let waiter: (() => void) | null = null;
  let listener: ((line: Record<string, unknown>) => void) | null = null;
  let gone = false;
  // stdout is fully read once 'close' fires: only then does "no line" mean "no line ever"
  let closed = false;

  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      gone = true;
      resolve();
    });
    // spawn failures (missing binary) end here instead of 'exit'
    child.once('error', (err) => {
      stderr += `${label}: ${err.message}\n`;
      gone = true;
      closed = true;
      waiter?.();
      resolve();
    });
  });
  child.once('close', () => {
    closed = true;
    waiter?.();
  });
  child.on('stderr', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_TAIL_CHARS);
  });
  child.on('stdout', (chunk: string) => {
    stdoutBuffer += chunk;
    let newline: number;
    while ((newline = stdoutBuffer.indexOf('\n')) >= 0) {
      lines.push(stdoutBuffer.slice(0, newline));
      stdoutBuffer = stdoutBuffer.slice(newline + 1);
    }
    // only the handshake lines matter: a chatty program must not grow our memory
    if (stdoutBuffer.length > 64 * 1024) stdoutBuffer = '';
    if (listener) return deliverLines();
    if (lines.length > MAX_QUEUED_LINES) lines.splice(0, lines.length - MAX_QUEUED_LINES);
    if (lines.length > 0) waiter?.();
  });

  const deliverLines = () => {
    for (const line of lines.splice(0)) {
      const parsed = parseLine(line);
      if (parsed) listener?.(parsed);
    }
  };

  const running = () => !gone && child.exitCode === null && child.signalCode === null;

  return {
    pid: child.pid ?? -1,
    exited,
    running,
    nextLine(timeoutMs) {
      return new Promise((resolve, reject) => {
        let timedOut = false;
        const timer = setTimeout(() => {
          timedOut = true;
          settle();
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiter = null;
        };
        const settle = () => {
          const line = lines.shift();
          if (line !== undefined) {
            done();
            const parsed = parseLine(line);
            if (parsed) resolve(parsed);
            else reject(new Error(`${label} printed an unexpected line: ${line.slice(0, 200)}`));
          } else if (closed) {
            done();
            reject(new Error(`${label} exited (${child.exitCode ?? child.signalCode}): ${stderr.trim().slice(-1000)}`));
          } else if (timedOut) {
            done();
            reject(new NoAnswerError(`${label} gave no answer within ${timeoutMs} ms`));
          }
        };
        waiter = settle;
        settle();
      });
    },
    watchLines(watch) {
      listener = watch;
      deliverLines();
    },
    send(message) {
      if (running()) child.writeStdin(`${JSON.stringify(message)}\n`);
    },
    stderrTail: () => stderr,
    async terminate(graceMs) {
      if (!running()) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => {
        if (running()) child.kill('SIGKILL');
      }, graceMs);
      await exited;
      clearTimeout(timer);
    },
    killNow() {
      if (running()) child.kill('SIGKILL');
    },
  };
}

function parseLine(line: string): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(line);
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Starts several programs at once; if one cannot be spawned, the others are stopped and its error thrown. */
export async function spawnPrograms(specs: Array<Parameters<typeof spawnProgram>>): Promise<ProgramProcess[]> {
  const settled = await Promise.allSettled(specs.map((spec) => spawnProgram(...spec)));
  const refused = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (refused) {
    await Promise.all(settled.map((r) => (r.status === 'fulfilled' ? r.value.terminate(0) : undefined)));
    throw refused.reason;
  }
  return settled.map((r) => (r as PromiseFulfilledResult<ProgramProcess>).value);
}
