// Background sweeps run one pass at a time, survive a failed pass, and a stop waits for the pass
// in flight.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runEvery } from '../../lib/periodic.ts';

test('a slow pass is never overlapped, a failing one is reported and the next tick still runs, stop waits', async () => {
  let running = 0;
  let maxRunning = 0;
  let passes = 0;
  const errors: unknown[] = [];
  let finishSlow!: () => void;
  const periodic = runEvery(10, async () => {
    passes++;
    running++;
    maxRunning = Math.max(maxRunning, running);
    try {
      if (passes === 1) throw new Error('first pass fails');
      if (passes === 2) await new Promise<void>((r) => (finishSlow = r));
    } finally {
      running--;
    }
  }, (err) => errors.push(err));
  while (passes < 2) await new Promise((r) => setTimeout(r, 5));
  // many ticks pass while the second pass hangs: none starts another
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(passes, 2);
  let stopped = false;
  const stopping = periodic.stop().then(() => (stopped = true));
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(stopped, false, 'stop waits for the pass in flight');
  finishSlow();
  await stopping;
  assert.equal(maxRunning, 1);
  assert.equal(errors.length, 1);
  assert.match(String(errors[0]), /first pass fails/);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(passes, 2, 'no pass after stop');
});
