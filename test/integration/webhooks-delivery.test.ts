// Webhook deliveries end to end: a run's committed status change becomes one durable invocation
// per matching webhook on a real Restate server, posted to a receiver on loopback that verifies
// every message with the standardwebhooks library. While the receiver is down deliveries retry on
// the (shortened) backoff schedule and all arrive once it is back, the delivery log shows every
// attempt, and a rotation in the middle loses nothing. The answer codes: 410 disables the webhook,
// other 4xx fail at once except 408 and 429, exhausted retries fail; a private target is refused
// at delivery; a receiver that hangs holds nothing else up; two dispatchers never deliver twice; a
// replica dying between claim, send and record (or before starting a retry) loses nothing.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from '../../lib/free-port.ts';
import { call } from '../support/http.ts';
import { aDeliveryWorld, aReceiver, type DeliveryWorld, type Receiver } from './webhooks-harness.ts';

const RETRIES = 12;

describe('webhook deliveries', () => {
  let world: DeliveryWorld;
  let receiver: Receiver;

  before(async () => {
    const port = await freePort();
    receiver = await aReceiver(port);
    world = await aDeliveryWorld(port, { WEBHOOK_RETRY_SCHEDULE_SECONDS: Array(RETRIES).fill('0.25').join(','), WEBHOOK_TIMEOUT_SECONDS: '3' });
  });
  after(async () => {
    for (const release of receiver?.hanging ?? []) release();
    await world?.close();
    await receiver?.close();
  });

  test('while the receiver is down deliveries retry; all arrive once it is back, verified, once each; a rotation in the middle loses nothing', async () => {
    const hook = await world.createHook({ url: `${receiver.url}/main`, payloadMode: 'full' });
    const runs = [await world.aRun('pending'), await world.aRun('pending'), await world.aRun('pending')];
    for (const id of runs) await world.pool.query(`UPDATE runs SET status = 'running', started_at = now() WHERE id = $1`, [id]);
    await world.end(runs[0], { status: 'success', output: { answer: 42 } });
    await world.end(runs[1], { status: 'failed', error: { code: 'tool_crashed', message: 'boom' } });
    await world.end(runs[2], { status: 'timeout', error: { code: 'run_timeout', message: 'too slow' } });

    // nothing listens on the port yet: every delivery fails at least twice
    await world.deliveriesUntil(hook.id, (d) => d.length === 6 && d.every((x) => x.attempts.filter((a: { duration_ms: number | null }) => a.duration_ms !== null).length >= 2));
    const rotated = await call(world.app.url, 'POST', `/api/webhooks/${hook.id}/rotate`, { key: world.key });
    assert.equal(rotated.status, 200);
    // an attempt signed after this second was signed after the rotation
    const rotatedBy = Math.floor(Date.now() / 1000);
    receiver.secrets = [rotated.body.secret, hook.secret];
    await receiver.listen();
    await receiver.until((r) => r.filter((x) => x.path === '/main').length >= 6);

    const log = await world.deliveriesUntil(hook.id, (d) => d.every((x) => x.status === 'succeeded'));
    const got = receiver.received.filter((x) => x.path === '/main');
    assert.equal(got.length >= 6, true);
    assert.deepEqual([...new Set(got.map((x) => x.id))].sort(), log.map((d) => d.id).sort(), 'each delivery arrived, under its delivery id');
    for (const d of log) assert.ok(got.filter((x) => x.id === d.id).length <= d.attempt_count);
    // signed by the new secret and, for 24 hours, the previous one; an attempt already under way
    // when the rotation answered (signed before it) carries the previous one alone
    assert.ok(got.every((x) => x.verifiedWith.includes(hook.secret)), 'every attempt verifies under the secret the receiver held before');
    assert.ok(got.some((x) => x.verifiedWith.length === 2), 'attempts signed after the rotation carry both');
    for (const x of got) {
      assert.ok(x.verifiedWith.length === 2 || x.signedAt <= rotatedBy, `${x.id} signed at ${x.signedAt} (rotation by ${rotatedBy}): ${x.verifiedWith.length} signature(s)`);
    }
    assert.deepEqual([...new Set(got.map((x) => `${x.body.data.id} ${x.body.type}`))].sort(), runs.flatMap((id, i) => [`${id} run.started`, `${id} run.${['success', 'failed', 'timeout'][i]}`]).sort());
    const success = got.find((x) => x.body.type === 'run.success')!;
    const asShown = await call(world.app.url, 'GET', `/api/runs/${runs[0]}`, { key: world.key });
    assert.deepEqual(success.body.data, asShown.body, 'full payload: the run as GET /api/runs/{id} shows it, output included');
    assert.deepEqual(success.body.data.result, { output: { answer: 42 } });
    // one serialisation of a run: the full payload's data is byte for byte what GET /api/runs/{id}
    // sends (key order, no PostgreSQL token spacing), and every body is compact JSON
    assert.equal(success.raw, `{"type":"run.success","timestamp":${JSON.stringify(success.body.timestamp)},"data":${asShown.text}}`);
    for (const x of got) {
      assert.doesNotMatch(x.raw, /" : |, "/, `${x.body.type}: compact JSON`);
      assert.equal(x.raw, JSON.stringify(JSON.parse(x.raw)));
    }

    // the log through the API: every attempt, failed ones with their error and next attempt
    const wire = await call(world.app.url, 'GET', `/api/webhooks/${hook.id}/deliveries`, { key: world.key });
    assert.equal(wire.status, 200);
    for (const d of wire.body.data) {
      assert.equal(d.status, 'succeeded');
      assert.equal(d.attempts.length, d.attempt_count);
      assert.ok(d.attempt_count >= 3, `${d.id}: ${d.attempt_count} attempts`);
      assert.deepEqual(d.attempts.map((a: { attempt: number }) => a.attempt), Array.from({ length: d.attempt_count }, (_, i) => i + 1));
      const last = d.attempts.at(-1);
      assert.deepEqual([last.status_code, last.error, last.next_attempt_at], [200, null, null]);
      for (const a of d.attempts.slice(0, -1)) {
        assert.equal(a.status_code, null);
        assert.match(a.error, /^network: /);
        assert.ok(a.next_attempt_at > a.started_at);
        assert.equal(typeof a.duration_ms, 'number');
      }
      assert.equal(d.next_attempt_at, null);
      assert.ok(d.finished_at);
    }
  });

  test('2xx succeeds; 410 disables the webhook; 400 fails at once; 408 and 429 are retried; exhausted retries fail', async () => {
    receiver.secrets = [];
    const hooks: Record<string, { id: string; secret: string }> = {};
    for (const name of ['gone', 'bad', 'throttled', 'timeout', 'broken']) hooks[name] = await world.createHook({ url: `${receiver.url}/${name}`, events: ['run.success'] });
    receiver.secrets = Object.values(hooks).map((h) => h.secret);
    receiver.answer = (path, n) => {
      if (path === '/gone') return 410;
      if (path === '/bad') return 400;
      if (path === '/throttled') return n === 1 ? 429 : 200;
      if (path === '/timeout') return n === 1 ? 408 : 200;
      if (path === '/broken') return 500;
      return 200;
    };
    const run = await world.aRun();
    await world.end(run, { status: 'success', output: 1 });

    const settled = (d: any[]) => d.length === 1 && d[0].status !== 'pending';
    const [gone, bad, throttled, timeout, broken] = await Promise.all(['gone', 'bad', 'throttled', 'timeout', 'broken'].map((n) => world.deliveriesUntil(hooks[n].id, settled)));
    assert.deepEqual([gone[0].status, gone[0].attempt_count, gone[0].attempts[0].status_code], ['failed', 1, 410]);
    const goneHook = await call(world.app.url, 'GET', `/api/webhooks/${hooks.gone.id}`, { key: world.key });
    assert.equal(goneHook.body.enabled, false, '410 disables the webhook');
    assert.deepEqual([bad[0].status, bad[0].attempt_count, bad[0].attempts[0].status_code], ['failed', 1, 400]);
    assert.equal((await call(world.app.url, 'GET', `/api/webhooks/${hooks.bad.id}`, { key: world.key })).body.enabled, true);
    assert.deepEqual([throttled[0].status, throttled[0].attempts.map((a: any) => a.status_code)], ['succeeded', [429, 200]]);
    assert.deepEqual([timeout[0].status, timeout[0].attempts.map((a: any) => a.status_code)], ['succeeded', [408, 200]]);
    assert.equal(broken[0].status, 'failed');
    assert.equal(broken[0].attempt_count, RETRIES + 1, 'the first attempt and every scheduled retry');
    assert.ok(broken[0].attempts.every((a: any) => a.status_code === 500));
    assert.equal(broken[0].attempts.at(-1).next_attempt_at, null);

    // a disabled webhook is sent nothing more
    const next = await world.aRun();
    await world.end(next, { status: 'success', output: 2 });
    await world.deliveriesUntil(hooks.bad.id, (d) => d.length === 2 && d.every((x) => x.status !== 'pending'));
    assert.equal((await world.deliveriesUntil(hooks.gone.id, () => true)).length, 1);
  });

  test('a private target is refused at delivery too (blocked_url), without retrying', async () => {
    const hook = await world.createHook({ url: `${receiver.url}/private`, events: ['run.cancelled'] });
    // as if the operator's allowlist had changed since the webhook was saved
    await world.pool.query(`UPDATE webhooks SET url = 'http://10.20.30.40/hook' WHERE id = $1`, [hook.id]);
    const run = await world.aRun();
    await world.end(run, { status: 'cancelled', error: { code: 'run_cancelled', message: 'stop' } });
    const [d] = await world.deliveriesUntil(hook.id, (x) => x.length === 1 && x[0].status !== 'pending');
    assert.equal(d.status, 'failed');
    assert.equal(d.attempt_count, 1);
    assert.match(d.attempts[0].error, /^blocked_url: /);
  });

  test('a receiver that does not answer holds nothing else up, and its attempt times out', async () => {
    const slow = await world.createHook({ url: `${receiver.url}/slow`, events: ['run.failed'] });
    const fast = await world.createHook({ url: `${receiver.url}/fast`, events: ['run.failed'] });
    receiver.secrets = [slow.secret, fast.secret];
    receiver.answer = (path) => (path === '/slow' ? 'hang' : 200);
    const run = await world.aRun();
    await world.end(run, { status: 'failed', error: { code: 'x', message: 'y' } });
    await receiver.until((r) => r.some((x) => x.path === '/fast'));
    const [s] = await world.deliveriesUntil(slow.id, (d) => d.length === 1 && d[0].attempts[0]?.duration_ms != null);
    assert.match(s.attempts[0].error, /^timeout: /);
    receiver.answer = () => 200;
    const [done] = await world.deliveriesUntil(slow.id, (d) => d[0].status === 'succeeded');
    assert.ok(done.attempt_count >= 2);
  });

  test('two dispatchers hearing the same changes (two API replicas) deliver each change once', async () => {
    world.anotherDispatcher();
    const hook = await world.createHook({ url: `${receiver.url}/replicas`, events: ['run.success'] });
    receiver.secrets = [hook.secret];
    receiver.answer = () => 200;
    const runs: string[] = [];
    for (let i = 0; i < 20; i++) runs.push(await world.aRun());
    await Promise.all(runs.map((id, i) => world.end(id, { status: 'success', output: i })));
    await receiver.until((r) => new Set(r.filter((x) => x.path === '/replicas').map((x) => x.id)).size === 20);
    // a control change after them: once it is in, any duplicate of the twenty would have been too
    const control = await world.aRun();
    await world.end(control, { status: 'success', output: 'control' });
    await receiver.until((r) => r.some((x) => x.path === '/replicas' && x.body.data.id === control));
    await world.deliveriesUntil(hook.id, (d) => d.length === 21 && d.every((x) => x.status === 'succeeded'));
    const got = receiver.received.filter((x) => x.path === '/replicas');
    assert.equal(new Set(got.map((x) => x.id)).size, 21);
    // a first attempt that succeeds is sent by the dispatcher that claimed it: no durable invocation
    // at all; a retry would have had one, keyed by the row, whichever dispatcher started it
    const { queryInvocations } = await import('../../restate/admin.ts');
    const invocations = await queryInvocations<{ k: string; n: number }>(world.adminUrl,
      `SELECT target_service_key AS k, count(*) AS n FROM sys_invocation WHERE target_service_name = 'webhookDelivery' GROUP BY target_service_key`);
    const log = await world.deliveriesUntil(hook.id, () => true);
    for (const d of log) {
      assert.equal(d.attempt_count, 1, `${d.id}: sent once, by one dispatcher`);
      assert.equal(invocations.find((i) => i.k === d.id), undefined, `${d.id}: no workflow for a delivery its first attempt settled`);
    }
    // a receiver sees a message again only when an attempt it answered too late was retried (at least once, by webhook-id)
    for (const d of log) assert.ok(got.filter((x) => x.id === d.id).length <= d.attempt_count, `${d.id} arrived more often than it was attempted`);
  });
  // issue 29, check (b): the previous secret of a rotation signs only until it expires
  test('after the grace period a delivery carries exactly one signature, valid under the new secret only', async () => {
    const hook = await world.createHook({ url: `${receiver.url}/expired-previous`, events: ['run.success'] });
    const rotated = await call(world.app.url, 'POST', `/api/webhooks/${hook.id}/rotate`, { key: world.key });
    assert.equal(rotated.status, 200, rotated.text);
    // the grace period is over (24 hours in truth): the previous secret is still stored, its expiry past
    await world.pool.query(`UPDATE webhooks SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`, [hook.id]);
    receiver.secrets = [rotated.body.secret, hook.secret];
    receiver.answer = () => 200;
    const run = await world.aRun();
    await world.end(run, { status: 'success', output: 'after the grace period' });
    await receiver.until((r) => r.some((x) => x.path === '/expired-previous'));
    const got = receiver.received.filter((x) => x.path === '/expired-previous');
    for (const x of got) {
      assert.equal(x.signature.split(' ').length, 1, x.signature);
      assert.match(x.signature, /^v1,[A-Za-z0-9+/]+=*$/);
      assert.deepEqual(x.verifiedWith, [rotated.body.secret], 'valid under the new secret, not the previous one');
    }
  });

  test('a replica dying between claim and record, or before starting a retry, loses nothing: the sweep hands both to the workflow', async () => {
    const hook = await world.createHook({ url: `${receiver.url}/crash`, events: ['run.success', 'run.failed'] });
    receiver.secrets = [hook.secret];
    receiver.answer = () => 200;
    const [a, b] = [await world.aRun(), await world.aRun()];
    await world.end(a, { status: 'success', output: 'a' });
    await world.end(b, { status: 'failed', error: { code: 'x', message: 'y' } });
    const sent = await world.deliveriesUntil(hook.id, (d) => d.length === 2 && d.every((x) => x.status === 'succeeded'));
    const claimed = sent.find((d) => d.run_id === a)!;
    const retrying = sent.find((d) => d.run_id === b)!;
    // as the database stands after a crash: one row claimed, its attempt never recorded; one whose
    // first attempt was recorded as failed, its retry due, and no workflow started
    await world.pool.query('DELETE FROM webhook_delivery_attempts WHERE delivery_id = ANY($1::text[])', [[claimed.id, retrying.id]]);
    await world.pool.query(`UPDATE webhook_deliveries SET status = 'pending', attempt_count = 0, finished_at = NULL, dispatched_at = now() - interval '5 minutes' WHERE id = $1`, [claimed.id]);
    await world.pool.query(
      `UPDATE webhook_deliveries SET status = 'pending', attempt_count = 1, finished_at = NULL, next_attempt_at = now() - interval '5 minutes' WHERE id = $1`,
      [retrying.id],
    );
    await world.pool.query(
      `INSERT INTO webhook_delivery_attempts (delivery_id, attempt, started_at, status_code, duration_ms, error, next_attempt_at)
       VALUES ($1, 1, now() - interval '6 minutes', 503, 3, 'the receiver answered 503', now() - interval '5 minutes')`,
      [retrying.id],
    );
    const before = receiver.received.filter((x) => x.path === '/crash').length;
    await world.sweep();
    await receiver.until((r) => r.filter((x) => x.path === '/crash').length >= before + 2);
    const log = await world.deliveriesUntil(hook.id, (d) => d.every((x) => x.status === 'succeeded'));
    assert.deepEqual(log.find((d) => d.id === claimed.id)!.attempts.map((x: any) => [x.attempt, x.status_code]), [[1, 200]], 'the unrecorded attempt is sent again');
    assert.deepEqual(log.find((d) => d.id === retrying.id)!.attempts.map((x: any) => [x.attempt, x.status_code]), [[1, 503], [2, 200]], 'the retry continues where the record left off');
    const again = receiver.received.filter((x) => x.path === '/crash').slice(before).map((x) => x.id).sort();
    assert.deepEqual(again, [claimed.id, retrying.id].sort(), 'under the same webhook-id: a receiver that saw the first can drop it');
  });
});
