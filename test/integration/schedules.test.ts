// The schedules family over HTTP: creation with its refusals (cron, zone, input, actor, rate),
// reads, lists, optimistic updates, enable/disable, delete, the runs of a schedule, and the
// schedule disabled with a readable reason when its creator's access or its agent goes.
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { aKey, aMember, aSession } from '../support/builders.ts';
import { client, type WireResponse } from '../support/http.ts';
import { aRunWorld, type RunWorld } from '../support/runs.ts';

let world: RunWorld;
const AGENT = '/api/agents/@fixtures/agent-echo';
const body = (over: Record<string, unknown> = {}) => ({
  name: 'Morning echo', cron_expression: '0 9 * * 1-5', timezone: 'Europe/Paris', input: { message: 'good morning' }, ...over,
});

let api: ReturnType<typeof client>;

before(async () => {
  world = await aRunWorld();
});
// A fresh key per test: the creation row allows 10 a minute per caller.
beforeEach(async () => {
  const { key } = await aKey(world.app.deps.database.pool, { ...world.org, userId: world.org.ownerId });
  api = client(world.app.url, { key });
});
after(async () => world?.close());

test('a schedule is created under its agent: 201, Location, ETag, next_run_at in UTC at the zone\'s 09:00', async () => {
  const res = await api.post(`${AGENT}/schedules`, body());
  assert.equal(res.status, 201, res.text);
  const s = res.body;
  assert.match(s.id, /^sched_/);
  assert.equal(res.headers.get('location'), `/api/schedules/${s.id}`);
  assert.equal(res.headers.get('etag'), `"v${s.version}"`);
  assert.equal(s.enabled, true);
  assert.equal(s.disabled_reason, null);
  assert.equal(s.packageId, '@fixtures/agent-echo');
  assert.deepEqual(s.input, { message: 'good morning' });
  assert.match(s.next_run_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/);
  const next = new Date(s.next_run_at);
  assert.ok(next.getTime() > Date.now());
  const paris = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Paris', hour: '2-digit', minute: '2-digit', weekday: 'short' }).format(next);
  assert.match(paris, /^(Mon|Tue|Wed|Thu|Fri) 09:00$/);
  const read = await api.get(`/api/schedules/${s.id}`);
  assert.equal(read.status, 200);
  assert.deepEqual(read.body, s);
});

test('a cron expression without exactly 5 valid fields is 400 invalid_cron_expression', async () => {
  for (const cron of ['* * * *', '* * * * * *', '61 * * * *', '@daily', 'every minute', '* * 31 2 *']) {
    const res = await api.post(`${AGENT}/schedules`, body({ cron_expression: cron }));
    assert.equal(res.status, 400, cron);
    assert.equal(res.body.code, 'invalid_cron_expression', cron);
  }
});

test('a time zone that is not an IANA name is 400 invalid_timezone', async () => {
  for (const timezone of ['Mars/Olympus_Mons', '+01:00', 'not a zone']) {
    const res = await api.post(`${AGENT}/schedules`, body({ timezone }));
    assert.equal(res.status, 400, timezone);
    assert.equal(res.body.code, 'invalid_timezone', timezone);
  }
});

test("an input that fails the agent's input schema is 400 invalid_input; an unknown agent is 404", async () => {
  const res = await api.post(`${AGENT}/schedules`, body({ input: { message: 42 } }));
  assert.equal(res.status, 400);
  assert.equal(res.body.code, 'invalid_input');
  const missing = await api.post(`${AGENT}/schedules`, body({ input: undefined }));
  assert.equal(missing.body.code, 'invalid_input');
  const unknown = await api.post('/api/agents/@fixtures/nobody/schedules', body());
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body.code, 'agent_not_found');
});

test('a creator who cannot launch the agent is 400 schedule_actor_invalid', async () => {
  const pool = world.app.deps.database.pool;
  const { key } = await aKey(pool, { ...world.org, userId: world.org.ownerId, scopes: ['schedules:write', 'schedules:read'] });
  const res = await client(world.app.url, { key }).post(`${AGENT}/schedules`, body());
  assert.equal(res.status, 400);
  assert.equal(res.body.code, 'schedule_actor_invalid');
});

test('a key acting for an end-user (Service-User) cannot own a schedule: 400 schedule_actor_invalid', async () => {
  const eu = await api.post('/api/end-users', { externalId: 'scheduler', name: 'Scheduler' });
  assert.equal(eu.status, 201, eu.text);
  const res = await api.post(`${AGENT}/schedules`, body(), { headers: { 'service-user': eu.body.id } });
  assert.equal(res.status, 400, res.text);
  assert.equal(res.body.code, 'schedule_actor_invalid');
});

