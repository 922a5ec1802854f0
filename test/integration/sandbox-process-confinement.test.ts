import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readlinkSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createProcessAdapter, type ProcessSandboxAdapter } from '../../activities/sandbox/process-adapter.ts';
import { confinedArgv, findBubblewrap, SANDBOX_PATH_ENV, SANDBOX_WORKSPACE, sandboxNodePath } from '../../activities/sandbox/confinement.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { REPO, startEventReceiver, waitUntil, type EventReceiver } from './sidecar-run-harness.ts';
import { aSandboxSpec, agentNodePid } from './sandbox-process-harness.ts';

// This machine has bubblewrap installed (apt-get install bubblewrap), so the confined path runs
// here; where bwrap is absent the same test asserts the unconfined fallback instead.
const bwrap = findBubblewrap();

/** What a program sees from inside the sandbox: run with the adapter's own bwrap arguments. */
const PROBE = `
const net = require('node:net'), fs = require('node:fs'), http = require('node:http');
const [modelPort, sidecarPort, root] = process.argv.slice(1);
const tcp = (port) => new Promise((resolve) => {
  const s = net.connect(Number(port), '127.0.0.1');
  s.once('connect', () => { s.destroy(); resolve('connected'); });
  s.once('error', (e) => resolve(e.code));
});
const tryFs = (f) => { try { f(); return 'ok'; } catch (e) { return e.code; } };
const viaSocket = () => new Promise((resolve) => {
  http.get({ socketPath: '/run/sidecar/sidecar.sock', path: '/v1/models', headers: { host: 'sidecar' } }, (res) => {
    res.resume();
    resolve(res.statusCode);
  }).once('error', (e) => resolve(e.code));
});
(async () => {
  const out = {
    modelTcp: await tcp(modelPort),
    sidecarTcp: await tcp(sidecarPort),
    sidecarSocket: await viaSocket(),
    etcPasswd: tryFs(() => fs.readFileSync('/etc/passwd')),
    projectEntries: fs.readdirSync(root).sort(),
    projectLockfile: tryFs(() => fs.readFileSync(root + '/package-lock.json')),
    writeDist: tryFs(() => fs.writeFileSync(root + '/dist/probe.txt', 'x')),
    writeWorkspace: tryFs(() => fs.writeFileSync('/workspace/probe.txt', 'x')),
    interfaces: Object.keys(require('node:os').networkInterfaces()),
    env: Object.keys(process.env).sort(),
    capabilities: /CapEff:\\s+(\\w+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1],
    pid: process.pid,
  };
  process.stdout.write(JSON.stringify(out));
})();
`;

