// What liveness sees of a process sandbox: its sidecar still holding the run's end keeps it
// alive after the agent has exited; an agent gone without handing over an end leaves it gone.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createProcessAdapter, type ProcessSandboxAdapter } from '../../activities/sandbox/process-adapter.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { startEventReceiver, waitUntil, type EventReceiver } from './sidecar-run-harness.ts';
import { aSandboxSpec, running } from './sandbox-process-harness.ts';

describe('the state of a process sandbox', () => {
  let model: FakeModel;
  let receiver: EventReceiver;
  let adapter: ProcessSandboxAdapter;
  let workDir: string;
  // the platform cannot record the run's end until this is set
  let recording = false;
  const secret = newRunEventSecret();

  before(async () => {
    model = await startFakeModel();
    receiver = await startEventReceiver(secret, { answer: (event) => (event.type === 'completed' && !recording ? 503 : 202) });
    workDir = await mkdtemp(join(tmpdir(), 'sbx-ending-'));
    adapter = await createProcessAdapter({ warmPool: 0, workDir });
  });
  after(async () => {
    await adapter?.close();
    await receiver?.close();
    await model?.close();
    await rm(workDir, { recursive: true, force: true });
  });

  test('an agent that handed its end to the sidecar and exited leaves the sandbox ending until stopped', async () => {
    const { sandboxId } = await adapter.start(aSandboxSpec({ runId: 'run_ending', eventsBaseUrl: receiver.url, secret, modelUrl: model.url }));
    const procs = adapter.processes(sandboxId)!;
    assert.equal(await adapter.state(sandboxId), 'running');

    await waitUntil(() => receiver.deliveries.some((d) => d.event?.type === 'completed' && d.status === 503), 60_000);
    await waitUntil(() => !running(procs.agentPid), 30_000);
    assert.equal(running(procs.sidecarPid), true);
    assert.equal(await adapter.state(sandboxId), 'ending');

    recording = true;
    await receiver.waitFor((events) => events.some((e) => e.type === 'completed'), 30_000);
    assert.equal(await adapter.state(sandboxId), 'ending');
    await adapter.stop(sandboxId);
    assert.equal(await adapter.state(sandboxId), 'gone');
  });

  test('an agent that dies without handing over an end leaves the sandbox gone, its sidecar alive', async () => {
    const spec = aSandboxSpec({ runId: 'run_agent_killed', eventsBaseUrl: receiver.url, secret, modelUrl: model.url });
    spec.sidecar.model = { ...spec.sidecar.model!, model: 'fake-hang' };
    const { sandboxId } = await adapter.start(spec);
    const procs = adapter.processes(sandboxId)!;
    await waitUntil(() => model.requests.some((r) => r.model === 'fake-hang'), 60_000);
    assert.equal(await adapter.state(sandboxId), 'running');

    process.kill(procs.agentPid, 'SIGKILL');
    // the adapter learns of the exit when the child is reaped
    const deadline = Date.now() + 10_000;
    while ((await adapter.state(sandboxId)) === 'running' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));

    assert.equal(running(procs.sidecarPid), true);
    assert.equal(await adapter.state(sandboxId), 'gone');
    await adapter.stop(sandboxId);
  });

  test('a burst of starts spawns pairs a few at a time: each pair\'s ready timeout counts from its own start', async () => {
    const gated = await createProcessAdapter({ warmPool: 0, workDir: join(workDir, 'gated'), coldStarts: 1 });
    try {
      const started = await Promise.all([1, 2, 3].map((i) => gated.start(aSandboxSpec({ runId: `run_burst_${i}`, eventsBaseUrl: receiver.url, secret, modelUrl: model.url }))));
      // when each sidecar process began (clock ticks since boot, 100 a second): one pair at a time,
      // each after the last was ready (a pair takes well over 0.3 s to get ready; unbounded, the
      // three begin within about 0.1 s)
      const began = started.map(({ sandboxId }) => Number(readFileSync(`/proc/${gated.processes(sandboxId)!.sidecarPid}/stat`, 'utf8').split(') ')[1].split(' ')[19])).sort((a, b) => a - b);
      for (let i = 1; i < began.length; i++) assert.ok(began[i] - began[i - 1] >= 30, `sidecars began at ticks ${began.join(', ')}`);
    } finally {
      await gated.close();
    }
  });
});
