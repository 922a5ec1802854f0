// Notifications: a run's ending tells the person who launched it, in the run's space, in the
// transaction that ends the run; nobody else sees it; the list is cursor-paged; one or all can be
// marked read; notify() (for schedules and connections) writes the same record.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { notify } from '../../api/services/notifications.ts';
import { finalizeRun } from '../../db/run-finalization.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, aSession, type BuiltOrg } from '../support/builders.ts';
import { call } from '../support/http.ts';

let app: TestApp;
let org: BuiltOrg;
let runner: string;

before(async () => {
  app = await startTestApp();
  org = await anOrg(app.deps.database.pool);
  runner = await aMember(app.deps.database.pool, org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'runner' });
});
after(() => app.close());

async function aRunOf(userId: string, endUserId: string | null = null): Promise<string> {
  const id = `run_nt${Math.random().toString(36).slice(2, 10)}`;
  await app.deps.database.pool.query(
    `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, end_user_id, timeout_seconds, event_secret, sink_expires_at)
     VALUES ($1, $2, $3, '@acme/bot', '1.0.0', 'running', $5, $4, $6, 60, $7, now() + interval '1 hour')`,
    [id, org.orgId, org.spaceId, userId, endUserId ? 'end_user' : 'member', endUserId, app.deps.secrets.seal(newRunEventSecret())],
  );
  return id;
}

test("a run's ending tells the member who launched it, and only them", async () => {
  const pool = app.deps.database.pool;
  const failed = await aRunOf(runner);
  await finalizeRun(pool, failed, { status: 'failed', error: { code: 'tool_crashed', message: 'boom' } });
  const cookie = (await aSession(pool, runner)).cookie;
  const mine = await call(app.url, 'GET', '/api/notifications', { cookie, org: org.orgId, space: org.spaceId });
  assert.equal(mine.status, 200, mine.text);
  assert.equal(mine.body.data.length, 1);
  const n = mine.body.data[0];
  assert.match(n.id, /^ntf_/);
  assert.deepEqual({ ...n, id: 0, created_at: 0 }, {
    id: 0, object: 'notification', kind: 'run_ended', title: 'Run of @acme/bot failed',
    body: `Run ${failed} of @acme/bot ended failed (tool_crashed).`, subject: { run_id: failed, package_id: '@acme/bot' },
    spaceId: org.spaceId, created_at: 0, read_at: null,
  });
  const owner = await call(app.url, 'GET', '/api/notifications', { cookie: (await aSession(pool, org.ownerId)).cookie, org: org.orgId, space: org.spaceId });
  assert.deepEqual(owner.body.data, [], "the owner did not launch it: another person's notifications are not shown");
  const ownerRead = await call(app.url, 'POST', `/api/notifications/${n.id}/read`, { cookie: (await aSession(pool, org.ownerId)).cookie, org: org.orgId, space: org.spaceId });
  assert.equal(ownerRead.status, 404);
});

test('runs of end-users tell no one; an impersonating key sees no notifications', async () => {
  const pool = app.deps.database.pool;
  await pool.query(`INSERT INTO end_users (id, org_id, space_id, external_id, name) VALUES ('eu_notify1', $1, $2, 'c-1', 'Customer')`, [org.orgId, org.spaceId]);
  const run = await aRunOf(org.ownerId, 'eu_notify1');
  await finalizeRun(pool, run, { status: 'success', output: 1 });
  const { rows } = await pool.query(`SELECT count(*)::int AS n FROM notifications WHERE subject->>'run_id' = $1`, [run]);
  assert.equal(rows[0].n, 0);
  const { key } = await aKey(pool, { ...org, userId: org.ownerId });
  await notify(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId, kind: 'run_ended', title: 't', body: 'b', subject: {} });
  const asEndUser = await call(app.url, 'GET', '/api/notifications', { key, headers: { 'service-user': 'eu_notify1' } });
  assert.equal(asEndUser.status, 200);
  assert.deepEqual(asEndUser.body.data, []);
});

test('cursor pages, unread filter, mark one read, mark all read; notify() writes a schedule_disabled notice', async () => {
  const pool = app.deps.database.pool;
  const person = await aMember(pool, org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'viewer' });
  const { key } = await aKey(pool, { ...org, userId: person, scopes: ['runs:read'] });
  for (const status of ['success', 'timeout', 'cancelled'] as const) {
    const run = await aRunOf(person);
    await finalizeRun(pool, run, status === 'success' ? { status, output: null } : { status, error: { code: status, message: status } });
  }
  const notice = await notify(pool, {
    orgId: org.orgId, spaceId: org.spaceId, userId: person, kind: 'schedule_disabled',
    title: 'Schedule "nightly" was disabled', body: 'Its creator no longer has access to the space.', subject: { schedule_id: 'sched_x' },
  });
  assert.equal(notice.kind, 'schedule_disabled');
  const page1 = await call(app.url, 'GET', '/api/notifications?limit=2', { key });
  assert.equal(page1.status, 200);
  assert.equal(page1.body.data.length, 2);
  assert.equal(page1.body.hasMore, true);
  assert.match(page1.headers.get('link') ?? '', /rel="next"/);
  const page2 = await call(app.url, 'GET', `/api/notifications?limit=2&startingAfter=${page1.body.data[1].id}`, { key });
  const all = [...page1.body.data, ...page2.body.data];
  assert.deepEqual(all.map((n: { title: string }) => n.title), ['Run of @acme/bot succeeded', 'Run of @acme/bot timed out', 'Run of @acme/bot was cancelled', 'Schedule "nightly" was disabled']);
  assert.deepEqual(all[3].subject, { schedule_id: 'sched_x' });

  const one = await call(app.url, 'POST', `/api/notifications/${all[0].id}/read`, { key });
  assert.equal(one.status, 200);
  assert.ok(one.body.read_at);
  const unread = await call(app.url, 'GET', '/api/notifications?unread=true', { key });
  assert.equal(unread.body.data.length, 3);
  const marked = await call(app.url, 'POST', '/api/notifications/read-all', { key });
  assert.deepEqual(marked.body, { object: 'notification_read_all', marked: 3 });
  assert.deepEqual((await call(app.url, 'GET', '/api/notifications?unread=true', { key })).body.data, []);
  assert.equal((await call(app.url, 'POST', '/api/notifications/ntf_absent/read', { key })).status, 404);
});
