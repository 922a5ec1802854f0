// Agent runtimes started from the same V8 startup snapshot share nothing: each is a fresh process
// in a fresh sandbox. Run A plants a secret everywhere a later run could look (its workspace, a
// module-level setting of the runtime, an object of the snapshot's heap, globalThis, process.env)
// and stays alive; run B, started from the same blob while A lives, and run C, started after A
// ended, look for each and find none. The random sources differ between all three.
// The "tool" doing the planting and looking is a script node preloads (-r) into the runtime's
// process before its main runs, the same realm the runtime's own modules live in.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
// @ts-expect-error: a plain ESM script without type declarations
import { ensureBundle } from '../../bin/start.mjs';
import { confinedArgv, findBubblewrap, SANDBOX_IPC_DIR, SANDBOX_PATH_ENV, SANDBOX_WORKSPACE, sandboxNodePath } from '../../activities/sandbox/confinement.ts';
import { agentSnapshotArgv } from '../../activities/sandbox/startup-snapshot.ts';
import { REPO } from './sidecar-run-harness.ts';

const FLAGS = ['--max-old-space-size=160', '--max-semi-space-size=1'];
const SECRET = `snapshot-leak-${process.pid}-${Date.now()}`;
const bwrap = findBubblewrap();

const PROBE = `
const fs = require('node:fs'), path = require('node:path'), crypto = require('node:crypto');
const secret = process.env.PROBE_SECRET;
const here = process.cwd();
if (secret) {
  // plant: the workspace, the runtime's own module-level setting, an object of the snapshot's heap, globalThis, env
  fs.writeFileSync(path.join(here, 'secret.txt'), secret);
  globalThis.AI_SDK_LOG_WARNINGS = secret;
  path.leaked = secret;
  globalThis.leaked = secret;
  process.env.LEAKED = secret;
  delete process.env.PROBE_SECRET;
}
const otherWorkspace = process.env.PROBE_OTHER;
const tryRead = (f) => { try { return fs.readFileSync(f, 'utf8'); } catch (e) { return e.code; } };
const report = {
  workspaceFiles: fs.readdirSync(here).sort(),
  otherWorkspace: otherWorkspace ? tryRead(path.join(otherWorkspace, 'secret.txt')) : null,
  aiSdkLogWarnings: String(globalThis.AI_SDK_LOG_WARNINGS),
  pathLeaked: String(path.leaked),
  globalLeaked: String(globalThis.leaked),
  env: process.env,
  random: [Math.random(), Math.random(), Math.random()],
  randomBytes: crypto.randomBytes(16).toString('hex'),
  randomUUID: crypto.randomUUID(),
  // the array methods lent only while the snapshot was built (agent-runtime/snapshot-prelude.ts) are V8's own again
  arrayCopiesNative: ['toSorted', 'toReversed', 'toSpliced', 'with'].every((n) => String(Array.prototype[n]).includes('[native code]')),
};
process.stderr.write('probe:' + JSON.stringify(report) + '\\n');
`;

interface Report {
  workspaceFiles: string[];
  otherWorkspace: string | null;
  aiSdkLogWarnings: string;
  pathLeaked: string;
  globalLeaked: string;
  env: Record<string, string>;
  random: number[];
  randomBytes: string;
  randomUUID: string;
  arrayCopiesNative: boolean;
}

interface Started {
  child: ChildProcess;
  workspace: string;
  report: Report;
  ready: Record<string, unknown>;
  exited: Promise<void>;
}

