// An attempt under way when its sender dies is not lost from the record. A replica claims a
// delivery and posts its first attempt to a receiver that does not answer yet; the replica is
// killed (SIGKILL) mid-attempt. Once the attempt's timeout and margin have passed, the sweep of a
// surviving replica hands the delivery to its workflow, whose next attempt is delivered: the log
// shows the attempt cut short (interrupted, no answer) and the one that succeeded, and
// attempt_count counts both.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { INTERRUPTED } from '../../api/modules/webhooks/delivery.ts';
import { freePort } from '../../lib/free-port.ts';
import { call } from '../support/http.ts';
import { aDeliveryWorld, aReceiver, type DeliveryWorld, type Receiver } from './webhooks-harness.ts';

const TIMEOUT_S = 3;
const here = path.dirname(new URL(import.meta.url).pathname);
let world: DeliveryWorld;
let receiver: Receiver;
let replica: ChildProcess | undefined;

before(async () => {
  const port = await freePort();
  receiver = await aReceiver(port);
  await receiver.listen();
  const instanceKey = randomBytes(32);
  world = await aDeliveryWorld(port, { WEBHOOK_RETRY_SCHEDULE_SECONDS: '0.25,0.25', WEBHOOK_TIMEOUT_SECONDS: String(TIMEOUT_S) }, { dispatcher: false, instanceKey });
  replica = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'webhooks-replica-host.ts')], {
    env: {
      PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root',
      DATABASE_URL: world.app.deps.database.url, INGRESS_URL: world.ingressUrl, SECRET_KEY: instanceKey.toString('hex'),
      ALLOW_INTERNAL: `127.0.0.1:${port}`, TIMEOUT_MS: String(TIMEOUT_S * 1000),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    replica!.stdout!.on('data', (d) => String(d).includes('ready') && resolve());
    replica!.once('exit', (code) => reject(new Error(`the replica exited (${code})`)));
  });
});
after(async () => {
  replica?.kill('SIGKILL');
  for (const release of receiver?.hanging ?? []) release();
  await world?.close();
  await receiver?.close();
});

test('a replica killed mid-attempt: the attempt stays in the log, interrupted and counted, and the next one delivers', async () => {
  const hook = await world.createHook({ url: `${receiver.url}/crash`, events: ['run.success'] });
  receiver.secrets = [hook.secret];
  // the first post is held unanswered: the attempt is under way when its sender dies
  receiver.answer = (_path, n) => (n === 1 ? 'hang' : 200);
  const run = await world.aRun();
  await world.end(run, { status: 'success', output: 'kept' });
  await receiver.until(() => receiver.hanging.length === 1);

  const [begun] = await world.deliveriesUntil(hook.id, (d) => d.length === 1);
  assert.equal(begun.attempt_count, 1, 'recorded before it was sent');
  assert.deepEqual(begun.attempts.map((a: any) => [a.attempt, a.status_code, a.duration_ms, a.error]), [[1, null, null, null]], 'under way: no outcome yet');

  replica!.kill('SIGKILL');
  await new Promise((r) => replica!.once('exit', r));
  // its connection died with it: the held post is never answered
  receiver.hanging.splice(0);

  // a surviving replica: its sweep takes the delivery over once the attempt cannot still be under way
  world.anotherDispatcher();
  const deadline = Date.now() + 90_000;
  while (!receiver.received.some((r) => r.path === '/crash')) {
    assert.ok(Date.now() < deadline, 'the delivery was taken over');
    await world.sweep();
    await new Promise((r) => setTimeout(r, 1000));
  }
  const [done] = await world.deliveriesUntil(hook.id, (d) => d[0]?.status === 'succeeded');
  assert.equal(done.attempt_count, 2);
  assert.deepEqual(done.attempts.map((a: any) => [a.attempt, a.status_code, a.error]), [[1, null, INTERRUPTED], [2, 200, null]]);

  // the same on the wire
  const listed = await call(world.app.url, 'GET', `/api/webhooks/${hook.id}/deliveries`, { key: world.key });
  assert.equal(listed.status, 200, listed.text);
  assert.deepEqual(listed.body.data[0].attempts.map((a: any) => [a.attempt, a.status_code, a.duration_ms, a.error]), [[1, null, null, INTERRUPTED], [2, 200, done.attempts[1].duration_ms, null]]);
  assert.equal(listed.body.data[0].attempt_count, 2);
});
