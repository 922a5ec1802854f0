import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RestateServer } from '../../restate/launcher.ts';
import { cancelInvocation, queryInvocations, sqlString } from '../../restate/admin.ts';
import type { RunWorkflowClient } from '../../workflows/run-client.ts';
import { activityFailure } from '../../workflows/run-types.ts';
import { aSandboxWorld, startWorkflowHarness, type WorkflowHarness } from '../support/run-workflow-world.ts';

describe('run workflow lifecycle', { concurrency: true }, () => {
  const world = aSandboxWorld();
  let harness: WorkflowHarness;
  let server: RestateServer;
  let client: RunWorkflowClient;

  before(async () => {
    harness = await startWorkflowHarness(world.activities, {
      retry: {
        boot: { maxRetryAttempts: 3, initialRetryInterval: 50, maxRetryInterval: 100 },
        teardown: { maxRetryAttempts: 2, initialRetryInterval: 50, maxRetryInterval: 100 },
      },
    });
    ({ server, client } = harness);
  });
  const invocationOutcome = (invocationId: string) => harness.invocationOutcome(invocationId);

  after(async () => {
    await harness?.close();
  });

  test('a run that starts and reports success is finalized once with its output and torn down', async () => {
    const { runId, sandbox, record } = world.aRun();
    assert.equal(await client.output(runId), null, 'nothing before submission');
    await client.submit(runId);
    await client.started(runId);
    assert.equal(await client.output(runId), null, 'nothing while running');
    await client.terminal(runId, { status: 'success', output: { answer: 42 } });

    const result = await client.attach(runId);

    assert.deepEqual(result, { ending: { status: 'success', output: { answer: 42 } }, finalized: true });
    assert.deepEqual(await client.output(runId), result);
    assert.deepEqual(record.finalizeCalls, [{ status: 'success', output: { answer: 42 } }]);
    assert.deepEqual(record.teardowns, [sandbox.sandboxId]);
  });

  test('a run whose first signal is its end (no started signal) succeeds, recorded and torn down in one step, with no liveness timers', async () => {
    const { runId, sandbox, record } = world.aRun();
    const { invocationId } = await client.submit(runId);
    await client.terminal(runId, { status: 'success', output: { answer: 7 } });

    const result = await client.attach(runId);

    assert.deepEqual(result, { ending: { status: 'success', output: { answer: 7 } }, finalized: true });
    assert.deepEqual(record.finalizeCalls, [{ status: 'success', output: { answer: 7 } }]);
    assert.deepEqual(record.teardowns, [sandbox.sandboxId]);
    const entries = await queryInvocations<{ entry_type: string; name: string | null }>(
      server.adminUrl,
      `SELECT entry_type, name FROM sys_journal WHERE id = ${sqlString(invocationId)}`,
    );
    const steps = entries.filter((e) => e.entry_type === 'Command: Run').map((e) => e.name);
    assert.ok(steps.includes('finish') && !steps.includes('finalize') && !steps.includes('teardown'), JSON.stringify(steps));
    const timers = entries.filter((e) => e.entry_type === 'Command: Sleep').map((e) => e.name);
    assert.ok(!timers.includes('run timeout') && !timers.includes('liveness tick'), JSON.stringify(timers));
  });

  test('a runner that reports failure ends the run failed with its error', async () => {
    const { runId } = world.aRun();
    await client.submit(runId);
    await client.started(runId);
    await client.terminal(runId, { status: 'failed', error: { code: 'agent_error', message: 'model refused' } });

    const { ending } = await client.attach(runId);

    assert.deepEqual(ending, { status: 'failed', error: { code: 'agent_error', message: 'model refused' } });
  });

  test('submitting twice is harmless', async () => {
    const { runId, record } = world.aRun();
    const first = await client.submit(runId);
    const second = await client.submit(runId);
    await client.started(runId);
    await client.terminal(runId, { status: 'success', output: null });
    await client.attach(runId);

    assert.equal(first.firstSubmission, true);
    assert.equal(second.firstSubmission, false);
    assert.equal(second.invocationId, first.invocationId);
    assert.equal(record.bootAttempts, 1);
    assert.equal(record.finalizeCalls.length, 1);
  });

  test('a sandbox that never sends its first event fails the run with boot_timeout', async () => {
    const { runId, sandbox, record } = world.aRun();
    await client.submit(runId);

    const { ending } = await client.attach(runId);

    assert.equal(ending.status, 'failed');
    assert.equal(ending.status === 'failed' && ending.error.code, 'boot_timeout');
    assert.deepEqual(record.teardowns, [sandbox.sandboxId]);
  });

  test('a refused boot fails the run with its code, without retries', async () => {
    const { runId, record } = world.aRun({
      boot: () => { throw activityFailure('image_missing', 'agent image not found'); },
    });
    await client.submit(runId);

    const { ending } = await client.attach(runId);

    assert.deepEqual(ending, { status: 'failed', error: { code: 'image_missing', message: 'agent image not found' } });
    assert.equal(record.bootAttempts, 1);
    assert.deepEqual(record.teardowns, []);
  });

  test('a boot that keeps breaking gives up after its bounded retries with boot_failed', async () => {
    const { runId, record } = world.aRun({ boot: () => { throw new Error('adapter crashed'); } });
    await client.submit(runId);

    const { ending } = await client.attach(runId);

    assert.equal(ending.status === 'failed' && ending.error.code, 'boot_failed');
    assert.equal(record.bootAttempts, 3);
  });

  test('a boot that breaks once is retried and the run goes on', async () => {
    const { runId, sandbox, record } = world.aRun();
    record.script.boot = (attempt) => {
      if (attempt === 1) throw new Error('transient');
      return sandbox;
    };
    await client.submit(runId);
    await client.started(runId);
    await client.terminal(runId, { status: 'success', output: 'ok' });

    const { ending } = await client.attach(runId);

    assert.equal(ending.status, 'success');
    assert.equal(record.bootAttempts, 2);
  });

  test('a cancel request during execution ends the run cancelled', async () => {
    const { runId, sandbox, record } = world.aRun({ timings: { timeoutSeconds: 30 } });
    await client.submit(runId);
    await client.started(runId);
    await client.cancel(runId, 'stopped by the user');

    const result = await client.attach(runId);

    assert.deepEqual(result.ending, { status: 'cancelled', error: { code: 'run_cancelled', message: 'stopped by the user' } });
    assert.deepEqual(record.finalizeCalls, [result.ending]);
    assert.deepEqual(record.teardowns, [sandbox.sandboxId]);
  });

  test('a cancel request before the first event ends the run cancelled', async () => {
    const { runId } = world.aRun({ timings: { bootSeconds: 30 } });
    await client.submit(runId);
    await client.cancel(runId);

    const { ending } = await client.attach(runId);

    assert.equal(ending.status, 'cancelled');
  });

  test('cancelling the invocation through the engine ends the run cancelled and still tears down', async () => {
    const { runId, sandbox, record } = world.aRun({ timings: { timeoutSeconds: 30 } });
    const { invocationId } = await client.submit(runId);
    await client.started(runId);
    // the signal is one-way: let the workflow boot its sandbox and take the signal first
    while (record.bootAttempts === 0) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 300));
    await cancelInvocation(server.adminUrl, invocationId);

    const { ending } = await client.attach(runId);

    assert.equal(ending.status, 'cancelled');
    assert.equal(ending.status === 'cancelled' && ending.error.code, 'run_cancelled_by_operator');
    assert.deepEqual(record.teardowns, [sandbox.sandboxId]);
    assert.deepEqual(await invocationOutcome(invocationId), { completion_result: 'failure', completion_failure: '[409] Cancelled' });
  });

  test('a run that outlives its timeout ends with timeout', async () => {
    const { runId, record } = world.aRun();
    await client.submit(runId);
    await client.started(runId);

    const { ending } = await client.attach(runId);

    assert.deepEqual(ending, { status: 'timeout', error: { code: 'run_timeout', message: 'The run did not finish within 3 s.' } });
    assert.equal(record.teardowns.length, 1);
  });

  test('a sandbox that falls silent fails the run with heartbeat_lost', async () => {
    const { runId, record } = world.aRun({ timings: { timeoutSeconds: 30 } });
    let lastEventAt: number | null = null;
    record.script.lastEventAt = () => lastEventAt;
    await client.submit(runId);
    lastEventAt = Date.now();
    await client.started(runId);

    const startedAt = Date.now();
    const { ending } = await client.attach(runId);

    assert.equal(ending.status === 'failed' && ending.error.code, 'heartbeat_lost');
    // Silent for more than 3 heartbeats, noticed at a 2-heartbeat tick.
    assert.ok(Date.now() - startedAt >= 3_000);
    assert.equal(record.teardowns.length, 1);
  });

  test('a sandbox that disappears fails the run with sandbox_lost', async () => {
    const { runId, record } = world.aRun({ alive: () => false, timings: { timeoutSeconds: 30 } });
    await client.submit(runId);
    await client.started(runId);

    const { ending } = await client.attach(runId);

    assert.equal(ending.status === 'failed' && ending.error.code, 'sandbox_lost');
    assert.equal(record.teardowns.length, 1);
  });

  test('a terminal event signalled twice finalizes once, with the first ending', async () => {
    const { runId, record } = world.aRun();
    await client.submit(runId);
    await client.started(runId);
    await client.terminal(runId, { status: 'success', output: 'first' });
    const result = await client.attach(runId);
    // signals are one-way: the second is taken by the engine, and changes nothing
    await client.terminal(runId, { status: 'failed', error: { code: 'late', message: 'second' } });
    await new Promise((r) => setTimeout(r, 300));

    assert.deepEqual(result, { ending: { status: 'success', output: 'first' }, finalized: true });
    assert.deepEqual(await client.output(runId), result);
    assert.equal(record.finalizeCalls.length, 1);
  });

  test('a run finalized elsewhere first reports finalized false and is still torn down', async () => {
    const { runId, record } = world.aRun({ finalizedElsewhere: true });
    await client.submit(runId);
    await client.started(runId);
    await client.terminal(runId, { status: 'success', output: 1 });

    const result = await client.attach(runId);

    assert.equal(result.finalized, false);
    assert.equal(record.teardowns.length, 1);
  });

  test('a teardown that keeps failing does not hide the ending', async () => {
    const { runId, record } = world.aRun({ teardownFails: true });
    await client.submit(runId);
    await client.started(runId);
    await client.terminal(runId, { status: 'success', output: 'done' });

    const result = await client.attach(runId);

    assert.deepEqual(result, { ending: { status: 'success', output: 'done' }, finalized: true });
    assert.deepEqual(record.teardowns, []);
  });

  test('each liveness tick adds a fixed handful of journal entries', async () => {
    const { runId } = world.aRun({ timings: { timeoutSeconds: 7 } });
    const { invocationId } = await client.submit(runId);
    await client.started(runId);
    await client.attach(runId);

    const entries = await queryInvocations<{ entry_type: string; name: string | null }>(
      server.adminUrl,
      `SELECT entry_type, name FROM sys_journal WHERE id = ${sqlString(invocationId)}`,
    );
    const checks = entries.filter((e) => e.entry_type === 'Command: Run' && e.name === 'liveness').length;
    // Checks at about 2, 4 and 6 s, the timeout at 7 s; each tick is one timer and one liveness step
    // (a command and a notification each), plus a fixed prologue (the signals' promises, the run's
    // first approval request's among them) and epilogue. On a busy machine the execution phase may
    // begin late enough that the tick before the timeout is cut short to it (no third check).
    assert.ok(checks === 2 || checks === 3, `${checks} liveness checks`);
    assert.ok(entries.length <= 21 + 4 * checks, `${entries.length} journal entries`);
  });

  test('a terminal payload of the wrong shape is refused: the run goes on until a real ending', async () => {
    const { runId } = world.aRun();
    await client.submit(runId);
    await client.started(runId);
    await client.terminal(runId, { status: 'exploded' } as never);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await client.output(runId), null);
    await client.cancel(runId);
    const { ending } = await client.attach(runId);
    assert.equal(ending.status, 'cancelled');
  });
});
