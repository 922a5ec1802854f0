// The platform as `npm start` runs it: no DATABASE_URL (embedded PostgreSQL under the data
// directory) and its embedded Restate. SIGTERM stops every part it started and exits 0; a new
// start on the same data directory finds the data, the ports and the encryption key again; and a
// SIGTERM with a request in flight drains: that request completes, new writes answer 503
// shutting_down, reads are still served, then the process exits.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { sessionCookieFrom } from '../support/builders.ts';
import { call, type CallOptions } from '../support/http.ts';
import { freePort } from '../support/platform-process.ts';
import { processesNaming } from '../support/embedded-platform.ts';
import { problemCodeLogEnv } from '../../lib/problem-log.ts';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const TOKEN = 'restart-bootstrap-token-0123456789';
const DRAIN_SECONDS = 9;

let dataDir: string;
let base: string;
let env: Record<string, string>;
let proc: ChildProcess | null = null;
let output = '';
let auth: CallOptions;
let endUserId: string;

async function start(): Promise<void> {
  const child = spawn(process.execPath, ['bin/start.mjs', 'platform'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  proc = child;
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the platform exited (${child.exitCode}):\n${output.slice(-4000)}`);
    if (await fetch(`${base}/health/ready`).then((r) => r.status === 200, () => false)) return;
    if (Date.now() > deadline) throw new Error(`the platform was not ready in time:\n${output.slice(-4000)}`);
    await sleep(100);
  }
}

/** The promise's value, or 'timeout' after `ms` (a timer that does not hold the process open). */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  return Promise.race([promise, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms).unref())]);
}

/** SIGTERM; resolves with the exit code and how long the exit took. */
async function terminate(): Promise<{ code: number | null; ms: number }> {
  const child = proc!;
  const began = Date.now();
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  const code = await within(exited, 30_000);
  assert.notEqual(code, 'timeout', `no exit 30 s after SIGTERM:\n${output.slice(-4000)}`);
  return { code: code as number | null, ms: Date.now() - began };
}

const processesOfDataDir = () => processesNaming(dataDir);

const readKept = () => ({
  ports: JSON.parse(fs.readFileSync(path.join(dataDir, 'ports.json'), 'utf8')) as { postgres: number; restateAdmin: number },
  key: fs.readFileSync(path.join(dataDir, 'encryption.key'), 'utf8'),
});

before(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'restart-'));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    BOOTSTRAP_TOKEN: TOKEN,
    SANDBOX_WARM_POOL: '0',
    ...problemCodeLogEnv(),
    SHUTDOWN_DRAIN_SECONDS: String(DRAIN_SECONDS),
  };
  await start();
});

after(async () => {
  if (proc && proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  // Whatever a failed run left behind of this data directory's processes, and only those.
  for (const { pid } of processesOfDataDir()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
});

test('SIGTERM exits 0 within seconds and leaves no PostgreSQL or Restate of the data directory', async () => {
  const redeemed = await call(base, 'POST', '/api/auth/bootstrap/redeem', {
    body: { token: TOKEN, email: 'owner@example.test', password: 'a long enough password 123', name: 'Owner' },
  });
  assert.equal(redeemed.status, 201, redeemed.text);
  auth = { cookie: sessionCookieFrom(redeemed.headers)!, org: redeemed.body.org_id, space: redeemed.body.space_id };
  const created = await call(base, 'POST', '/api/end-users', { ...auth, body: { externalId: 'kept', name: 'Survivor' } });
  assert.equal(created.status, 201, created.text);
  endUserId = created.body.id;

  const running = processesOfDataDir();
  assert.ok(running.some((p) => /postgres/.test(p.cmd)), `an embedded PostgreSQL runs: ${JSON.stringify(running)}`);
  assert.ok(running.some((p) => /restate/.test(p.cmd)), `an embedded Restate runs: ${JSON.stringify(running)}`);

  const { code, ms } = await terminate();
  assert.equal(code, 0, output.slice(-2000));
  assert.ok(ms < 5_000, `exited in ${ms} ms`);
  assert.deepEqual(processesOfDataDir(), []);
});

test('a new start on the same data directory has the data, the ports and the encryption key', async () => {
  const before = readKept();
  await start();
  const afterRestart = readKept();
  assert.deepEqual(afterRestart.ports, before.ports);
  assert.equal(afterRestart.key, before.key);
  // The database listens on the kept port (postmaster.pid line 4), Restate's admin on its own.
  const postmaster = fs.readFileSync(path.join(dataDir, 'postgres', 'cluster', 'postmaster.pid'), 'utf8').split('\n');
  assert.equal(Number(postmaster[3]), before.ports.postgres);
  assert.equal((await fetch(`http://127.0.0.1:${before.ports.restateAdmin}/health`)).status, 200);

  const kept = await call(base, 'GET', `/api/end-users/${endUserId}`, auth);
  assert.equal(kept.status, 200, 'the session and the end-user survived');
  assert.equal(kept.body.name, 'Survivor');
  const again = await call(base, 'POST', '/api/auth/bootstrap/redeem', {
    body: { token: TOKEN, email: 'second@example.test', password: 'a long enough password 123', name: 'Second' },
  });
  assert.equal(again.status, 410);
  assert.equal(again.body.code, 'bootstrap_token_unavailable');
});

test('SIGTERM during a request: it completes, new writes answer 503 shutting_down, reads are served, then the process exits 0', async () => {
  // A write whose body is still arriving when the signal comes.
  let finishBody!: () => void;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new TextEncoder().encode('{"externalId":"in-flight",'));
      finishBody = () => {
        c.enqueue(new TextEncoder().encode('"name":"Late"}'));
        c.close();
      };
    },
  });
  const inFlight = fetch(`${base}/api/end-users`, {
    method: 'POST',
    headers: { cookie: auth.cookie!, 'x-org-id': auth.org!, 'x-space-id': auth.space!, 'content-type': 'application/json' },
    body,
    duplex: 'half',
  } as RequestInit);
  await sleep(500);

  const child = proc!;
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const mark = output.length;
  child.kill('SIGTERM');
  for (let i = 0; !output.slice(mark).includes('draining'); i++) {
    assert.ok(i < 100, `the platform did not start draining:\n${output.slice(-2000)}`);
    await sleep(50);
  }

  const refused = await call(base, 'POST', '/api/end-users', { ...auth, body: { externalId: 'during-drain', name: 'New' } });
  assert.equal(refused.status, 503);
  assert.equal(refused.body.code, 'shutting_down');
  assert.equal(refused.body.retry_after, DRAIN_SECONDS);
  assert.equal(refused.headers.get('retry-after'), String(DRAIN_SECONDS));
  const read = await call(base, 'GET', `/api/end-users/${endUserId}`, auth);
  assert.equal(read.status, 200);
  assert.equal(child.exitCode, null, 'the process waits for the request in flight');

  finishBody();
  const done = await inFlight;
  assert.equal(done.status, 201);
  assert.equal(((await done.json()) as { name: string }).name, 'Late');
  const code = await within(exited, 15_000);
  assert.equal(code, 0, output.slice(-2000));
  assert.deepEqual(processesOfDataDir(), []);
});
