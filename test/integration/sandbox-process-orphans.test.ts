import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processTree } from '../../activities/sandbox/cgroup.ts';
import { findBubblewrap } from '../../activities/sandbox/confinement.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { REPO, startEventReceiver, waitUntil } from './sidecar-run-harness.ts';
import { commandOf, running } from './sandbox-process-harness.ts';

async function killedPlatformLeavesNothing(t: TestContext, confine: 'auto' | 'off'): Promise<string> {
  const model = await startFakeModel();
  const secret = newRunEventSecret();
  const receiver = await startEventReceiver(secret);
  const workDir = await mkdtemp(join(tmpdir(), 'sbx-orphans-'));
  t.after(async () => {
    await receiver.close();
    await model.close();
    await rm(workDir, { recursive: true, force: true });
  });

  const host = spawn(process.execPath, ['--import', 'tsx', 'test/integration/sandbox-process-orphan-host.ts', workDir, receiver.url, secret, model.url, confine], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  host.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  t.after(() => host.kill('SIGKILL'));
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    host.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
    });
    host.once('exit', (code) => reject(new Error(`host exited (${code}): ${stderr}`)));
  });
  const started = JSON.parse(line) as { sidecarPid: number; agentPid: number; isolation: { confinement: string } };
  await receiver.waitFor((events) => events.some((e) => e.type === 'started'));
  await waitUntil(() => model.requests.length > 0); // the agent is mid-run, waiting on the model

  // the sidecar host, the running sandbox's agent and the warm pair's, with bubblewrap's processes when confined
  const pids = (await processTree(host.pid!)).filter((pid) => pid !== host.pid);
  const programs = pids.filter((pid) => commandOf(pid).some((a) => /dist\/(sidecar|agent-runtime)\.(cjs|[0-9a-f]+\.blob)$/.test(a)));
  assert.ok(pids.includes(started.sidecarPid) && pids.includes(started.agentPid));
  assert.ok(programs.length >= 3, `the sidecar host and two agents expected, found ${programs.length}`);
  assert.equal(programs.filter((pid) => commandOf(pid).some((a) => a.endsWith('dist/sidecar.cjs'))).length, 1, 'one sidecar host');

  const killedAt = performance.now();
  host.kill('SIGKILL');
  await waitUntil(() => pids.every((pid) => !running(pid)), 5_000);
  t.diagnostic(`${pids.length} sandbox processes gone ${(performance.now() - killedAt).toFixed(0)} ms after the platform's SIGKILL`);
  return started.isolation.confinement;
}

test('unconfined: a platform killed with SIGKILL leaves no sandbox process behind (each ends on stdin EOF)', async (t) => {
  assert.equal(await killedPlatformLeavesNothing(t, 'off'), 'none');
});

test('confined when bwrap works here: a killed platform leaves nothing behind (stdin EOF and bwrap --die-with-parent)', async (t) => {
  const expected = findBubblewrap() ? 'bubblewrap' : 'none';
  assert.equal(await killedPlatformLeavesNothing(t, 'auto'), expected);
});
