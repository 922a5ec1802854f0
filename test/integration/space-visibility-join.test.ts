// Team spaces visible to the organization: space admins set visibility and the default role;
// organization members (not guests) see such a space and join it with that role, provided it
// still shows what they saw (409 space_access_changed otherwise, nothing changed). Private
// spaces, other organizations' spaces and personal spaces stay out of reach, and no default role
// hands out the space's administration.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useTestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, aSpace } from '../support/builders.ts';
import { client, type WireResponse } from '../support/http.ts';

const { app, pool, sessionOf } = useTestApp();

function expectProblem(res: WireResponse, status: number, code: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.code, code, res.text);
}

async function as(userId: string, orgId: string) {
  return client(app().url, { cookie: await sessionOf(userId), org: orgId });
}

/** An organization with a private team space administered by a member holding space_admin there. */
async function aWorld() {
  const org = await anOrg(pool());
  const space = await aSpace(pool(), org.orgId, { name: 'Research' });
  const spaceAdmin = await aMember(pool(), org.orgId, 'member', { spaceId: space, roleKey: 'space_admin' });
  return { org, space, spaceAdmin, admin: await as(spaceAdmin, org.orgId) };
}

const listed = (res: WireResponse, id: string) => (res.body.data as Array<{ id: string }>).find((s) => s.id === id) as Record<string, unknown> | undefined;
const memberKeys = async (w: { admin: ReturnType<typeof client>; space: string }) =>
  ((await w.admin.get(`/api/spaces/${w.space}/members`)).body.data as Array<{ userId: string; role_key: string }>).map((m) => `${m.userId}:${m.role_key}`).sort();

