// Spaces: who sees which, creation, renaming and the default, and every rule that refuses a
// deletion; a deleted space takes its rows with it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type pg from 'pg';
import { useTestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, aSession, aSpace } from '../support/builders.ts';
import { client } from '../support/http.ts';

const { app: currentApp, pool, api, sessionOf } = useTestApp();
const ids = (res: { body: { data: Array<{ id: string }> } }) => res.body.data.map((s) => s.id).sort();

/**
 * Makes `spaceId` the home of a package. The packages feature may not exist yet: then a minimal
 * table stands in; otherwise a row is filled with placeholder values for its required columns.
 */
async function homePackageIn(db: pg.Pool, orgId: string, spaceId: string): Promise<void> {
  const cols = await db.query(
    `SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns
      WHERE table_schema = current_schema() AND table_name = 'packages'`,
  );
  if (cols.rowCount === 0) {
    await db.query('CREATE TABLE packages (id text PRIMARY KEY, org_id uuid NOT NULL, home_space_id text NOT NULL)');
    await db.query(`INSERT INTO packages VALUES ('@t/home', $1, $2)`, [orgId, spaceId]);
    return;
  }
  const names: string[] = [];
  const values: unknown[] = [];
  for (const c of cols.rows) {
    let v: unknown;
    if (c.column_name === 'home_space_id' || c.column_name === 'space_id') v = spaceId;
    else if (c.column_name === 'org_id') v = orgId;
    else if (c.is_nullable === 'YES' || c.column_default !== null) continue;
    else if (c.data_type === 'uuid') v = crypto.randomUUID();
    else if (/int|numeric|double|real/.test(c.data_type)) v = 0;
    else if (c.data_type === 'boolean') v = false;
    else if (/json/.test(c.data_type)) v = {};
    else if (/timestamp|date/.test(c.data_type)) v = new Date();
    else if (c.data_type === 'ARRAY') v = [];
    else v = `@t/home-${names.length}`;
    names.push(`"${c.column_name}"`);
    values.push(v);
  }
  await db.query(`INSERT INTO packages (${names.join(', ')}) VALUES (${values.map((_, i) => `$${i + 1}`).join(', ')})`, values);
}

describe('seeing spaces', () => {
  test('owners and admins see every team space; members their own; everyone their personal space only', async () => {
    const org = await anOrg(pool());
    const admin = await aMember(pool(), org.orgId, 'admin');
    const member = await aMember(pool(), org.orgId, 'member');
    const team = await aSpace(pool(), org.orgId, { name: 'Team' });
    const joined = await aSpace(pool(), org.orgId, { name: 'Joined' });
    await pool().query(`INSERT INTO space_members (space_id, user_id, org_id, role_key) VALUES ($1, $2, $3, 'viewer')`, [joined, member, org.orgId]);
    const ownerPersonal = await aSpace(pool(), org.orgId, { kind: 'personal', ownerUserId: org.ownerId });
    const adminPersonal = await aSpace(pool(), org.orgId, { kind: 'personal', ownerUserId: admin });
    const memberPersonal = await aSpace(pool(), org.orgId, { kind: 'personal', ownerUserId: member });

    const asAdmin = await api().get('/api/spaces', { cookie: await sessionOf(admin), org: org.orgId });
    assert.deepEqual(ids(asAdmin), [org.spaceId, team, joined, adminPersonal].sort());
    const asMember = await api().get('/api/spaces', { cookie: await sessionOf(member), org: org.orgId });
    assert.deepEqual(ids(asMember), [joined, memberPersonal].sort());
    assert.equal(asMember.body.data.find((s: { id: string }) => s.id === joined).role_key, 'viewer');
    const asOwner = await api().get('/api/spaces', { cookie: await sessionOf(org.ownerId), org: org.orgId });
    assert.ok(ids(asOwner).includes(ownerPersonal) && !ids(asOwner).includes(memberPersonal));
  });

  test('an API key sees only the space it is pinned to', async () => {
    const org = await anOrg(pool());
    await aSpace(pool(), org.orgId, { name: 'Other' });
    const { key } = await aKey(pool(), { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId, scopes: ['spaces:read'] });
    const res = await api().get('/api/spaces', { key });
    assert.deepEqual(ids(res), [org.spaceId]);
  });

  test('a space the caller cannot see is 404, and so is one of another organization', async () => {
    const org = await anOrg(pool());
    const other = await anOrg(pool());
    const member = await sessionOf(await aMember(pool(), org.orgId, 'member'));
    const hidden = await aSpace(pool(), org.orgId, { name: 'Hidden' });
    assert.equal((await api().get(`/api/spaces/${hidden}`, { cookie: member, org: org.orgId })).status, 404);
    assert.equal((await api().get(`/api/spaces/${other.spaceId}`, { cookie: await sessionOf(org.ownerId), org: org.orgId })).status, 404);
  });
});

