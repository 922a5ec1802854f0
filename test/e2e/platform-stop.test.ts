// Stopping: a terminal's Ctrl-C (SIGINT to the whole foreground process group) stops an idle
// platform within seconds; with a request in flight it waits for that request, whose database
// and engine stay up meanwhile, and nothing is started again on the way out. SIGTERM sent to the
// `npm start` process alone (npm does not pass it on) still stops the platform and its children.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { sessionCookieFrom } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { embeddedSetup, until, within, type EmbeddedSetup } from '../support/embedded-platform.ts';

const TOKEN = 'stop-bootstrap-token-0123456789';
let setup: EmbeddedSetup;
before(async () => {
  setup = await embeddedSetup({ BOOTSTRAP_TOKEN: TOKEN });
});
after(() => setup.cleanup());

test('Ctrl-C to the process group stops an idle platform within seconds and restarts nothing', async () => {
  const started = setup.launch();
  await setup.waitReady(started);
  assert.ok(setup.processes().some((p) => /postgres/.test(p.cmd)), 'an embedded PostgreSQL runs');
  assert.ok(setup.processes().some((p) => /restate/.test(p.cmd)), 'an embedded Restate runs');
  // Idle readiness polls have come and gone; the stop waits for nothing in flight.
  const began = Date.now();
  process.kill(-started.child.pid!, 'SIGINT');
  const code = await within(started.exited, 60_000);
  const ms = Date.now() - began;
  assert.equal(code, 0, started.output().slice(-2000));
  // Idle, a stop is the database's shutdown checkpoint and little else: generous for a loaded machine.
  assert.ok(ms < 8_000, `stopped in ${ms} ms`);
  assert.doesNotMatch(started.output(), /starting it again|exited; starting/);
  assert.deepEqual(setup.processes(), []);
  assert.equal(fs.existsSync(path.join(setup.dataDir, 'platform.lock')), false, 'the lock is released');
});

test('Ctrl-C with a write in flight: the write completes against a database still up, nothing is restarted', async () => {
  const started = setup.launch();
  await setup.waitReady(started);
  const redeemed = await call(setup.base, 'POST', '/api/auth/bootstrap/redeem', {
    body: { token: TOKEN, email: 'owner@example.test', password: 'a long enough password 123', name: 'Owner' },
  });
  assert.equal(redeemed.status, 201, redeemed.text);
  // A write whose body is still arriving when the terminal's signal comes.
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
  const inFlight = fetch(`${setup.base}/api/end-users`, {
    method: 'POST',
    headers: { cookie: sessionCookieFrom(redeemed.headers)!, 'x-org-id': redeemed.body.org_id, 'x-space-id': redeemed.body.space_id, 'content-type': 'application/json' },
    body,
    duplex: 'half',
  } as RequestInit);
  await new Promise((r) => setTimeout(r, 500));
  process.kill(-started.child.pid!, 'SIGINT');
  await until(() => started.output().includes('draining'), 10_000, 'the platform starts draining');
  // Longer than the supervisors' watch interval: a child that had died would be noticed by now.
  await new Promise((r) => setTimeout(r, 2_000));
  assert.equal(started.child.exitCode, null, 'the platform waits for the request in flight');
  finishBody();
  const done = await inFlight;
  assert.equal(done.status, 201, await done.clone().text());
  assert.equal(((await done.json()) as { name: string }).name, 'Late');
  assert.equal(await within(started.exited, 30_000), 0, started.output().slice(-2000));
  assert.doesNotMatch(started.output(), /starting it again/);
  assert.deepEqual(setup.processes(), []);
});

test('SIGTERM to the `npm start` process alone stops the platform and its children', async () => {
  const npm = setup.launch('npm');
  await setup.waitReady(npm);
  const platformPid = (JSON.parse(fs.readFileSync(path.join(setup.dataDir, 'platform.lock'), 'utf8')) as { pid: number }).pid;
  assert.notEqual(platformPid, npm.child.pid, 'npm runs the platform as a child');
  process.kill(npm.child.pid!, 'SIGTERM');
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return !fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.startsWith('Z');
    } catch {
      return false;
    }
  };
  await until(() => !alive(platformPid), 30_000, `the platform (pid ${platformPid}) exits:\n${npm.output().slice(-2000)}`);
  await until(() => setup.processes().length === 0, 15_000, 'its PostgreSQL and Restate stop');
  assert.match(npm.output(), /parent exited: draining and stopping/);
});