describe('visibility and default role', () => {
  test('a team space starts private with viewer as its default role; a private space is invisible and unjoinable to non-members', async () => {
    const w = await aWorld();
    const read = await w.admin.get(`/api/spaces/${w.space}`);
    assert.equal(read.status, 200, read.text);
    assert.deepEqual([read.body.visibility, read.body.default_role, read.body.package_copy, read.body.is_member], ['private', 'viewer', 'members', true]);

    const member = await as(await aMember(pool(), w.org.orgId, 'member'), w.org.orgId);
    assert.equal(listed(await member.get('/api/spaces'), w.space), undefined);
    expectProblem(await member.get(`/api/spaces/${w.space}`), 404, 'not_found');
    expectProblem(await member.post(`/api/spaces/${w.space}/join`, { visibility: 'private', default_role: 'viewer' }), 404, 'not_found');
    expectProblem(await member.post(`/api/spaces/${w.space}/join`, { visibility: 'org', default_role: 'viewer' }), 404, 'not_found');
  });

  test('an organization-visible space is listed to members as joinable; joining gives its default role', async () => {
    const w = await aWorld();
    const changed = await w.admin.patch(`/api/spaces/${w.space}`, { visibility: 'org', default_role: 'runner' });
    assert.equal(changed.status, 200, changed.text);
    assert.deepEqual([changed.body.visibility, changed.body.default_role], ['org', 'runner']);

    const userId = await aMember(pool(), w.org.orgId, 'member');
    const member = await as(userId, w.org.orgId);
    const before = listed(await member.get('/api/spaces'), w.space);
    assert.deepEqual(before && [before.is_member, before.visibility, before.default_role, before.role_key], [false, 'org', 'runner', null]);
    const shown = await member.get(`/api/spaces/${w.space}`);
    assert.equal(shown.status, 200, shown.text);
    assert.equal(shown.body.is_member, false);
    // seeing is not holding: nothing inside the space is open before joining
    expectProblem(await member.get(`/api/spaces/${w.space}/members`), 403, 'forbidden');
    expectProblem(await member.patch(`/api/spaces/${w.space}`, { name: 'Mine now' }), 403, 'forbidden');
    const acting = await member.get('/api/runs', { space: w.space });
    assert.ok(acting.status === 403 || acting.status === 404, `acting in the space before joining: ${acting.status}`);

    const joined = await member.post(`/api/spaces/${w.space}/join`, { visibility: shown.body.visibility, default_role: shown.body.default_role });
    assert.equal(joined.status, 201, joined.text);
    assert.equal(joined.headers.get('location'), `/api/spaces/${w.space}/members/${userId}`);
    assert.deepEqual([joined.body.userId, joined.body.role_key, joined.body.org_role], [userId, 'runner', 'member']);
    const after = listed(await member.get('/api/spaces'), w.space);
    assert.deepEqual(after && [after.is_member, after.role_key], [true, 'runner']);
    assert.equal((await member.get('/api/runs', { space: w.space })).status, 200, 'a runner reads runs of the space');
    expectProblem(await member.post(`/api/spaces/${w.space}/join`, { visibility: 'org', default_role: 'runner' }), 409, 'space_member_exists');
  });

  test('a join whose shown visibility or default role no longer holds is 409 space_access_changed and changes nothing', async () => {
    const w = await aWorld();
    assert.equal((await w.admin.patch(`/api/spaces/${w.space}`, { visibility: 'org', default_role: 'runner' })).status, 200);
    const userId = await aMember(pool(), w.org.orgId, 'member');
    const member = await as(userId, w.org.orgId);
    const shown = (await member.get(`/api/spaces/${w.space}`)).body;
    assert.equal((await w.admin.patch(`/api/spaces/${w.space}`, { default_role: 'viewer' })).status, 200);
    const members = await memberKeys(w);

    expectProblem(await member.post(`/api/spaces/${w.space}/join`, { visibility: shown.visibility, default_role: shown.default_role }), 409, 'space_access_changed');
    // a joiner cannot pick a role of their own either: a forged one is simply not what the space shows
    expectProblem(await member.post(`/api/spaces/${w.space}/join`, { visibility: 'org', default_role: 'space_admin' }), 409, 'space_access_changed');
    expectProblem(await member.post(`/api/spaces/${w.space}/join`, { visibility: 'private', default_role: 'viewer' }), 409, 'space_access_changed');
    assert.deepEqual(await memberKeys(w), members, 'no membership was made');

    const joined = await member.post(`/api/spaces/${w.space}/join`, { visibility: 'org', default_role: 'viewer' });
    assert.equal(joined.status, 201, joined.text);
    assert.equal(joined.body.role_key, 'viewer');
  });

  test('a change committed while a join waits on the space is seen by the join: 409 space_access_changed', async () => {
    const w = await aWorld();
    assert.equal((await w.admin.patch(`/api/spaces/${w.space}`, { visibility: 'org', default_role: 'runner' })).status, 200);
    const userId = await aMember(pool(), w.org.orgId, 'member');
    const member = await as(userId, w.org.orgId);
    const admin = await pool().connect();
    try {
      // an administrator's change in flight: the join's compare cannot run before it commits
      await admin.query('BEGIN');
      await admin.query(`UPDATE spaces SET default_role = 'viewer', updated_at = now() WHERE id = $1`, [w.space]);
      const joining = member.post(`/api/spaces/${w.space}/join`, { visibility: 'org', default_role: 'runner' });
      for (let i = 0; ; i++) {
        const waiting = await pool().query(
          `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FOR SHARE OF s, om%'`,
        );
        if (waiting.rowCount) break;
        assert.ok(i < 500, 'the join never reached the space row');
        await new Promise((r) => setTimeout(r, 10));
      }
      await admin.query('COMMIT');
      expectProblem(await joining, 409, 'space_access_changed');
    } finally {
      admin.release();
    }
    assert.ok(!(await memberKeys(w)).some((m) => m.startsWith(`${userId}:`)), 'the joiner holds no role');
  });

  test('making a space private again hides it from non-members; their join is 404, not 409', async () => {
    const w = await aWorld();
    assert.equal((await w.admin.patch(`/api/spaces/${w.space}`, { visibility: 'org' })).status, 200);
    const member = await as(await aMember(pool(), w.org.orgId, 'member'), w.org.orgId);
    assert.ok(listed(await member.get('/api/spaces'), w.space));
    assert.equal((await w.admin.patch(`/api/spaces/${w.space}`, { visibility: 'private' })).status, 200);
    assert.equal(listed(await member.get('/api/spaces'), w.space), undefined);
    expectProblem(await member.post(`/api/spaces/${w.space}/join`, { visibility: 'org', default_role: 'viewer' }), 404, 'not_found');
  });
});