describe('creating and changing', () => {
  test('a member creates a team space and becomes its space admin; a guest cannot create one', async () => {
    const org = await anOrg(pool());
    const member = await sessionOf(await aMember(pool(), org.orgId, 'member'));
    const res = await api().post('/api/spaces', { name: 'Lab' }, { cookie: member, org: org.orgId });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.kind, 'team');
    assert.equal(res.body.role_key, 'space_admin');
    const renamed = await api().patch(`/api/spaces/${res.body.id}`, { name: 'Laboratory' }, { cookie: member, org: org.orgId });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body.name, 'Laboratory');
    const guest = await sessionOf(await aMember(pool(), org.orgId, 'guest'));
    assert.equal((await api().post('/api/spaces', { name: 'No' }, { cookie: guest, org: org.orgId })).status, 403);
  });

  test('a viewer cannot rename a space', async () => {
    const org = await anOrg(pool());
    const viewer = await sessionOf(await aMember(pool(), org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'viewer' }));
    const res = await api().patch(`/api/spaces/${org.spaceId}`, { name: 'Mine now' }, { cookie: viewer, org: org.orgId });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'forbidden');
  });

  test('a personal space can be renamed but nothing else: 409 personal_space_immutable', async () => {
    const org = await anOrg(pool());
    const personal = await aSpace(pool(), org.orgId, { kind: 'personal', ownerUserId: org.ownerId });
    const owner = await sessionOf(org.ownerId);
    assert.equal((await api().patch(`/api/spaces/${personal}`, { name: 'Mine' }, { cookie: owner, org: org.orgId })).status, 200);
    const res = await api().patch(`/api/spaces/${personal}`, { is_default: true }, { cookie: owner, org: org.orgId });
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'personal_space_immutable');
  });

  test('an admin moves the default to another team space', async () => {
    const org = await anOrg(pool());
    const next = await aSpace(pool(), org.orgId, { name: 'Next' });
    const owner = await sessionOf(org.ownerId);
    const res = await api().patch(`/api/spaces/${next}`, { is_default: true }, { cookie: owner, org: org.orgId });
    assert.equal(res.status, 200);
    assert.equal(res.body.is_default, true);
    const list = await api().get('/api/spaces', { cookie: owner, org: org.orgId });
    assert.deepEqual(list.body.data.filter((s: { is_default: boolean }) => s.is_default).map((s: { id: string }) => s.id), [next]);
  });
});

describe('deleting', () => {
  test('the default space: 409 default_space_not_deletable', async () => {
    const org = await anOrg(pool());
    const res = await api().delete(`/api/spaces/${org.spaceId}`, { cookie: await sessionOf(org.ownerId), org: org.orgId });
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'default_space_not_deletable');
  });

  test('a personal space: 409 personal_space_not_deletable', async () => {
    const org = await anOrg(pool());
    const personal = await aSpace(pool(), org.orgId, { kind: 'personal', ownerUserId: org.ownerId });
    const res = await api().delete(`/api/spaces/${personal}`, { cookie: await sessionOf(org.ownerId), org: org.orgId });
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'personal_space_not_deletable');
  });

  test('with a run pending: 409 space_has_active_runs', async () => {
    const org = await anOrg(pool());
    const busy = await aSpace(pool(), org.orgId, { name: 'Busy' });
    await pool().query(
      `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, timeout_seconds, event_secret, sink_expires_at)
       VALUES ('run_pending_busy', $1, $2, '@a/b', '1.0.0', 'pending', 'member', 60, 'x', now())`,
      [org.orgId, busy],
    );
    const res = await api().delete(`/api/spaces/${busy}`, { cookie: await sessionOf(org.ownerId), org: org.orgId });
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'space_has_active_runs');
  });

  test('the home of a package: 409 space_homes_packages', async () => {
    const org = await anOrg(pool());
    const home = await aSpace(pool(), org.orgId, { name: 'Home' });
    await homePackageIn(pool(), org.orgId, home);
    const res = await api().delete(`/api/spaces/${home}`, { cookie: await sessionOf(org.ownerId), org: org.orgId });
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'space_homes_packages');
  });

  test('a team space goes with its members, keys and end-users; its keys stop at once', async () => {
    const org = await anOrg(pool());
    const doomed = await aSpace(pool(), org.orgId, { name: 'Doomed' });
    const member = await aMember(pool(), org.orgId, 'member', { spaceId: doomed, roleKey: 'space_admin' });
    const { key } = await aKey(pool(), { orgId: org.orgId, spaceId: doomed, userId: member, scopes: ['spaces:read'] });
    await pool().query(`INSERT INTO end_users (id, org_id, space_id, external_id, name) VALUES ('eu_doomed', $1, $2, 'x', 'X')`, [org.orgId, doomed]);
    assert.equal((await api().get('/api/spaces', { key })).status, 200);
    const res = await api().delete(`/api/spaces/${doomed}`, { cookie: await sessionOf(member), org: org.orgId });
    assert.equal(res.status, 204, res.text);
    for (const table of ['spaces', 'space_members', 'api_keys', 'end_users']) {
      const column = table === 'spaces' ? 'id' : 'space_id';
      assert.equal((await pool().query(`SELECT 1 FROM ${table} WHERE ${column} = $1`, [doomed])).rowCount, 0, table);
    }
    assert.equal((await api().get('/api/spaces', { key })).status, 401);
  });

  test('an editor cannot delete the space', async () => {
    const org = await anOrg(pool());
    const space = await aSpace(pool(), org.orgId, { name: 'Kept' });
    const editor = await sessionOf(await aMember(pool(), org.orgId, 'member', { spaceId: space, roleKey: 'editor' }));
    assert.equal((await api().delete(`/api/spaces/${space}`, { cookie: editor, org: org.orgId })).status, 403);
  });
});
