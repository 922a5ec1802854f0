// Inside one space, reads show a caller only what it may read: a member without runs:read-all sees
// its own runs (not another member's, not an end-user's), a key acting for an end-user sees that
// end-user's runs only, an agent's list holds that agent's runs only; end-users of another space
// are not found, the externalId filter and the page size hold; a key's expiry is shown. The answers
// are compared with what SQL says the caller may read.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, aSession } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { seedEndUsers, seedRuns, seedSpaces, type SeededSpace } from '../support/scale-seed.ts';

let app: TestApp;
let pool: pg.Pool;
let space: SeededSpace;
let other: SeededSpace;
let ownerKey: string;
let memberKey: string;
let endUserId: string;

before(async () => {
  app = await startTestApp();
  pool = app.deps.database.pool;
  [space, other] = await seedSpaces(pool, 1, 2);
  await seedEndUsers(pool, space, 3);
  await seedEndUsers(pool, other, 2);
  await seedRuns(pool, space, 60);
  await seedRuns(pool, other, 10);
  // the seeded member reads the space as a viewer: runs:read without runs:read-all
  await pool.query('INSERT INTO space_members (space_id, user_id, org_id, role_key) VALUES ($1, $2, $3, $4)', [space.spaceId, space.memberId, space.orgId, 'viewer']);
  ({ key: ownerKey } = await aKey(pool, { orgId: space.orgId, spaceId: space.spaceId, userId: space.ownerId, expiresAt: new Date(Date.now() + 86_400_000) }));
  ({ key: memberKey } = await aKey(pool, { orgId: space.orgId, spaceId: space.spaceId, userId: space.memberId }));
  const { rows } = await pool.query('SELECT end_user_id FROM runs WHERE space_id = $1 AND end_user_id IS NOT NULL LIMIT 1', [space.spaceId]);
  endUserId = rows[0].end_user_id;
});
after(() => app?.close());

const get = (path: string, key: string, headers: Record<string, string> = {}) => call(app.url, 'GET', path, { key, headers });

async function idsWhere(where: string, params: unknown[]): Promise<string[]> {
  const { rows } = await pool.query(`SELECT id FROM runs WHERE space_id = $1 AND ${where} ORDER BY created_at DESC, id DESC`, [space.spaceId, ...params]);
  return rows.map((r) => r.id);
}

const listedIds = (body: { data: Array<{ id: string }> }) => body.data.map((r) => r.id);

test('a member without runs:read-all lists and reads its own runs only', async () => {
  const own = await idsWhere('actor_user_id = $2 AND end_user_id IS NULL', [space.memberId]);
  assert.ok(own.length > 0 && own.length < 60);
  const res = await get('/api/runs?limit=100', memberKey);
  assert.equal(res.status, 200);
  assert.deepEqual(listedIds(res.body), own);

  const [ownerRun] = await idsWhere('actor_user_id = $2 AND end_user_id IS NULL', [space.ownerId]);
  const [endUserRun] = await idsWhere('end_user_id IS NOT NULL', []);
  for (const id of [ownerRun, endUserRun]) {
    const read = await get(`/api/runs/${id}`, memberKey);
    assert.equal(read.status, 404);
    assert.equal(read.body.detail, 'No such run in this space.');
    const logs = await get(`/api/runs/${id}/logs`, memberKey);
    assert.equal(logs.status, 404);
    assert.equal(logs.body.detail, 'No such run in this space.');
  }
  assert.equal((await get(`/api/runs/${own[0]}/logs`, memberKey)).status, 200);
  const mine = await get(`/api/runs/${own[0]}`, memberKey);
  assert.equal(mine.status, 200);
  assert.equal(mine.body.id, own[0]);
});

test('a key acting for an end-user lists that end-user\'s runs only', async () => {
  const theirs = await idsWhere('end_user_id = $2', [endUserId]);
  const res = await get('/api/runs?limit=100', ownerKey, { 'Service-User': endUserId });
  assert.equal(res.status, 200);
  assert.deepEqual(listedIds(res.body), theirs);
  assert.ok(theirs.length > 0);
});

test('an owner lists every run of the space; an agent\'s list holds that agent\'s runs only', async () => {
  const all = await get('/api/runs?limit=100', ownerKey);
  assert.deepEqual(listedIds(all.body), await idsWhere('true', []));
  assert.equal(all.body.total, 60);
  assert.equal(all.body.total_capped, undefined, 'a total within the window is exact');
  const agent = await get('/api/agents/@seed/agent-1/runs?limit=100', ownerKey);
  assert.equal(agent.status, 200);
  assert.deepEqual(listedIds(agent.body), await idsWhere('agent_id = $2', ['@seed/agent-1']));
});

test('a schedule\'s list holds the runs it launched only', async () => {
  await pool.query(
    `INSERT INTO schedules (id, org_id, space_id, agent_id, name, cron_expression, timezone, created_by)
     VALUES ('sched_reads', $1, $2, '@seed/agent-2', 'nightly', '0 3 * * *', 'UTC', $3)`,
    [space.orgId, space.spaceId, space.ownerId],
  );
  await pool.query(
    `UPDATE runs SET schedule_id = 'sched_reads', schedule_fire_at = created_at
      WHERE id IN (SELECT id FROM runs WHERE space_id = $1 AND agent_id = '@seed/agent-2' ORDER BY created_at LIMIT 4)`,
    [space.spaceId],
  );
  const res = await get('/api/schedules/sched_reads/runs?limit=100', ownerKey);
  assert.equal(res.status, 200);
  const launched = await idsWhere(`schedule_id = 'sched_reads'`, []);
  assert.equal(launched.length, 4);
  assert.deepEqual(listedIds(res.body), launched);
});

test('an end-user of another space is not found; the externalId filter and the page size hold', async () => {
  const { rows } = await pool.query('SELECT id FROM end_users WHERE space_id = $1 LIMIT 1', [other.spaceId]);
  const foreign = await get(`/api/end-users/${rows[0].id}`, ownerKey);
  assert.equal(foreign.status, 404);
  assert.equal(foreign.body.detail, 'No such end-user in this space.');

  const [first] = (await pool.query('SELECT id FROM end_users WHERE space_id = $1 LIMIT 1', [space.spaceId])).rows;
  const found = await get(`/api/end-users/${first.id}`, ownerKey);
  assert.equal(found.status, 200);
  assert.equal(found.body.id, first.id);

  const filtered = await get('/api/end-users?externalId=ext-2', ownerKey);
  assert.deepEqual(filtered.body.data.map((u: { externalId: string }) => u.externalId), ['ext-2']);
  const page = await get('/api/end-users?limit=2', ownerKey);
  assert.equal(page.body.data.length, 2);
  assert.equal(page.body.hasMore, true);
});

test('a key\'s expiry is listed', async () => {
  const { cookie } = await aSession(pool, space.ownerId);
  const res = await call(app.url, 'GET', '/api/api-keys', { cookie, org: space.orgId, space: space.spaceId });
  assert.equal(res.status, 200);
  const expiring = res.body.data.filter((k: { expiresAt: string | null }) => k.expiresAt !== null);
  assert.equal(expiring.length, 1);
  assert.ok(Date.parse(expiring[0].expiresAt) > Date.now());
});