test('updates are optimistic: a stale version or If-Match is 412 precondition_failed carrying the current ETag; a new cron moves next_run_at', async () => {
  const s = (await api.post(`${AGENT}/schedules`, body())).body;
  const renamed = await api.patch(`/api/schedules/${s.id}`, { name: 'Renamed', version: s.version });
  assert.equal(renamed.status, 200, renamed.text);
  assert.equal(renamed.body.name, 'Renamed');
  assert.equal(renamed.body.version, s.version + 1);
  assert.equal(renamed.body.next_run_at, s.next_run_at);
  const current = `"v${s.version + 1}"`;
  assert.equal(renamed.headers.get('etag'), current);

  const staleBody = await api.patch(`/api/schedules/${s.id}`, { name: 'Lost', version: s.version });
  assert.equal(staleBody.status, 412, staleBody.text);
  assert.equal(staleBody.body.code, 'precondition_failed');
  assert.equal(staleBody.headers.get('etag'), current);
  const staleHeader = await api.patch(`/api/schedules/${s.id}`, { name: 'Lost' }, { headers: { 'if-match': `"v${s.version}"` } });
  assert.equal(staleHeader.status, 412, staleHeader.text);
  assert.equal(staleHeader.body.code, 'precondition_failed');
  assert.equal(staleHeader.body.param, 'If-Match');
  assert.equal(staleHeader.headers.get('etag'), current);
  // a weak tag, a tag never issued, and enable/disable follow the same rule
  for (const tag of [`W/${current}`, '"nonsense"']) {
    const res = await api.patch(`/api/schedules/${s.id}`, { name: 'Lost' }, { headers: { 'if-match': tag } });
    assert.equal(res.status, 412, tag);
  }
  const staleOff = await api.post(`/api/schedules/${s.id}/disable`, {}, { headers: { 'if-match': `"v${s.version}"` } });
  assert.equal(staleOff.status, 412);
  assert.equal(staleOff.headers.get('etag'), current);
  // a generic client reloads on 412 and retries with the ETag it was given: that succeeds
  const retried = await api.patch(`/api/schedules/${s.id}`, { name: 'Renamed' }, { headers: { 'if-match': `"v0", ${staleHeader.headers.get('etag')}` } });
  assert.equal(retried.status, 200, retried.text);
  const star = await api.patch(`/api/schedules/${s.id}`, { name: 'Renamed' }, { headers: { 'if-match': '*' } });
  assert.equal(star.status, 200, star.text);
  assert.equal((await api.get(`/api/schedules/${s.id}`)).body.name, 'Renamed');

  const recron = await api.patch(`/api/schedules/${s.id}`, { cron_expression: '30 6 * * *', timezone: 'Asia/Tokyo' }, { headers: { 'if-match': star.headers.get('etag')! } });
  assert.equal(recron.status, 200, recron.text);
  const tokyo = new Intl.DateTimeFormat('en-GB', { timeZone: 'Asia/Tokyo', hour: '2-digit', minute: '2-digit' }).format(new Date(recron.body.next_run_at));
  assert.equal(tokyo, '06:30');
  assert.equal((await api.get(`/api/schedules/${s.id}`)).body.name, 'Renamed');

  const badCron = await api.patch(`/api/schedules/${s.id}`, { cron_expression: '* *' });
  assert.equal(badCron.body.code, 'invalid_cron_expression');
  const badZone = await api.patch(`/api/schedules/${s.id}`, { timezone: 'Nowhere/Land' });
  assert.equal(badZone.body.code, 'invalid_timezone');
  const badInput = await api.patch(`/api/schedules/${s.id}`, { input: { nope: true } });
  assert.equal(badInput.body.code, 'invalid_input');
});

test('a change landing between the read and the write (a race no client could have seen) is 409 schedule_modified_concurrently', async () => {
  const s = (await api.post(`${AGENT}/schedules`, body())).body;
  const pool = world.app.deps.database.pool;
  // a pool that lets another writer in right after the schedule is read
  let interfered = false;
  const racing = new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop !== 'query') return Reflect.get(target, prop, receiver);
      return async (...args: unknown[]) => {
        const result = await (target.query as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (!interfered && typeof args[0] === 'string' && /^\s*SELECT[\s\S]*FROM schedules/.test(args[0])) {
          interfered = true;
          await target.query('UPDATE schedules SET version = version + 1 WHERE id = $1', [s.id]);
        }
        return result;
      };
    },
  });
  // the API's own pool, swapped for this one request: the route reads it when the request comes
  const database = world.app.deps.database as { pool: typeof pool };
  database.pool = racing;
  let res: WireResponse;
  try {
    res = await api.patch(`/api/schedules/${s.id}`, { name: 'Raced' }, { headers: { 'if-match': `"v${s.version}"` } });
  } finally {
    database.pool = pool;
  }
  assert.ok(interfered);
  assert.equal(res.status, 409, res.text);
  assert.equal(res.body.code, 'schedule_modified_concurrently');
  assert.equal(res.body.errors, undefined);
  assert.equal((await api.get(`/api/schedules/${s.id}`)).body.name, 'Morning echo');
});

