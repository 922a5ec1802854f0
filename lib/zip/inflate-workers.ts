// Inflation off the event loop: deflated entries inflate in worker threads, each into a buffer of
// its own that moves (not copies) back to the main thread, with its CRC-32 and SHA-256 computed
// there too. The main thread neither inflates nor collects the inflater's garbage.
import { Worker } from 'node:worker_threads';

// Plain JavaScript evaluated by the worker: the platform runs from a bundle, so the worker gets
// its code as a string rather than a file of its own.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const zlib = require('node:zlib');
const { createHash } = require('node:crypto');
// On Linux a thread has its own niceness: inflation yields the cores to request handling.
try { require('node:os').setPriority(19); } catch {}
parentPort.on('message', ({ input, cap, chunkSize }) => {
  const out = Buffer.allocUnsafeSlow(cap);
  const hash = createHash('sha256');
  const inflater = zlib.createInflateRaw({ chunkSize });
  let filled = 0;
  let crc = 0;
  let done = false;
  const finish = (message, transfer) => {
    if (done) return;
    done = true;
    parentPort.postMessage(message, transfer);
  };
  inflater.on('data', (chunk) => {
    if (done) return;
    if (filled + chunk.length > cap) {
      inflater.destroy();
      finish({ past: filled + chunk.length });
      return;
    }
    chunk.copy(out, filled);
    crc = zlib.crc32(chunk, crc);
    hash.update(chunk);
    filled += chunk.length;
  });
  inflater.on('error', (err) => finish({ corrupt: String(err && err.message) }));
  inflater.on('end', () => finish({ length: filled, crc, digest: hash.digest('base64'), data: out.buffer }, [out.buffer]));
  inflater.end(Buffer.from(input.buffer, input.byteOffset, input.byteLength));
});
`;

export type InflateOutcome =
  | { data: Buffer; crc: number; digest: string }
  /** the stream went past the cap: `past` bytes when it was stopped */
  | { past: number }
  | { corrupt: string };

// An idle worker never collects the garbage of its last job, so it ends after this long idle.
const IDLE_MS = 2000;

const idle: Worker[] = [];
const idleTimers = new Map<Worker, NodeJS.Timeout>();
let spawned = 0;

function takeWorker(): Worker {
  const ready = idle.pop();
  if (ready) {
    clearTimeout(idleTimers.get(ready));
    idleTimers.delete(ready);
    return ready;
  }
  spawned++;
  const worker = new Worker(WORKER_SOURCE, { eval: true });
  worker.unref();
  return worker;
}

/**
 * Inflates a raw deflate stream to at most `cap` bytes. The caller admits at most one job per
 * worker it allows (inflateQueue), so a job never waits for a worker here.
 */
export function inflateInWorker(compressed: Buffer, cap: number, chunkSize: number): Promise<InflateOutcome> {
  // a copy of its own, moved to the worker: a view would carry the whole upload with it
  const input = new Uint8Array(compressed.length);
  input.set(compressed);
  const worker = takeWorker();
  return new Promise((resolve, reject) => {
    const onMessage = (m: { length?: number; crc?: number; digest?: string; data?: ArrayBuffer; past?: number; corrupt?: string }) => {
      cleanup();
      release(worker);
      if (m.past !== undefined) resolve({ past: m.past });
      else if (m.corrupt !== undefined) resolve({ corrupt: m.corrupt });
      else resolve({ data: Buffer.from(m.data!, 0, m.length), crc: m.crc!, digest: m.digest! });
    };
    const onGone = (err: unknown) => {
      // a worker that failed is dropped; the next job starts another
      cleanup();
      spawned--;
      void worker.terminate();
      // Stryker disable next-line StringLiteral: a worker that fails emits 'error' (an Error) before 'exit'; this wording is for an exit alone
      reject(err instanceof Error ? err : new Error(`the inflate worker exited (${String(err)})`));
    };
    const cleanup = () => {
      worker.off('message', onMessage);
      worker.off('error', onGone);
      worker.off('exit', onGone);
      worker.unref();
    };
    worker.on('message', onMessage);
    worker.once('error', onGone);
    // Stryker disable next-line StringLiteral: as above, 'error' comes first whenever a job fails
    worker.once('exit', onGone);
    worker.ref();
    // Stryker disable next-line ArrayDeclaration: moving rather than copying the job's own copy saves memory only
    worker.postMessage({ input, cap, chunkSize }, [input.buffer]);
  });
}

function release(worker: Worker): void {
  idle.push(worker);
  const timer = setTimeout(() => {
    idleTimers.delete(worker);
    const at = idle.indexOf(worker);
    // Stryker disable next-line ConditionalExpression: takeWorker clears the timer of a worker it takes, so an idle worker's timer finds it idle
    if (at < 0) return;
    idle.splice(at, 1);
    spawned--;
    void worker.terminate();
  }, IDLE_MS);
  timer.unref();
  idleTimers.set(worker, timer);
}

/** Workers started so far and still usable (for tests and diagnostics). */
export function inflateWorkerCount(): number {
  return spawned;
}
