// What liveness sees of a process sandbox: its session on the sidecar host still holding the
// run's end keeps it alive after the agent has exited; an agent gone without handing over an end
// leaves it gone; the host's death is every session's.
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

    await waitUntil(() => receiver.deliveries.some((d) => (d.events ?? []).some((e) => e.type === 'completed') && d.status === 503), 60_000);
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

  test('the sidecar host killed mid-run: every run on it is gone, and the next run starts a new host', async () => {
    const hang = (runId: string) => {
      const spec = aSandboxSpec({ runId, eventsBaseUrl: receiver.url, secret, modelUrl: model.url });
      spec.sidecar.model = { ...spec.sidecar.model!, model: 'fake-hang' };
      return spec;
    };
    const [one, two] = await Promise.all([adapter.start(hang('run_host_one')), adapter.start(hang('run_host_two'))]);
    const host = adapter.processes(one.sandboxId)!.sidecarPid;
    assert.equal(adapter.processes(two.sandboxId)!.sidecarPid, host, 'both runs are sessions of one host');
    assert.equal(await adapter.hostSessions(), 2);
    assert.deepEqual([await adapter.state(one.sandboxId), await adapter.state(two.sandboxId)], ['running', 'running']);

    process.kill(host, 'SIGKILL');
    const deadline = Date.now() + 10_000;
    while (running(host) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    // the adapter learns of the exit when the child is reaped
    while ((await adapter.state(one.sandboxId)) !== 'gone' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    assert.deepEqual([await adapter.state(one.sandboxId), await adapter.state(two.sandboxId)], ['gone', 'gone']);
    assert.deepEqual([await adapter.alive(one.sandboxId), await adapter.alive(two.sandboxId)], [false, false]);
    await Promise.all([adapter.stop(one.sandboxId), adapter.stop(two.sandboxId)]);

    const before = receiver.events.length;
    const { sandboxId } = await adapter.start(aSandboxSpec({ runId: 'run_after_host', eventsBaseUrl: receiver.url, secret, modelUrl: model.url }));
    const next = adapter.processes(sandboxId)!.sidecarPid;
    assert.notEqual(next, host);
    assert.equal(running(next), true);
    await receiver.waitFor((events) => events.slice(before).some((e) => e.type === 'started'), 30_000);
    await adapter.stop(sandboxId);
    assert.equal(await adapter.hostSessions(), 0);
  });

  test('a burst of starts spawns pairs a few at a time: each pair\'s ready timeout counts from its own start', async () => {
    const gated = await createProcessAdapter({ warmPool: 0, workDir: join(workDir, 'gated'), coldStarts: 1 });
    try {
      // clock ticks since boot (100 a second), the clock of a process's start time in /proc/<pid>/stat
      const nowTicks = () => Math.floor(Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 100);
      const started = await Promise.all([1, 2, 3].map(async (i) => {
        const { sandboxId } = await gated.start(aSandboxSpec({ runId: `run_burst_${i}`, eventsBaseUrl: receiver.url, secret, modelUrl: model.url }));
        const ready = nowTicks();
        const began = Number(readFileSync(`/proc/${gated.processes(sandboxId)!.agentPid}/stat`, 'utf8').split(') ')[1].split(' ')[19]);
        return { began, ready };
      }));
      // one pair at a time (the sidecar host is shared: a pair's start is its agent's): each agent began when the pair before it was about ready, so the gap
      // between two starts is most of the time the earlier pair took to get ready (its slot is
      // freed a little before start() resolves). Unbounded, the three begin within about 0.1 s,
      // long before the first is ready.
      const order = started.sort((a, b) => a.began - b.began);
      for (let i = 1; i < order.length; i++) {
        const gap = order[i].began - order[i - 1].began;
        const spinUp = order[i - 1].ready - order[i - 1].began;
        assert.ok(gap >= spinUp / 2, `agents began at ticks ${order.map((o) => o.began).join(', ')}, were ready at ${order.map((o) => o.ready).join(', ')}`);
      }
    } finally {
      await gated.close();
    }
  });
});