function probe(layout: { workspaceDir: string; ipcDir: string }, args: string[]): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    execFile(
      bwrap!,
      confinedArgv({ root: REPO, ...layout }, [sandboxNodePath(), '-e', PROBE, ...args]),
      { env: { PATH: SANDBOX_PATH_ENV, HOME: SANDBOX_WORKSPACE }, timeout: 20_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}: ${stderr}`)) : resolve(JSON.parse(stdout))),
    );
  });
}

describe('agent confinement', () => {
  let model: FakeModel;
  let receiver: EventReceiver;
  let workDir: string;
  const secret = newRunEventSecret();
  const adapters: ProcessSandboxAdapter[] = [];

  before(async () => {
    // slow turns keep the agent running while the test looks at it from outside
    model = await startFakeModel({ latencyMs: 800 });
    receiver = await startEventReceiver(secret);
    workDir = await mkdtemp(join(tmpdir(), 'sbx-confine-'));
  });
  after(async () => {
    await Promise.all(adapters.map((a) => a.close()));
    await receiver.close();
    await model.close();
    await rm(workDir, { recursive: true, force: true });
  });

  async function runToCompletion(adapter: ProcessSandboxAdapter, runId: string) {
    const { sandboxId } = await adapter.start(aSandboxSpec({ runId, eventsBaseUrl: receiver.url, secret, modelUrl: model.url }));
    const procs = adapter.processes(sandboxId)!;
    const agentPid = await agentNodePid(procs.agentPid);
    const netNamespace = readlinkSync(`/proc/${agentPid}/ns/net`);
    const rootView = { etc: existsSync(`/proc/${agentPid}/root/etc/passwd`), git: existsSync(`/proc/${agentPid}/root${REPO}/.git`) };
    await waitUntil(() => receiver.deliveries.some((d) => d.path.includes(runId) && (d.events ?? []).some((e) => e.type === 'completed')));
    const types = receiver.deliveries.filter((d) => d.path.includes(runId)).flatMap((d) => (d.events ?? []).map((e) => e.type));
    return { sandboxId, procs, netNamespace, rootView, types };
  }

  test(bwrap ? 'with bwrap: the agent runs with no network and a narrow view, and completes through the socket' : 'without bwrap: the adapter says so and the agent runs unconfined', async () => {
    const adapter = await createProcessAdapter({ warmPool: 1, workDir: join(workDir, 'auto') });
    adapters.push(adapter);
    await adapter.whenWarm();
    const run = await runToCompletion(adapter, 'run_confined');
    assert.equal(run.types[0], 'started');
    assert.ok(run.types.includes('output'));
    assert.equal(run.types.at(-1), 'completed');

    if (!bwrap) {
      assert.deepEqual(adapter.isolation.confinement, 'none');
      assert.equal(adapter.isolation.confinementNote, 'bwrap is not on PATH');
      assert.equal(run.netNamespace, readlinkSync('/proc/self/ns/net'));
      await adapter.stop(run.sandboxId);
      return;
    }
    assert.equal(adapter.isolation.confinement, 'bubblewrap', JSON.stringify(adapter.isolation));
    assert.equal(run.procs.confined, true);
    // the agent's own network namespace, and a root that holds neither /etc nor the repository
    assert.notEqual(run.netNamespace, readlinkSync('/proc/self/ns/net'));
    assert.deepEqual(run.rootView, { etc: false, git: false });

    // the same sandbox, seen from inside, next to the live sidecar of that run
    const seen = await probe({ workspaceDir: join(run.procs.dir, 'workspace'), ipcDir: join(run.procs.dir, 'ipc') }, [
      new URL(model.url).port,
      String(run.procs.sidecarPort),
      REPO,
    ]);
    assert.equal(seen.modelTcp, 'ECONNREFUSED', 'the host loopback is out of reach');
    assert.equal(seen.sidecarTcp, 'ECONNREFUSED', "the sidecar's TCP port is out of reach");
    // the socket is the way to the sidecar, which answers only the run's token (the probe has none)
    assert.equal(seen.sidecarSocket, 401, 'the socket reaches the sidecar, which asks for the token');
    assert.equal(seen.etcPasswd, 'ENOENT');
    assert.deepEqual(seen.projectEntries, ['dist', 'node_modules']);
    assert.equal(seen.projectLockfile, 'ENOENT');
    assert.equal(seen.writeDist, 'EROFS');
    assert.equal(seen.writeWorkspace, 'ok');
    assert.deepEqual(seen.interfaces, ['lo']);
    assert.deepEqual(seen.env, ['HOME', 'PATH', 'PWD']);
    assert.equal(seen.capabilities, '0000000000000000', 'no capability, even for a root caller');
    assert.ok((seen.pid as number) < 10, 'its own pid namespace');
    await adapter.stop(run.sandboxId);
  });

  test("confine 'off': the agent shares the host network and reaches the sidecar over 127.0.0.1", async () => {
    const adapter = await createProcessAdapter({ warmPool: 1, workDir: join(workDir, 'off'), confine: 'off' });
    adapters.push(adapter);
    assert.deepEqual(adapter.isolation.confinement, 'none');
    assert.equal(adapter.isolation.confinementNote, 'confinement turned off');
    await adapter.whenWarm();
    const run = await runToCompletion(adapter, 'run_unconfined');
    assert.equal(run.procs.confined, false);
    assert.equal(run.netNamespace, readlinkSync('/proc/self/ns/net'));
    assert.deepEqual(run.rootView, { etc: true, git: true });
    assert.equal(run.types[0], 'started');
    assert.equal(run.types.at(-1), 'completed');
    await adapter.stop(run.sandboxId);
  });
});
