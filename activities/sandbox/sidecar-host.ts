// The process backend's sidecar host, as the worker sees it: one long-lived sidecar process
// (sidecar/host.ts) serving a session per run, started when the first sandbox needs it, replaced
// by a new one when it dies (every session on it is then gone: their runs end sandbox_lost as with
// a dead per-run sidecar), and ended with the worker (it watches its stdin).
import type { Logger } from '../../lib/log.ts';
import type { ProgramProcess } from './program-process.ts';
import { spawnProgram } from './program-process.ts';
import { processLiveness, readyLine } from './readiness.ts';

const READY_TIMEOUT_MS = 30_000;
const CLOSE_TIMEOUT_MS = 5_000;
const STOP_GRACE_MS = 2_000;

/** What the worker knows of a run's session: serving, holding its end, or gone. */
export type SessionState = 'serving' | 'ending' | 'gone';

export interface HostStart {
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  niceness?: number;
  readyTimeoutMs?: number;
  log?: Logger;
}

interface Waiter<T> {
  resolve(value: T): void;
  reject(err: Error): void;
}

export class SidecarHost {
  /** the sessions the host serves, as its lines told: ending once it holds the run's end */
  private readonly sessions = new Map<string, 'serving' | 'ending'>();
  private readonly opening = new Map<string, Waiter<number>>();
  private readonly closing = new Map<string, () => void>();
  private readonly counting: Array<(n: number) => void> = [];

  private constructor(private readonly program: ProgramProcess) {
    program.watchLines((line) => this.hear(line));
    void program.exited.then(() => {
      const gone = new Error(`the sidecar host exited: ${program.stderrTail().trim().slice(-500)}`);
      for (const waiter of this.opening.values()) waiter.reject(gone);
      for (const done of this.closing.values()) done();
      for (const answer of this.counting.splice(0)) answer(0);
      this.opening.clear();
      this.closing.clear();
      this.sessions.clear();
    });
  }

  static async start(start: HostStart): Promise<SidecarHost> {
    const program = await spawnProgram('sidecar-host', start.command, start.args, { cwd: start.cwd, env: start.env, niceness: start.niceness });
    try {
      const ready = await readyLine(program, {
        timeoutMs: start.readyTimeoutMs ?? READY_TIMEOUT_MS,
        liveness: processLiveness(program.pid),
        onExtended: (waitedMs) => start.log?.info('the sidecar host is slow to start but alive and progressing; waiting on', { waitedMs }),
      });
      if (ready.host !== true) throw new Error('unexpected ready line');
    } catch (err) {
      await program.terminate(0);
      throw new Error(`the sidecar host did not start: ${(err as Error).message}`);
    }
    return new SidecarHost(program);
  }

  get pid(): number {
    return this.program.pid;
  }

  get exited(): Promise<void> {
    return this.program.exited;
  }

  running(): boolean {
    return this.program.running();
  }

  stderrTail(): string {
    return this.program.stderrTail();
  }

  private hear(line: Record<string, unknown>): void {
    const id = typeof line.id === 'string' ? line.id : '';
    switch (line.op) {
      case 'opened': {
        const waiter = this.opening.get(id);
        this.opening.delete(id);
        if (typeof line.port !== 'number') return waiter?.reject(new Error('the sidecar host answered without a port'));
        this.sessions.set(id, 'serving');
        return waiter?.resolve(line.port);
      }
      case 'refused': {
        const waiter = this.opening.get(id);
        this.opening.delete(id);
        return waiter?.reject(new Error(`the sidecar host refused the run: ${String(line.error)}`));
      }
      case 'end_held':
        if (this.sessions.has(id)) this.sessions.set(id, 'ending');
        return;
      case 'lost':
        this.sessions.delete(id);
        return;
      case 'closed': {
        this.sessions.delete(id);
        const done = this.closing.get(id);
        this.closing.delete(id);
        return done?.();
      }
      case 'count':
        return this.counting.shift()?.(typeof line.sessions === 'number' ? line.sessions : 0);
    }
  }

  /** Opens the run's session; resolves with its 127.0.0.1 port once it serves the run. */
  open(id: string, assignment: Record<string, unknown>, timeoutMs: number): Promise<number> {
    if (!this.running()) return Promise.reject(new Error('the sidecar host is gone'));
    if (this.opening.has(id) || this.sessions.has(id)) return Promise.reject(new Error('the session is already open'));
    return new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.opening.delete(id);
        // a late open is closed: nothing of the run stays in the host
        void this.close(id);
        reject(new Error(`the sidecar host did not take the run within ${timeoutMs} ms`));
      }, timeoutMs);
      this.opening.set(id, {
        resolve: (port) => { clearTimeout(timer); resolve(port); },
        reject: (err) => { clearTimeout(timer); reject(err); },
      });
      this.program.send({ op: 'open', id, assignment });
    });
  }

  /** What the worker knows of the session (gone when the host is). */
  state(id: string): SessionState {
    if (!this.running()) return 'gone';
    return this.sessions.get(id) ?? 'gone';
  }

  /** Closes the run's session (its port, socket and secrets); resolves once the host says so, or gave no answer in time. */
  close(id: string): Promise<void> {
    if (!this.running()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const previous = this.closing.get(id);
      const timer = setTimeout(done, CLOSE_TIMEOUT_MS);
      function done() {
        clearTimeout(timer);
        previous?.();
        resolve();
      }
      this.closing.set(id, done);
      this.program.send({ op: 'close', id });
    });
  }

  /** How many sessions the host itself holds (for checks that a run's end left nothing behind). */
  count(timeoutMs = 5_000): Promise<number> {
    if (!this.running()) return Promise.resolve(0);
    return new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the sidecar host did not count its sessions')), timeoutMs);
      this.counting.push((n) => { clearTimeout(timer); resolve(n); });
      this.program.send({ op: 'count' });
    });
  }

  terminate(graceMs = STOP_GRACE_MS): Promise<void> {
    return this.program.terminate(graceMs);
  }

  killNow(): void {
    this.program.killNow();
  }
}

/** The worker's one live host: started on first need, a new one once the last died. */
export class SidecarHosts {
  private host: Promise<SidecarHost> | null = null;
  private started: SidecarHost | null = null;
  private closed = false;

  constructor(private readonly start: () => Promise<SidecarHost>, private readonly log?: Logger) {}

  /** The running host, started (or restarted) when there is none. */
  current(): Promise<SidecarHost> {
    if (this.closed) return Promise.reject(new Error('the sidecar host is closed'));
    if (this.started && !this.started.running()) {
      this.started = null;
      this.host = null;
    }
    if (!this.host) {
      const starting = this.start().then((host) => {
        this.started = host;
        void host.exited.then(() => {
          if (!this.closed) this.log?.warn('the sidecar host exited; its runs are lost, the next run starts a new one', { pid: host.pid, stderr: host.stderrTail().slice(-1000) });
        });
        return host;
      });
      // a failed start is tried again by the next caller
      starting.catch(() => {
        if (this.host === starting) this.host = null;
      });
      this.host = starting;
    }
    return this.host;
  }

  /** The host as it is now, without starting one. */
  now(): SidecarHost | null {
    return this.started?.running() ? this.started : null;
  }

  async close(): Promise<void> {
    this.closed = true;
    const host = await this.host?.catch(() => null);
    await host?.terminate();
  }

  killNow(): void {
    this.started?.killNow();
  }
}
