// Slow is not dead: a sandbox program whose start outlasts its ready timeout (held back, as a
// niced program under load is; here the worker's sidecar host, which the first pair starts) is
// waited for while it lives and progresses, so the warm pool starts no second pair; a program that
// dies during its start still fails it at once, and the pool replaces the pair (and the host); one
// that is alive but idle fails after one timeout as before.
import { after, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error: a plain ESM script without type declarations
import { ensureBundle } from '../../bin/start.mjs';
import { findBubblewrap } from '../../activities/sandbox/confinement.ts';
import { NoAnswerError, processLiveness, readyLine } from '../../activities/sandbox/readiness.ts';
import { SandboxPair, sidecarHosts, type PairSettings } from '../../activities/sandbox/sandbox-pair.ts';
import { WarmPool } from '../../activities/sandbox/warm-pool.ts';
import { REPO } from './sidecar-run-harness.ts';
import { running } from './sandbox-process-harness.ts';

const READY_TIMEOUT_MS = 1000;
const HELD_MS = 2500;
const HEAP_MB = 256;

/** Children of this process (every thread's: the spawner is a worker thread), read at once. */
function ownChildren(): number[] {
  const out: number[] = [];
  for (const task of readdirSync('/proc/self/task')) {
    try {
      const list = readFileSync(`/proc/self/task/${task}/children`, 'utf8').trim();
      if (list) out.push(...list.split(/\s+/).map(Number));
    } catch {
      // the thread ended
    }
  }
  return out;
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

/** Calls `act` on the first sidecar this process starts from now on, as soon as it shows. */
function onFirstSidecar(act: (pid: number) => void): { seen: () => number | undefined; stop: () => void } {
  const before = new Set(ownChildren());
  let seen: number | undefined;
  let stopped = false;
  const look = () => {
    if (stopped || seen !== undefined) return;
    seen = ownChildren().find((pid) => !before.has(pid) && commandLine(pid).includes('dist/sidecar.cjs'));
    if (seen !== undefined) act(seen);
    else setImmediate(look);
  };
  look();
  return { seen: () => seen, stop: () => (stopped = true) };
}

let shared: Promise<PairSettings> | undefined;
after(async () => {
  if (shared) await rm((await shared).workDir, { recursive: true, force: true });
});

/** One folder for the file; the first pair writes the programs' code caches (a rehearsal) before anything is timed. */
function pairSettings(): Promise<PairSettings> {
  shared ??= (async () => {
    await ensureBundle();
    const bwrap = findBubblewrap();
    assert.ok(bwrap, 'bwrap is required (the process sandbox confines with it here and in CI)');
    const settings: PairSettings = { root: REPO, workDir: await mkdtemp(join(tmpdir(), 'sbx-slow-')), bwrap, readyTimeoutMs: READY_TIMEOUT_MS };
    const hosts = sidecarHosts(settings, HEAP_MB);
    await (await SandboxPair.spawn(settings, HEAP_MB, hosts)).stop();
    await hosts.close();
    return settings;
  })();
  return shared;
}

async function setup(t: TestContext) {
  const settings = await pairSettings();
  const pool = () => {
    const counted = { starts: 0, failures: [] as string[] };
    // each test's pool has a sidecar host of its own: the first sidecar to show is the one it starts
    const hosts = sidecarHosts(settings, HEAP_MB);
    const p = new WarmPool(1, HEAP_MB, async () => {
      counted.starts += 1;
      return SandboxPair.spawn(settings, HEAP_MB, hosts).catch((err: Error) => {
        counted.failures.push(err.message);
        throw err;
      });
    });
    t.after(async () => {
      await p.drain();
      await hosts.close();
    });
    return { pool: p, counted };
  };
  return { pool };
}

test('a pair held back past its ready timeout (SIGSTOP, then SIGCONT) is waited for: no extra start', async (t) => {
  const { pool } = await setup(t);
  const { pool: p, counted } = pool();
  let heldAt = 0;
  const watcher = onFirstSidecar((pid) => {
    process.kill(pid, 'SIGSTOP');
    heldAt = performance.now();
    setTimeout(() => process.kill(pid, 'SIGCONT'), HELD_MS);
  });
  t.after(watcher.stop);
  p.fill();
  await p.whenFull();
  const readyAfter = performance.now() - heldAt;
  t.diagnostic(`held ${HELD_MS} ms with a ${READY_TIMEOUT_MS} ms ready timeout; the pair was ready ${readyAfter.toFixed(0)} ms after the hold began`);
  assert.ok(watcher.seen() !== undefined && heldAt > 0, 'the sidecar was held back');
  assert.ok(readyAfter >= HELD_MS, 'the held sidecar said it was ready only once continued');
  assert.deepEqual(counted, { starts: 1, failures: [] }, 'one start, none failed');
  assert.equal(p.warm, 1);
  assert.ok(running(watcher.seen()!), 'the held sidecar host serves the pair waiting in the pool');
});

test('a pair whose program dies during its start is still replaced at once', async (t) => {
  const { pool } = await setup(t);
  const { pool: p, counted } = pool();
  const watcher = onFirstSidecar((pid) => process.kill(pid, 'SIGKILL'));
  t.after(watcher.stop);
  // the pool's retry timer does not hold the process open; the test waits on it
  const keepAlive = setInterval(() => undefined, 1000);
  t.after(() => clearInterval(keepAlive));
  const began = performance.now();
  p.fill();
  await p.whenFull();
  const took = performance.now() - began;
  t.diagnostic(`replaced and ready after ${took.toFixed(0)} ms: ${counted.failures.join(' | ').slice(0, 300)}`);
  assert.equal(counted.starts, 2, 'a second start replaced the dead one');
  assert.equal(counted.failures.length, 1);
  assert.match(counted.failures[0], /sidecar host did not start: sidecar-host exited/);
  assert.equal(p.warm, 1);
});

test('readiness: alive but idle fails after one timeout; runnable is waited for up to the ceiling; dead fails', async (t) => {
  const never = { nextLine: (ms: number) => new Promise<Record<string, unknown>>((_, reject) => setTimeout(() => reject(new NoAnswerError(`no answer within ${ms} ms`)), ms)) };
  const idle = spawn('sleep', ['30'], { stdio: 'ignore' });
  const busy = spawn(process.execPath, ['-e', 'for (;;);'], { stdio: 'ignore' });
  t.after(() => {
    idle.kill('SIGKILL');
    busy.kill('SIGKILL');
  });
  await new Promise((r) => setTimeout(r, 100));
  // the idle one has finished starting (asleep, its start-up CPU spent) before it is judged: on a busy
  // machine a process still in exec at the first look counts as progressing, rightly
  const asleepBy = Date.now() + 5_000;
  while (!/^\d+ \([^)]*\) S /.test(readFileSync(`/proc/${idle.pid}/stat`, 'utf8')) && Date.now() < asleepBy) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 100));
  const timed = async (pid: number) => {
    const began = performance.now();
    let extended = 0;
    const err = await readyLine(never, { timeoutMs: 200, ceilingMs: 1000, liveness: processLiveness(pid), onExtended: () => (extended += 1) }).catch((e: Error) => e);
    assert.ok(err instanceof NoAnswerError);
    return { ms: performance.now() - began, extended };
  };
  const [stuck, progressing] = await Promise.all([timed(idle.pid!), timed(busy.pid!)]);
  t.diagnostic(`idle: ${JSON.stringify(stuck)}; busy: ${JSON.stringify(progressing)}`);
  assert.equal(stuck.extended, 0);
  assert.ok(stuck.ms < 900, 'the idle one failed after its first timeout');
  assert.ok(progressing.extended >= 3 && progressing.ms >= 950, 'the busy one was waited for up to the ceiling');
  busy.kill('SIGKILL');
  await new Promise((r) => busy.once('exit', r));
  assert.equal(await processLiveness(busy.pid!)(), 'dead');
});
