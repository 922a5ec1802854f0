// One platform per data directory, and an embedded PostgreSQL that stays up: a second start on
// the same directory refuses with one line naming the first and leaves it serving; a database
// (or Restate) that dies makes readiness say so, and is started again on the same port and data.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { sessionCookieFrom } from '../support/builders.ts';
import { call, type CallOptions } from '../support/http.ts';
import { embeddedSetup, until, within, type EmbeddedSetup, type Started } from '../support/embedded-platform.ts';

const TOKEN = 'one-instance-bootstrap-token-0123456789';
let setup: EmbeddedSetup;
let first: Started;
let auth: CallOptions;

const postmasterPid = () => Number(fs.readFileSync(path.join(setup.dataDir, 'postgres', 'cluster', 'postmaster.pid'), 'utf8').split('\n')[0]);
const ready = () => fetch(`${setup.base}/health/ready`).then(async (r) => ({ status: r.status, body: (await r.json()) as { status: string; checks?: Record<string, string> } }));

before(async () => {
  setup = await embeddedSetup({ BOOTSTRAP_TOKEN: TOKEN });
  first = setup.launch();
  await setup.waitReady(first);
});
after(async () => {
  if (first.child.exitCode === null) {
    first.child.kill('SIGTERM');
    await within(first.exited, 30_000);
  }
  setup.cleanup();
});

test('a second start on the same data directory refuses in one line and the first keeps serving', async () => {
  const before = { pg: postmasterPid(), procs: setup.processes().map((p) => p.pid).sort() };
  const second = setup.launch();
  const code = await within(second.exited, 60_000);
  assert.notEqual(code, 'timeout', 'the second start gave up');
  assert.notEqual(code, 0);
  const said = second.output().trim();
  assert.match(said, new RegExp(`^Another platform is running on the data directory .*: pid ${first.child.pid}, API ${setup.base}, since `));
  assert.equal(said.split('\n').length, 1, said);

  assert.equal(postmasterPid(), before.pg, 'the same database server');
  assert.deepEqual(setup.processes().map((p) => p.pid).sort(), before.procs, 'the first platform\'s children are untouched');
  assert.deepEqual(await ready(), { status: 200, body: { status: 'ok' } });
  const redeemed = await call(setup.base, 'POST', '/api/auth/bootstrap/redeem', {
    body: { token: TOKEN, email: 'owner@example.test', password: 'a long enough password 123', name: 'Owner' },
  });
  assert.equal(redeemed.status, 201, redeemed.text);
  auth = { cookie: sessionCookieFrom(redeemed.headers)!, org: redeemed.body.org_id, space: redeemed.body.space_id };
  const created = await call(setup.base, 'POST', '/api/end-users', { ...auth, body: { externalId: 'first', name: 'Still here' } });
  assert.equal(created.status, 201, created.text);
});

test('a killed embedded PostgreSQL: readiness says unavailable, the server is started again, calls succeed', async () => {
  const killed = postmasterPid();
  const port = Number(fs.readFileSync(path.join(setup.dataDir, 'postgres', 'cluster', 'postmaster.pid'), 'utf8').split('\n')[3]);
  process.kill(killed, 'SIGKILL');
  // Readiness says unavailable while the server is down; the watchdog may start it again before a
  // probe looks (probes are cached for a second), so either is progress here.
  let seen503: { status: string; checks?: Record<string, string> } | undefined;
  await until(async () => {
    const r = await ready();
    if (r.status === 503) seen503 = r.body;
    return seen503 !== undefined || /embedded PostgreSQL .* exited; starting it again/.test(first.output());
  }, 30_000, 'readiness reports the database, or the watchdog restarts it');
  if (seen503) assert.deepEqual(seen503, { status: 'unavailable', checks: { database: 'unreachable', engine: 'ok' } });
  await until(() => { try { return postmasterPid() !== killed; } catch { return false; } }, 90_000, `a new server:\n${first.output().slice(-2000)}`);
  await until(async () => (await ready()).status === 200, 90_000, `readiness recovers:\n${first.output().slice(-2000)}`);
  const restarted = fs.readFileSync(path.join(setup.dataDir, 'postgres', 'cluster', 'postmaster.pid'), 'utf8').split('\n');
  assert.equal(Number(restarted[3]), port, 'on the same port');
  assert.match(first.output(), /embedded PostgreSQL .* exited; starting it again/);
  // Pooled connections to the killed server fail once each as the pool finds them dead.
  let listed = await call(setup.base, 'GET', '/api/end-users', auth);
  await until(async () => (listed = await call(setup.base, 'GET', '/api/end-users', auth)).status === 200, 15_000, 'calls succeed again');
  assert.ok(listed.text.includes('Still here'), 'on the same data');
  const created = await call(setup.base, 'POST', '/api/end-users', { ...auth, body: { externalId: 'after', name: 'After the restart' } });
  assert.equal(created.status, 201, created.text);
});

test('an engine that does not answer makes readiness name it; a killed one is started again', async () => {
  const pidFile = path.join(setup.dataDir, 'restate.pid');
  const pid = Number(fs.readFileSync(pidFile, 'utf8'));
  // Frozen, it is alive but answers nothing: readiness must not take a live pid for a working engine.
  process.kill(pid, 'SIGSTOP');
  let seen: { status: number; body: { status: string; checks?: Record<string, string> } } | undefined;
  try {
    await until(async () => (seen = await ready()).status === 503, 15_000, 'readiness reports the engine');
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  assert.deepEqual(seen!.body, { status: 'unavailable', checks: { database: 'ok', engine: 'unreachable' } });
  await until(async () => (await ready()).status === 200, 30_000, 'readiness recovers');

  process.kill(pid, 'SIGKILL');
  await until(() => Number(fs.readFileSync(pidFile, 'utf8')) !== pid, 60_000, `a new engine is started:\n${first.output().slice(-2000)}`);
  await until(async () => (await ready()).status === 200, 60_000, 'readiness recovers');
  assert.match(first.output(), /embedded Restate server exited; starting it again/);
});