describe('hostile callers', () => {
  test('another organization neither sees, joins nor changes the space', async () => {
    const w = await aWorld();
    assert.equal((await w.admin.patch(`/api/spaces/${w.space}`, { visibility: 'org' })).status, 200);
    const other = await anOrg(pool());
    const outsiderId = await aMember(pool(), other.orgId, 'member');
    for (const [who, org] of [[outsiderId, other.orgId], [other.ownerId, other.orgId]] as const) {
      const outsider = await as(who, org);
      assert.equal(listed(await outsider.get('/api/spaces'), w.space), undefined);
      expectProblem(await outsider.get(`/api/spaces/${w.space}`), 404, 'not_found');
      expectProblem(await outsider.post(`/api/spaces/${w.space}/join`, { visibility: 'org', default_role: 'viewer' }), 404, 'not_found');
      expectProblem(await outsider.patch(`/api/spaces/${w.space}`, { visibility: 'private', default_role: 'editor' }), 404, 'not_found');
    }
    // naming the space's organization is not enough without membership in it
    const intruder = await as(outsiderId, w.org.orgId);
    const refused = await intruder.post(`/api/spaces/${w.space}/join`, { visibility: 'org', default_role: 'viewer' });
    assert.ok(refused.status === 403 || refused.status === 404, `${refused.status} ${refused.text}`);
    const still = await w.admin.get(`/api/spaces/${w.space}`);
    assert.deepEqual([still.body.visibility, still.body.default_role], ['org', 'viewer']);
  });

  test('guests see no organization-visible space and cannot join one; API keys cannot join', async () => {
    const w = await aWorld();
    assert.equal((await w.admin.patch(`/api/spaces/${w.space}`, { visibility: 'org' })).status, 200);
    const guest = await as(await aMember(pool(), w.org.orgId, 'guest'), w.org.orgId);
    assert.equal(listed(await guest.get('/api/spaces'), w.space), undefined);
    expectProblem(await guest.get(`/api/spaces/${w.space}`), 404, 'not_found');
    expectProblem(await guest.post(`/api/spaces/${w.space}/join`, { visibility: 'org', default_role: 'viewer' }), 404, 'not_found');

    const memberId = await aMember(pool(), w.org.orgId, 'member');
    const home = await aSpace(pool(), w.org.orgId, { kind: 'personal', ownerUserId: memberId, name: 'Home' });
    const { key } = await aKey(pool(), { orgId: w.org.orgId, spaceId: home, userId: memberId });
    expectProblem(await client(app().url, { key }).post(`/api/spaces/${w.space}/join`, { visibility: 'org', default_role: 'viewer' }), 403, 'forbidden');
    // a key sees its own space only, never the joinable ones
    assert.equal(listed(await client(app().url, { key }).get('/api/spaces'), w.space), undefined);
  });

  test('owners, admins and existing members have nothing to join; personal spaces take neither setting nor joiners', async () => {
    const w = await aWorld();
    assert.equal((await w.admin.patch(`/api/spaces/${w.space}`, { visibility: 'org' })).status, 200);
    const body = { visibility: 'org', default_role: 'viewer' };
    expectProblem(await (await as(w.org.ownerId, w.org.orgId)).post(`/api/spaces/${w.space}/join`, body), 409, 'redundant_space_role');
    expectProblem(await (await as(await aMember(pool(), w.org.orgId, 'admin'), w.org.orgId)).post(`/api/spaces/${w.space}/join`, body), 409, 'redundant_space_role');
    expectProblem(await w.admin.post(`/api/spaces/${w.space}/join`, body), 409, 'space_member_exists');

    const memberId = await aMember(pool(), w.org.orgId, 'member');
    const member = await as(memberId, w.org.orgId);
    const own = await aSpace(pool(), w.org.orgId, { kind: 'personal', ownerUserId: memberId, name: 'Own' });
    const someoneElses = await aSpace(pool(), w.org.orgId, { kind: 'personal', ownerUserId: w.spaceAdmin, name: 'Theirs' });
    expectProblem(await member.patch(`/api/spaces/${own}`, { visibility: 'org' }), 409, 'personal_space_immutable');
    expectProblem(await member.patch(`/api/spaces/${own}`, { default_role: 'viewer' }), 409, 'personal_space_immutable');
    expectProblem(await member.patch(`/api/spaces/${own}`, { package_copy: 'restricted' }), 409, 'personal_space_immutable');
    const ownRecord = (await member.get(`/api/spaces/${own}`)).body;
    assert.deepEqual([ownRecord.visibility, ownRecord.default_role, ownRecord.is_member], [null, null, true]);
    expectProblem(await member.post(`/api/spaces/${own}/join`, body), 409, 'personal_space_has_no_members');
    expectProblem(await member.post(`/api/spaces/${someoneElses}/join`, body), 404, 'not_found');
  });

  test('no default role hands out administration: admin roles, unknown roles and other organizations\' roles are refused', async () => {
    const w = await aWorld();
    const other = await anOrg(pool());
    await pool().query(`INSERT INTO space_roles (id, org_id, key, name, permissions) VALUES ('role_other_' || substr(md5(random()::text), 1, 8), $1, 'outside_role', 'Outside', '{agents:read}')`, [other.orgId]);
    await pool().query(`INSERT INTO space_roles (id, org_id, key, name, permissions) VALUES ('role_boss_' || substr(md5(random()::text), 1, 8), $1, 'boss', 'Boss', '{agents:read,space-members:write}')`, [w.org.orgId]);
    for (const role of ['space_admin', 'boss', 'outside_role', 'no_such_role']) {
      const res = await w.admin.patch(`/api/spaces/${w.space}`, { visibility: 'org', default_role: role });
      expectProblem(res, 400, 'validation_failed');
      assert.equal(res.body.errors?.[0]?.field, 'default_role');
    }
    const unchanged = await w.admin.get(`/api/spaces/${w.space}`);
    assert.deepEqual([unchanged.body.visibility, unchanged.body.default_role], ['private', 'viewer'], 'a refused patch changes nothing, visibility included');

    // a role of the organization can be the default, and then cannot grow into administration or disappear
    const owner = await as(w.org.ownerId, w.org.orgId);
    const role = await owner.post(`/api/orgs/${w.org.orgId}/roles`, { key: 'helper', name: 'Helper', permissions: ['agents:read', 'runs:read'] });
    assert.equal(role.status, 201, role.text);
    const set = await w.admin.patch(`/api/spaces/${w.space}`, { visibility: 'org', default_role: 'helper' });
    assert.equal(set.status, 200, set.text);
    expectProblem(await owner.patch(`/api/orgs/${w.org.orgId}/roles/${role.body.id}`, { permissions: ['agents:read', 'space-members:write'] }), 409, 'role_in_use');
    expectProblem(await owner.delete(`/api/orgs/${w.org.orgId}/roles/${role.body.id}`), 409, 'role_in_use');
    assert.equal((await owner.patch(`/api/orgs/${w.org.orgId}/roles/${role.body.id}`, { permissions: ['agents:read'] })).status, 200);

    const joinerId = await aMember(pool(), w.org.orgId, 'member');
    const joined = await (await as(joinerId, w.org.orgId)).post(`/api/spaces/${w.space}/join`, { visibility: 'org', default_role: 'helper' });
    assert.equal(joined.status, 201, joined.text);
    assert.equal(joined.body.role_key, 'helper');
  });

  test('only the space\'s administrators change its visibility and default role', async () => {
    const w = await aWorld();
    const editor = await as(await aMember(pool(), w.org.orgId, 'member', { spaceId: w.space, roleKey: 'editor' }), w.org.orgId);
    expectProblem(await editor.patch(`/api/spaces/${w.space}`, { visibility: 'org' }), 403, 'forbidden');
    expectProblem(await editor.patch(`/api/spaces/${w.space}`, { default_role: 'editor' }), 403, 'forbidden');
    const stranger = await as(await aMember(pool(), w.org.orgId, 'member'), w.org.orgId);
    expectProblem(await stranger.patch(`/api/spaces/${w.space}`, { visibility: 'org' }), 404, 'not_found');
    const res = await w.admin.get(`/api/spaces/${w.space}`);
    assert.equal(res.body.visibility, 'private');
  });
});
