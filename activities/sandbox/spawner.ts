// Sandbox programs are spawned from a worker thread. Node's spawn blocks its thread until the
// child has started (fork, then exec); from the platform's main thread, with sandboxes filling
// the cores, that took tens of milliseconds per program, during which no request was served.
// The worker owns the child processes and their pipes; the main thread gets their output and
// events as messages, writes to their stdin through the worker, and signals them by pid.
import { EventEmitter } from 'node:events';
import { Worker } from 'node:worker_threads';

// Plain JavaScript, evaluated by the worker: the platform runs from a bundle, so the worker gets
// its code as a string rather than a file of its own.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { spawn } = require('node:child_process');
const { setPriority } = require('node:os');
const { accessSync, constants } = require('node:fs');
// A niced program starts through nice(1): niced from its first instruction, so a child it forks
// at once (bubblewrap's sandbox) cannot slip out before setPriority reaches the parent.
const NICE = ['/usr/bin/nice', '/bin/nice'].find((p) => { try { accessSync(p, constants.X_OK); return true; } catch { return false; } });
const children = new Map();
const post = (message) => parentPort.postMessage(message);
parentPort.on('message', (m) => {
  if (m.op === 'spawn') {
    let child;
    try {
      const niced = m.niceness !== undefined && NICE !== undefined;
      child = niced
        ? spawn(NICE, ['-n', String(m.niceness), m.command, ...m.args], { cwd: m.cwd, env: m.env, stdio: ['pipe', 'pipe', 'pipe'] })
        : spawn(m.command, m.args, { cwd: m.cwd, env: m.env, stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (err) {
      post({ op: 'failed', id: m.id, message: String((err && err.message) || err) });
      return;
    }
    if (m.niceness !== undefined && child.pid !== undefined) {
      try { setPriority(child.pid, m.niceness); } catch {}
    }
    children.set(m.id, child);
    post({ op: 'spawned', id: m.id, pid: child.pid === undefined ? -1 : child.pid });
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (data) => post({ op: 'stdout', id: m.id, data }));
    child.stderr.on('data', (data) => post({ op: 'stderr', id: m.id, data }));
    child.stdin.on('error', () => {});
    child.once('error', (err) => post({ op: 'error', id: m.id, message: err.message }));
    child.once('exit', (code, signal) => post({ op: 'exit', id: m.id, code, signal }));
    child.once('close', () => {
      children.delete(m.id);
      post({ op: 'close', id: m.id });
    });
    return;
  }
  const child = children.get(m.id);
  if (!child) return;
  if (m.op === 'write') child.stdin.write(m.data);
  else if (m.op === 'end') child.stdin.end();
});
`;

type FromWorker =
  | { op: 'spawned'; id: number; pid: number }
  | { op: 'failed'; id: number; message: string }
  | { op: 'stdout' | 'stderr'; id: number; data: string }
  | { op: 'error'; id: number; message: string }
  | { op: 'exit'; id: number; code: number | null; signal: NodeJS.Signals | null }
  | { op: 'close'; id: number };

/**
 * A child process owned by the spawner thread. Events: 'stdout' and 'stderr' (text), 'error'
 * (Error), 'exit' (code, signal), 'close' (its output is fully read).
 */
export class SpawnedChild extends EventEmitter {
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;

  constructor(readonly pid: number, private readonly id: number, private readonly worker: Worker) {
    super();
  }

  writeStdin(data: string): void {
    this.worker.postMessage({ op: 'write', id: this.id, data });
  }

  /** Signals the process by pid, from this thread: also usable in an exit hook. */
  kill(signal: NodeJS.Signals): void {
    if (this.pid <= 0 || this.exitCode !== null || this.signalCode !== null) return;
    try {
      process.kill(this.pid, signal);
    } catch {
      // already gone
    }
  }
}

let worker: Worker | null = null;
let nextId = 1;
const pending = new Map<number, { resolve(child: SpawnedChild): void; reject(err: Error): void }>();
const live = new Map<number, SpawnedChild>();

/** The spawner keeps the process up while it starts or holds children, as their pipes did. */
function holdWhileBusy(w: Worker): void {
  if (pending.size + live.size > 0) w.ref();
  else w.unref();
}

function spawner(): Worker {
  if (worker) return worker;
  const w = new Worker(WORKER_SOURCE, { eval: true });
  w.on('message', (m: FromWorker) => {
    if (m.op === 'spawned') {
      const child = new SpawnedChild(m.pid, m.id, w);
      live.set(m.id, child);
      pending.get(m.id)?.resolve(child);
      pending.delete(m.id);
      return;
    }
    if (m.op === 'failed') {
      pending.get(m.id)?.reject(new Error(m.message));
      pending.delete(m.id);
      holdWhileBusy(w);
      return;
    }
    const child = live.get(m.id);
    if (!child) return;
    if (m.op === 'stdout' || m.op === 'stderr') child.emit(m.op, m.data);
    else if (m.op === 'error') child.emit('error', new Error(m.message));
    else if (m.op === 'exit') {
      child.exitCode = m.code;
      child.signalCode = m.signal;
      child.emit('exit', m.code, m.signal);
    } else {
      live.delete(m.id);
      holdWhileBusy(w);
      child.emit('close');
    }
  });
  w.on('error', (err) => {
    // the spawner thread died: every child it held is reported gone
    for (const p of pending.values()) p.reject(err);
    pending.clear();
    for (const child of live.values()) {
      child.emit('error', err);
      child.emit('close');
    }
    live.clear();
    worker = null;
  });
  worker = w;
  return w;
}

/** Starts `command` from the spawner thread; resolves once it has started (its pid is known). */
export function spawnChild(command: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv; niceness?: number }): Promise<SpawnedChild> {
  const id = nextId++;
  const w = spawner();
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    holdWhileBusy(w);
    w.postMessage({ op: 'spawn', id, command, args, cwd: opts.cwd, env: opts.env, niceness: opts.niceness });
  });
}