test('disable and enable: next_run_at is null while disabled, the reason is readable, enabling clears it', async () => {
  const s = (await api.post(`${AGENT}/schedules`, body())).body;
  const off = await api.post(`/api/schedules/${s.id}/disable`, {});
  assert.equal(off.status, 200, off.text);
  assert.equal(off.body.enabled, false);
  assert.equal(off.body.next_run_at, null);
  assert.equal(off.body.disabled_reason, 'Disabled by a member.');
  const on = await api.post(`/api/schedules/${s.id}/enable`, {});
  assert.equal(on.body.enabled, true);
  assert.equal(on.body.disabled_reason, null);
  assert.ok(new Date(on.body.next_run_at).getTime() > Date.now());
});

test('lists are offset-paged, per agent and per space; delete answers 204 then 404', async () => {
  for (let i = 0; i < 3; i++) await api.post(`${AGENT}/schedules`, body({ name: `listed ${i}` }));
  const all = await api.get('/api/schedules?limit=2');
  assert.equal(all.status, 200);
  assert.equal(all.body.data.length, 2);
  assert.equal(all.body.hasMore, true);
  assert.ok(all.body.total >= 4);
  assert.match(all.headers.get('link') ?? '', /rel="next"/);
  const agents = await api.get(`${AGENT}/schedules?limit=100`);
  assert.equal(agents.body.total, all.body.total);
  const victim = agents.body.data[0].id;
  assert.equal((await api.delete(`/api/schedules/${victim}`)).status, 204);
  assert.equal((await api.get(`/api/schedules/${victim}`)).status, 404);
  assert.equal((await api.delete(`/api/schedules/${victim}`)).status, 404);
  assert.equal((await api.get(`/api/schedules/${victim}/runs`)).status, 404);
});

test('the runs of a schedule: only the runs it launched, offset-paged', async () => {
  const pool = world.app.deps.database.pool;
  const s = (await api.post(`${AGENT}/schedules`, body())).body;
  const empty = await api.get(`/api/schedules/${s.id}/runs`);
  assert.equal(empty.status, 200);
  assert.deepEqual(empty.body.data, []);
  await api.post(`${AGENT}/run`, { input: { message: 'not scheduled' } });
  for (const minute of [1, 2]) {
    await pool.query(
      `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, schedule_id, schedule_fire_at, timeout_seconds, event_secret, sink_expires_at)
       VALUES ($1, $2, $3, '@fixtures/agent-echo', '1.0.0', 'success', 'schedule', $4, $5, $6, 60, 'x', now())`,
      [`run_sched${minute}${s.id.slice(-6)}`, world.org.orgId, world.org.spaceId, world.org.ownerId, s.id, new Date(Date.UTC(2026, 0, 1, 0, minute))],
    );
  }
  const page = await api.get(`/api/schedules/${s.id}/runs?limit=1`);
  assert.equal(page.body.total, 2);
  assert.equal(page.body.data.length, 1);
  assert.equal(page.body.data[0].triggered_by.kind, 'schedule');
  assert.equal(page.body.data[0].triggered_by.schedule_id, s.id);
  // one run per (schedule, tick), whoever inserts it
  await assert.rejects(pool.query(
    `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, schedule_id, schedule_fire_at, timeout_seconds, event_secret, sink_expires_at)
     VALUES ('run_dup', $1, $2, '@fixtures/agent-echo', '1.0.0', 'success', 'schedule', $3, $4, $5, 60, 'x', now())`,
    [world.org.orgId, world.org.spaceId, world.org.ownerId, s.id, new Date(Date.UTC(2026, 0, 1, 0, 1))],
  ), /runs_schedule_fire_idx/);
});

test('the rate-limit row: 10 creations a minute per caller, the 11th is 429', async () => {
  const statuses: number[] = [];
  for (let i = 0; i < 11; i++) statuses.push((await api.post(`${AGENT}/schedules`, body({ name: `n${i}` }))).status);
  assert.deepEqual(statuses.slice(0, 10), Array(10).fill(201));
  assert.equal(statuses[10], 429);
});