describe('agent runtimes started from one startup snapshot', () => {
  let dir: string;
  let snapshotArgv: string[];
  const children: ChildProcess[] = [];

  before(async () => {
    await ensureBundle();
    dir = await mkdtemp(join(tmpdir(), 'snapshot-isolation-'));
    await mkdir(join(dir, 'ipc'));
    await writeFile(join(dir, 'ipc', 'probe.cjs'), PROBE);
    const argv = await agentSnapshotArgv(REPO, sandboxNodePath(), FLAGS);
    assert.ok(argv, 'the startup snapshot was built');
    snapshotArgv = argv;
  });
  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** One agent runtime from the snapshot, in its own workspace (confined when bwrap is here), the probe preloaded. */
  async function start(name: string, env: Record<string, string>): Promise<Started> {
    const workspace = join(dir, name);
    await mkdir(workspace);
    const node = sandboxNodePath();
    const probe = bwrap ? `${SANDBOX_IPC_DIR}/probe.cjs` : join(dir, 'ipc', 'probe.cjs');
    const command = [node, ...snapshotArgv, '-r', probe];
    const [file, args] = bwrap
      ? [bwrap, confinedArgv({ root: REPO, workspaceDir: workspace, ipcDir: join(dir, 'ipc'), bwrap }, command)]
      : [node, command.slice(1)];
    const child = spawn(file, args, {
      cwd: workspace,
      env: { PATH: SANDBOX_PATH_ENV, HOME: bwrap ? SANDBOX_WORKSPACE : workspace, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    children.push(child);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    let stdout = '';
    let stderr = '';
    const ready = new Promise<Record<string, unknown>>((resolve, reject) => {
      child.stdout!.on('data', (chunk) => {
        stdout += chunk;
        const newline = stdout.indexOf('\n');
        if (newline >= 0) resolve(JSON.parse(stdout.slice(0, newline)));
      });
      void exited.then(() => reject(new Error(`${name} exited before its ready line: ${stderr.slice(-2000)}`)));
    });
    const report = new Promise<Report>((resolve, reject) => {
      child.stderr!.on('data', (chunk) => {
        stderr += chunk;
        const line = stderr.split('\n').find((l) => l.startsWith('probe:'));
        if (line) resolve(JSON.parse(line.slice('probe:'.length)));
      });
      void exited.then(() => reject(new Error(`${name} exited before its probe reported: ${stderr.slice(-2000)}`)));
    });
    return { child, workspace, report: await report, ready: await ready, exited };
  }

  test('a run cannot see a previous run\'s workspace, memory or environment, and the random sources differ', async () => {
    const a = await start('a', { PROBE_SECRET: SECRET });
    // A planted everything, and it holds
    assert.deepEqual(a.ready, { ready: true, snapshot: true }, 'A started from the snapshot');
    assert.deepEqual(a.report.workspaceFiles, ['secret.txt']);
    assert.equal(readFileSync(join(a.workspace, 'secret.txt'), 'utf8'), SECRET);
    assert.equal(a.report.aiSdkLogWarnings, SECRET);
    assert.equal(a.report.pathLeaked, SECRET);
    assert.equal(a.report.globalLeaked, SECRET);
    assert.equal(a.report.env.LEAKED, SECRET);

    const looks: Report[] = [];
    // B starts from the same blob while A is alive and holds the secret
    const b = await start('b', { PROBE_OTHER: a.workspace });
    looks.push(b.report);
    assert.deepEqual(b.ready, { ready: true, snapshot: true }, 'B started from the snapshot');
    assert.equal(a.child.exitCode, null, 'A was still running while B looked');
    // A ends (its stdin closes, as when its pool lets go of it), then C starts from the same blob
    a.child.stdin!.end();
    await a.exited;
    const c = await start('c', { PROBE_OTHER: a.workspace });
    looks.push(c.report);
    assert.deepEqual(c.ready, { ready: true, snapshot: true }, 'C started from the snapshot');

    for (const look of looks) {
      assert.deepEqual(look.workspaceFiles, [], 'a fresh workspace');
      // confined, the other run's folder is not in the sandbox at all; unconfined it is only a different folder
      if (bwrap) assert.equal(look.otherWorkspace, 'ENOENT');
      assert.equal(look.aiSdkLogWarnings, 'false', "the runtime's module-level setting is the snapshot's, not A's");
      assert.equal(look.pathLeaked, 'undefined');
      assert.equal(look.globalLeaked, 'undefined');
      assert.equal(look.env.LEAKED, undefined);
      assert.ok(!JSON.stringify(look).includes(SECRET), 'nothing of A anywhere in what B and C see');
    }
    const all = [a.report, b.report, c.report];
    for (const r of all) assert.equal(r.arrayCopiesNative, true);
    assert.equal(new Set(all.map((r) => r.random.join(','))).size, 3, 'Math.random is seeded per process');
    assert.equal(new Set(all.map((r) => r.randomBytes)).size, 3, 'crypto.randomBytes differs per process');
    assert.equal(new Set(all.map((r) => r.randomUUID)).size, 3, 'crypto.randomUUID differs per process');

    for (const s of [b, c]) s.child.stdin!.end();
    await Promise.all([b.exited, c.exited]);
    assert.equal(existsSync(join(dir, 'b', 'secret.txt')), false);
  });

  test('a bundle that cannot be built into a snapshot leaves the agent on its bundle, logged once', async () => {
    // a runtime whose loading fails: node builds no blob from it
    const root = join(dir, 'broken-root');
    await mkdir(join(root, 'dist'), { recursive: true });
    await writeFile(join(root, 'dist', 'agent-runtime.cjs'), "throw new Error('this bundle does not load');\n");
    const warnings: Array<{ msg: string; fields?: Record<string, unknown> }> = [];
    const log = { debug() {}, info() {}, error() {}, warn: (msg: string, fields?: Record<string, unknown>) => void warnings.push({ msg, fields }) };
    assert.equal(await agentSnapshotArgv(root, sandboxNodePath(), FLAGS, log), undefined);
    assert.equal(await agentSnapshotArgv(root, sandboxNodePath(), FLAGS, log), undefined);
    assert.equal(warnings.length, 1, 'logged once');
    assert.match(String(warnings[0].fields?.error), /this bundle does not load/);
    assert.deepEqual(await readdir(join(root, 'dist')), ['agent-runtime.cjs'], 'no blob and no temporary file left');
  });
});
