import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { getPriority } from 'node:os';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createProcessAdapter, type ProcessSandboxAdapter } from '../../activities/sandbox/process-adapter.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { startEventReceiver, typesInOrder, waitUntil, type EventReceiver } from './sidecar-run-harness.ts';
import { aSandboxSpec, agentNodePid, commandOf, environOf, MODEL_KEY, running, samplePeakMemory, mib } from './sandbox-process-harness.ts';

// a platform setting the sandbox must never inherit
const PLATFORM_SECRET = 'platform-only-secret-value-4242';

describe('a run in a process sandbox claimed from a warm pool of 2', () => {
  let model: FakeModel;
  let receiver: EventReceiver;
  let adapter: ProcessSandboxAdapter;
  let workDir: string;
  let warmStartMs = Infinity;
  const secret = newRunEventSecret();

  before(async () => {
    process.env.SANDBOX_TEST_PLATFORM_SECRET = PLATFORM_SECRET;
    // Each model turn takes a while, so the agent is still running while the test inspects it,
    // however loaded the machine is.
    model = await startFakeModel({ latencyMs: 800 });
    receiver = await startEventReceiver(secret);
    workDir = await mkdtemp(join(tmpdir(), 'sbx-run-'));
    adapter = await createProcessAdapter({ warmPool: 2, workDir });
    await adapter.whenWarm();
  });
  after(async () => {
    await adapter?.close();
    await receiver?.close();
    await model?.close();
    await rm(workDir, { recursive: true, force: true });
    delete process.env.SANDBOX_TEST_PLATFORM_SECRET;
  });

  test('start claims a warm pair, the run completes with its output, stop removes everything', async (t) => {
    assert.equal(adapter.warmCount(), 2);
    const spec = aSandboxSpec({ eventsBaseUrl: receiver.url, secret, modelUrl: model.url });

    const startedAt = performance.now();
    const { sandboxId } = await adapter.start(spec);
    const claimMs = performance.now() - startedAt;
    warmStartMs = claimMs;
    const refillStartedAt = performance.now();
    assert.equal(adapter.warmCount(), 1, 'the claimed pair left the pool');
    assert.equal(await adapter.alive(sandboxId), true);

    const procs = adapter.processes(sandboxId);
    assert.ok(procs);
    const memory = samplePeakMemory([procs.sidecarPid, procs.agentPid]);
    t.after(() => memory.stop());
    const agentPid = await agentNodePid(procs.agentPid);
    const agentEnv = environOf(agentPid);
    const sidecarEnv = environOf(procs.sidecarPid);
    const agentCommand = commandOf(agentPid);
    const sidecarCommand = commandOf(procs.sidecarPid);
    // the sidecar's TCP port answers its own agent only: anyone else gets 401 and nothing proxied
    const stranger = await fetch(`http://127.0.0.1:${procs.sidecarPort}/v1/chat/completions`, { method: 'POST', body: '{"messages":[]}' });
    assert.equal(stranger.status, 401);
    await stranger.body?.cancel();
    // both programs (the agent's node under bwrap too) yield the CPU to the platform
    assert.deepEqual([agentPid, procs.sidecarPid].map(getPriority), [19, 19]);

    await receiver.waitFor((events) => events.some((e) => e.type === 'completed'));
    memory.stop();
    const types = typesInOrder(receiver.events);
    assert.equal(types[0], 'started');
    assert.equal(types.at(-1), 'completed');
    assert.ok(types.indexOf('output') > 0 && types.indexOf('output') < types.length - 1, types.join(' '));
    const output = receiver.events.find((e) => e.type === 'output');
    assert.ok(output && output.type === 'output');
    assert.deepEqual(output.data.output, { summary: 'three apples', count: 3 });
    assert.deepEqual(receiver.events.at(-1)?.data, { text: 'done' });
    for (const r of model.requests) assert.equal(r.authorization, `Bearer ${MODEL_KEY}`);

    // the agent knows PATH and HOME only (bubblewrap adds PWD, its workspace); no platform setting reaches either program
    if (procs.confined) assert.equal(agentEnv.PWD, agentEnv.HOME);
    assert.deepEqual(Object.keys(agentEnv).filter((k) => k !== 'PWD' || !procs.confined).sort(), ['HOME', 'PATH']);
    for (const value of [...Object.values(agentEnv), ...agentCommand]) {
      assert.ok(!value.includes('whsec_') && !value.includes(MODEL_KEY) && !value.includes(PLATFORM_SECRET), value);
    }
    for (const value of [...Object.values(sidecarEnv), ...sidecarCommand]) {
      assert.ok(!value.includes('whsec_') && !value.includes(MODEL_KEY) && !value.includes(PLATFORM_SECRET), value);
    }
    assert.ok(existsSync(join(procs.dir, 'workspace', 'skills', 'counting', 'SKILL.md')));
    // the agent started from its startup snapshot, built without any platform setting in reach
    const blob = agentCommand[agentCommand.indexOf('--snapshot-blob') + 1];
    assert.match(blob ?? '', /\/dist\/agent-runtime\.[0-9a-f]+\.blob$/, agentCommand.join(' '));
    assert.ok(!readFileSync(blob).includes(PLATFORM_SECRET), 'the snapshot holds no platform setting');

    await adapter.stop(sandboxId);
    assert.equal(await adapter.alive(sandboxId), false);
    assert.equal(existsSync(procs.dir), false, 'the sandbox folder is removed');
    // the sidecar host serves other runs on: the run's session is gone from it, its port closed
    assert.equal(running(procs.sidecarPid), true);
    assert.equal(await adapter.hostSessions(), 0);
    await assert.rejects(fetch(`http://127.0.0.1:${procs.sidecarPort}/v1/models`), /fetch failed/);
    assert.equal(running(procs.agentPid), false);
    await adapter.stop(sandboxId); // a second stop is a no-op

    await adapter.whenWarm();
    const refillMs = performance.now() - refillStartedAt;
    const at = (type: string) => receiver.arrivedAtMs[receiver.events.findIndex((e) => e.type === type)] - startedAt;
    t.diagnostic(
      `isolation ${JSON.stringify(adapter.isolation)}; start() ${claimMs.toFixed(1)} ms; start->started ${at('started').toFixed(0)} ms; ` +
        `start->completed ${at('completed').toFixed(0)} ms; peak memory of sidecar+agent: VmRSS ${mib(memory.peak().rssKb)} MiB, ` +
        `RssAnon ${mib(memory.peak().anonKb)} MiB, Pss ${mib(memory.peak().pssKb)} MiB; ` +
        `pool refill ${refillMs.toFixed(0)} ms`,
    );
    // a claim is a handful of writes: far below a cold spawn even on a loaded machine
    assert.ok(claimMs < 250, `start() took ${claimMs.toFixed(1)} ms with a warm pair waiting`);
  });

  test('a run asking for another memory limit gets a freshly spawned pair and leaves the pool alone', async () => {
    await adapter.whenWarm();
    const before = receiver.events.length;
    const spec = aSandboxSpec({ runId: 'run_sandbox_small', eventsBaseUrl: receiver.url, secret, modelUrl: model.url, memoryMb: 256 });
    const coldStartedAt = performance.now();
    const { sandboxId } = await adapter.start(spec);
    const coldStartMs = performance.now() - coldStartedAt;
    assert.ok(coldStartMs > warmStartMs, `cold ${coldStartMs.toFixed(0)} ms, warm ${warmStartMs.toFixed(0)} ms`);
    assert.equal(adapter.warmCount(), 2);
    const procs = adapter.processes(sandboxId);
    assert.ok(procs);
    assert.ok(commandOf(await agentNodePid(procs.agentPid)).includes('--max-old-space-size=192'));
    await waitUntil(() => receiver.events.slice(before).some((e) => e.type === 'completed'));
    await adapter.stop(sandboxId);
  });

  test('a workspace path that leaves the workspace is refused before any pair is claimed', async () => {
    await adapter.whenWarm();
    for (const path of ['../escape.txt', '/etc/evil', 'skills/../../x', '']) {
      const spec = aSandboxSpec({ eventsBaseUrl: receiver.url, secret, modelUrl: model.url });
      spec.workspace.push({ path, content: Buffer.from('x') });
      await assert.rejects(adapter.start(spec), /not a safe relative path/);
    }
    assert.equal(adapter.warmCount(), 2);
  });
});