test("a creator removed from the space disables their schedules with a readable reason; others' stay", async () => {
  const pool = world.app.deps.database.pool;
  const memberId = await aMember(pool, world.org.orgId, 'member', { spaceId: world.org.spaceId, roleKey: 'editor' });
  const { key: memberKey } = await aKey(pool, { ...world.org, userId: memberId });
  const mine = await client(world.app.url, { key: memberKey }).post(`${AGENT}/schedules`, body({ name: 'member schedule' }));
  assert.equal(mine.status, 201, mine.text);
  const owners = (await api.post(`${AGENT}/schedules`, body({ name: 'owner schedule' }))).body;

  const { cookie } = await aSession(pool, world.org.ownerId);
  const removed = await client(world.app.url, { cookie, org: world.org.orgId }).delete(`/api/spaces/${world.org.spaceId}/members/${memberId}`);
  assert.equal(removed.status, 204, removed.text);

  const after = (await api.get(`/api/schedules/${mine.body.id}`)).body;
  assert.equal(after.enabled, false);
  assert.equal(after.next_run_at, null);
  assert.match(after.disabled_reason, /creator no longer has access/);
  assert.equal((await api.get(`/api/schedules/${owners.id}`)).body.enabled, true);
  // it cannot be switched back on while its creator cannot launch
  const again = await api.post(`/api/schedules/${mine.body.id}/enable`, {});
  assert.equal(again.status, 400);
  assert.equal(again.body.code, 'schedule_actor_invalid');
});

// Issue 29, check (c): the actor check joins space membership on the schedule's creator, not on
// any member of the space: another member able to launch must not keep the creator's standing.
test("the actor check is the creator's own membership: removed while another member with agents:run stays, the schedule is disabled; a creator now only viewer cannot have it enabled", async () => {
  const pool = world.app.deps.database.pool;
  const stayers = [];
  for (let i = 0; i < 3; i++) stayers.push(await aMember(pool, world.org.orgId, 'member', { spaceId: world.org.spaceId, roleKey: 'editor' }));
  const creator = await aMember(pool, world.org.orgId, 'member', { spaceId: world.org.spaceId, roleKey: 'editor' });
  const demoted = await aMember(pool, world.org.orgId, 'member', { spaceId: world.org.spaceId, roleKey: 'editor' });
  const asKey = async (userId: string) => client(world.app.url, { key: (await aKey(pool, { ...world.org, userId })).key });
  const created = await (await asKey(creator)).post(`${AGENT}/schedules`, body({ name: 'creator schedule' }));
  assert.equal(created.status, 201, created.text);
  const byDemoted = await (await asKey(demoted)).post(`${AGENT}/schedules`, body({ name: 'demoted schedule' }));
  assert.equal(byDemoted.status, 201, byDemoted.text);
  const stayer = await (await asKey(stayers[0])).post(`${AGENT}/schedules`, body({ name: 'stayer schedule' }));
  assert.equal(stayer.status, 201, stayer.text);

  const { cookie } = await aSession(pool, world.org.ownerId);
  const admin = client(world.app.url, { cookie, org: world.org.orgId });
  assert.equal((await admin.delete(`/api/spaces/${world.org.spaceId}/members/${creator}`)).status, 204);
  const gone = (await api.get(`/api/schedules/${created.body.id}`)).body;
  assert.deepEqual([gone.enabled, gone.disabled_reason], [false, "The schedule's creator no longer has access to run agents in this space."]);
  assert.equal((await api.get(`/api/schedules/${stayer.body.id}`)).body.enabled, true, "the stayer's schedule stays");

  // disabled while its creator could still launch, then the creator becomes a viewer: it stays off
  assert.equal((await api.post(`/api/schedules/${byDemoted.body.id}/disable`, {})).status, 200);
  const patched = await admin.patch(`/api/spaces/${world.org.spaceId}/members/${demoted}`, { role_key: 'viewer' });
  assert.equal(patched.status, 200, patched.text);
  const enable = await api.post(`/api/schedules/${byDemoted.body.id}/enable`, {});
  assert.equal(enable.status, 400, enable.text);
  assert.equal(enable.body.code, 'schedule_actor_invalid');
  assert.equal((await api.get(`/api/schedules/${byDemoted.body.id}`)).body.enabled, false);
  assert.equal((await api.post(`/api/schedules/${stayer.body.id}/disable`, {})).status, 200);
  assert.equal((await api.post(`/api/schedules/${stayer.body.id}/enable`, {})).status, 200, 'a creator who can launch may have it enabled');
});

test('deleting the agent disables its schedules with a readable reason (runs last: the agent is gone after it)', async () => {
  const s = (await api.post(`${AGENT}/schedules`, body())).body;
  // its pending runs would hold the deletion back (agent_in_use)
  await world.app.deps.database.pool.query(`UPDATE runs SET status = 'cancelled' WHERE org_id = $1 AND status IN ('pending', 'running')`, [world.org.orgId]);
  const deleted = await api.delete('/api/packages/@fixtures/agent-echo');
  assert.equal(deleted.status, 204, deleted.text);
  const after = (await api.get(`/api/schedules/${s.id}`)).body;
  assert.equal(after.enabled, false);
  assert.equal(after.disabled_reason, 'The agent was deleted.');
});

