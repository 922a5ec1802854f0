// The boot phase of the `run` workflow under faults, with a real Restate server: a worker that was
// down does not spend a run's boot budget, a sandbox lost before the first event ends the run at
// the next check, a sandbox that went with a dead worker is booted again, and a run whose first
// event was accepted never fails for not having started.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RunWorkflowClient } from '../../workflows/run-client.ts';
import { aSandboxWorld, startWorkflowHarness, type WorkflowHarness } from '../support/run-workflow-world.ts';

async function until(ok: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${ok}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const world = aSandboxWorld();
let harness: WorkflowHarness;
let client: RunWorkflowClient;

before(async () => {
  harness = await startWorkflowHarness(world.activities, {
    retry: { boot: { maxRetryAttempts: 3, initialRetryInterval: 50, maxRetryInterval: 100 } },
  });
  ({ client } = harness);
});

after(async () => {
  await harness?.close();
});

// Alone: it takes the worker away from every run of the harness.
describe('run workflow boot when its worker dies', () => {

  test('a boot cut short by its worker\'s death gets its whole retry budget once the worker is back', async () => {
    const { runId, sandbox, record } = world.aRun({ timings: { bootSeconds: 30 } });
    let cutShort!: (err: Error) => void;
    record.script.boot = (attempt) => {
      // the first attempt is under way when the worker dies; the next one, after the restart, fails
      if (attempt === 1) return new Promise<never>((_resolve, reject) => (cutShort = reject));
      if (attempt === 2) throw new Error('sidecar gave no answer within 30000 ms');
      return sandbox;
    };
    await client.submit(runId);
    await until(() => !(record.bootAttempts < 1), 30_000);
    await harness.endpointDown();
    // the engine tries the dead worker again and again meanwhile (more often than the boot's 3 attempts)
    await new Promise((r) => setTimeout(r, 5_000));
    cutShort(new Error('the worker died'));
    await harness.endpointUp();
    await until(() => !(record.bootAttempts < 3), 30_000);
    await client.started(runId);
    await client.terminal(runId, { status: 'success', output: 'ok' });

    const { ending } = await client.attach(runId);

    assert.deepEqual(ending, { status: 'success', output: 'ok' });
    assert.equal(record.bootAttempts, 3);
  });

});

describe('run workflow boot phase', { concurrency: true }, () => {
  test('a boot that keeps failing names its attempts and the last cause', async () => {
    const { runId, record } = world.aRun();
    record.script.boot = () => { throw new Error('sidecar gave no answer within 30000 ms'); };
    await client.submit(runId);

    const { ending } = await client.attach(runId);

    assert.equal(ending.status === 'failed' && ending.error.code, 'boot_failed');
    assert.match(ending.status === 'failed' ? ending.error.message : '', /\(3 attempts over \d+ s\); the last failed with: sidecar gave no answer within 30000 ms$/);
    assert.equal(record.bootAttempts, 3);
  });

  test('a sandbox gone before the first event ends the run sandbox_lost at the next check, not at the boot deadline', async () => {
    const { runId, record } = world.aRun({ alive: () => false, timings: { bootSeconds: 60 } });
    const submittedAt = Date.now();
    await client.submit(runId);

    const { ending } = await client.attach(runId);

    assert.equal(ending.status === 'failed' && ending.error.code, 'sandbox_lost');
    // one liveness tick (two 1 s heartbeats) and the check, far from the 60 s deadline
    assert.ok(Date.now() - submittedAt < 15_000, `ended after ${Date.now() - submittedAt} ms`);
    assert.equal(record.teardowns.length, 1);
  });

  test('a sandbox that went with a dead worker before the first event is booted again, and the run goes on', async () => {
    const { runId, sandbox, record } = world.aRun({ timings: { bootSeconds: 60 } });
    // the first sandbox is unknown to the worker that checks it (its own worker died)
    record.script.sandboxKnown = () => record.bootAttempts > 1;
    await client.submit(runId);
    await until(() => !(record.bootAttempts < 2), 30_000);
    await client.started(runId);
    await client.terminal(runId, { status: 'success', output: 'again' });

    const { ending } = await client.attach(runId);

    assert.deepEqual(ending, { status: 'success', output: 'again' });
    assert.deepEqual(record.teardowns, [sandbox.sandboxId, sandbox.sandboxId]);
  });

  test('a run whose first event was accepted never fails boot_timeout, though its started signal never came', async () => {
    const { runId, record } = world.aRun({ timings: { bootSeconds: 2, timeoutSeconds: 30 } });
    record.script.runStatus = () => 'running';
    await client.submit(runId);
    // well past the boot deadline
    await new Promise((r) => setTimeout(r, 5_000));
    assert.equal(await client.output(runId), null, 'still running');
    await client.terminal(runId, { status: 'success', output: 'started' });

    const { ending } = await client.attach(runId);

    assert.deepEqual(ending, { status: 'success', output: 'started' });
    assert.deepEqual(record.finalizeCalls, [ending]);
  });

  test('a boot deadline the database refuses because the run started meanwhile lets the run go on', async () => {
    const { runId, record } = world.aRun({ timings: { bootSeconds: 2, timeoutSeconds: 30 } });
    // the first event is accepted between the check and the deadline's compare-and-set
    record.script.finalizedElsewhere = true;
    record.script.recordedElsewhere = { status: 'running' };
    await client.submit(runId);
    await until(() => !(record.finalizeCalls.length === 0), 30_000);
    record.script.finalizedElsewhere = false;
    record.script.recordedElsewhere = undefined;
    await client.terminal(runId, { status: 'success', output: 'raced' });

    const { ending } = await client.attach(runId);

    assert.deepEqual(ending, { status: 'success', output: 'raced' });
  });
});
