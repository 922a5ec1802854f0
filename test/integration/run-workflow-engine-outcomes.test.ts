// How a run's workflow ends in the engine: a run that failed or timed out ends it as a failure the
// engine's UI lists, with the run's error code; a cancellation through the engine is handled even
// while the run is being wound up. The workflow's result stays readable either way.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RestateServer } from '../../restate/launcher.ts';
import { cancelInvocation } from '../../restate/admin.ts';
import type { RunWorkflowClient } from '../../workflows/run-client.ts';
import { aSandboxWorld, startWorkflowHarness, type WorkflowHarness } from '../support/run-workflow-world.ts';

describe('run workflow outcomes in the engine', { concurrency: true }, () => {
  const world = aSandboxWorld();
  let harness: WorkflowHarness;
  let server: RestateServer;
  let client: RunWorkflowClient;

  before(async () => {
    harness = await startWorkflowHarness(world.activities);
    ({ server, client } = harness);
  });
  const invocationOutcome = (invocationId: string) => harness.invocationOutcome(invocationId);

  after(async () => {
    await harness?.close();
  });

  test('a cancellation through the engine while the ending is recorded still records it and tears down', async () => {
    let open = () => {};
    const { runId, sandbox, record } = world.aRun({ finalizeGate: new Promise<void>((r) => (open = r)) });
    const { invocationId } = await client.submit(runId);
    await client.started(runId);
    await client.terminal(runId, { status: 'success', output: 'done' });
    while (record.finalizeCalls.length === 0) await new Promise((r) => setTimeout(r, 20));
    await cancelInvocation(server.adminUrl, invocationId);
    await new Promise((r) => setTimeout(r, 300));
    open();

    const result = await client.attach(runId);

    assert.deepEqual(result.ending, { status: 'success', output: 'done' });
    // the step that records the ending also stops the sandbox; the cancel interrupts the wait for it,
    // and the step is made again to its end: the stop (idempotent) may come twice, always of this sandbox
    assert.ok(record.teardowns.length >= 1 && record.teardowns.every((id) => id === sandbox.sandboxId), JSON.stringify(record.teardowns));
    assert.deepEqual(await invocationOutcome(invocationId), { completion_result: 'failure', completion_failure: '[409] Cancelled' });
  });

  test('a run that ends failed or timed out ends its workflow as a failure in the engine; a success does not', async () => {
    const failing = world.aRun();
    const slow = world.aRun();
    const fine = world.aRun();
    const ids = await Promise.all([failing, slow, fine].map(async ({ runId }) => (await client.submit(runId)).invocationId));
    await Promise.all([failing, slow, fine].map(({ runId }) => client.started(runId)));
    await client.terminal(failing.runId, { status: 'failed', error: { code: 'tool_crashed', message: 'boom' } });
    await client.terminal(fine.runId, { status: 'success', output: 1 });

    const results = await Promise.all([failing, slow, fine].map(({ runId }) => client.attach(runId)));

    assert.deepEqual(results.map((r) => r.ending.status), ['failed', 'timeout', 'success']);
    assert.deepEqual(await invocationOutcome(ids[0]), { completion_result: 'failure', completion_failure: '[500] run failed: tool_crashed' });
    assert.deepEqual(await invocationOutcome(ids[1]), { completion_result: 'failure', completion_failure: '[500] run timeout: run_timeout' });
    assert.deepEqual(await invocationOutcome(ids[2]), { completion_result: 'success' });
    assert.deepEqual(await client.output(failing.runId), results[0], 'the result of a failed workflow stays readable');
  });

  test('a run another party finalized failed ends its workflow as that failure', async () => {
    const { runId } = world.aRun({ finalizedElsewhere: true, recordedElsewhere: { status: 'failed', code: 'workflow_lost' } });
    const { invocationId } = await client.submit(runId);
    await client.started(runId);
    await client.terminal(runId, { status: 'success', output: 1 });

    const result = await client.attach(runId);

    assert.deepEqual(result, { ending: { status: 'success', output: 1 }, finalized: false });
    assert.deepEqual(await invocationOutcome(invocationId), { completion_result: 'failure', completion_failure: '[500] run failed: workflow_lost' });
  });
});
