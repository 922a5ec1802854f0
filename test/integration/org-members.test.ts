// Organization members: listing, role changes, removal and leaving; the organization keeps an
// owner; only owners touch the owner role; leaving revokes keys and takes the personal space.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useTestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, aSession, aSpace } from '../support/builders.ts';
import { client } from '../support/http.ts';

const { app: currentApp, pool, api, sessionOf } = useTestApp();

describe('listing', () => {
  test('members read the list; guests cannot', async () => {
    const org = await anOrg(pool());
    const member = await aMember(pool(), org.orgId, 'member');
    const guest = await aMember(pool(), org.orgId, 'guest');
    const res = await api().get(`/api/orgs/${org.orgId}/members`, { cookie: await sessionOf(member) });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data.map((m: { userId: string; role: string }) => `${m.userId}:${m.role}`).sort(), [`${org.ownerId}:owner`, `${member}:member`, `${guest}:guest`].sort());
    assert.equal((await api().get(`/api/orgs/${org.orgId}/members`, { cookie: await sessionOf(guest) })).status, 403);
  });
});

describe('changing roles', () => {
  test('an admin promotes a member to admin but cannot grant or change the owner role', async () => {
    const org = await anOrg(pool());
    const admin = await sessionOf(await aMember(pool(), org.orgId, 'admin'));
    const member = await aMember(pool(), org.orgId, 'member');
    const promoted = await api().patch(`/api/orgs/${org.orgId}/members/${member}`, { role: 'admin' }, { cookie: admin });
    assert.equal(promoted.status, 200, promoted.text);
    assert.equal(promoted.body.role, 'admin');
    assert.equal((await api().patch(`/api/orgs/${org.orgId}/members/${member}`, { role: 'owner' }, { cookie: admin })).status, 403);
    assert.equal((await api().patch(`/api/orgs/${org.orgId}/members/${org.ownerId}`, { role: 'member' }, { cookie: admin })).status, 403);
  });

  test('demoting the last owner is 409 last_owner; with a second owner it works', async () => {
    const org = await anOrg(pool());
    const owner = await sessionOf(org.ownerId);
    const last = await api().patch(`/api/orgs/${org.orgId}/members/${org.ownerId}`, { role: 'admin' }, { cookie: owner });
    assert.equal(last.status, 409);
    assert.equal(last.body.code, 'last_owner');
    const second = await aMember(pool(), org.orgId, 'member');
    assert.equal((await api().patch(`/api/orgs/${org.orgId}/members/${second}`, { role: 'owner' }, { cookie: owner })).status, 200);
    assert.equal((await api().patch(`/api/orgs/${org.orgId}/members/${org.ownerId}`, { role: 'admin' }, { cookie: owner })).status, 200);
  });

  test('a role that is not an organization role is refused; an unknown member is 404', async () => {
    const org = await anOrg(pool());
    const owner = await sessionOf(org.ownerId);
    const member = await aMember(pool(), org.orgId, 'member');
    const bad = await api().patch(`/api/orgs/${org.orgId}/members/${member}`, { role: 'emperor' }, { cookie: owner });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.errors[0].field, 'role');
    assert.equal((await api().patch(`/api/orgs/${org.orgId}/members/usr_nobody`, { role: 'member' }, { cookie: owner })).status, 404);
  });
});

describe('removing and leaving', () => {
  test('removing a member revokes their keys in this organization only, drops their space roles and personal space', async () => {
    const org = await anOrg(pool());
    const other = await anOrg(pool());
    const member = await aMember(pool(), org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'editor' });
    await pool().query(`INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $2, 'admin')`, [other.orgId, member]);
    const personal = await aSpace(pool(), org.orgId, { kind: 'personal', ownerUserId: member });
    const here = await aKey(pool(), { orgId: org.orgId, spaceId: org.spaceId, userId: member, scopes: ['spaces:read'] });
    const there = await aKey(pool(), { orgId: other.orgId, spaceId: other.spaceId, userId: member, scopes: ['spaces:read'] });
    assert.equal((await api().get('/api/spaces', { key: here.key })).status, 200);

    const res = await api().delete(`/api/orgs/${org.orgId}/members/${member}`, { cookie: await sessionOf(org.ownerId) });
    assert.equal(res.status, 204, res.text);
    assert.equal((await api().get('/api/spaces', { key: here.key })).status, 401);
    assert.equal((await api().get('/api/spaces', { key: there.key })).status, 200);
    assert.equal((await pool().query('SELECT 1 FROM space_members WHERE org_id = $1 AND user_id = $2', [org.orgId, member])).rowCount, 0);
    assert.equal((await pool().query('SELECT 1 FROM spaces WHERE id = $1', [personal])).rowCount, 0);
  });

  test('a personal space with an active run is kept, orphaned, when its owner leaves', async () => {
    const org = await anOrg(pool());
    const member = await aMember(pool(), org.orgId, 'member');
    const personal = await aSpace(pool(), org.orgId, { kind: 'personal', ownerUserId: member });
    await pool().query(
      `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, timeout_seconds, event_secret, sink_expires_at)
       VALUES ('run_live_personal', $1, $2, '@a/b', '1.0.0', 'running', 'member', 60, 'x', now())`,
      [org.orgId, personal],
    );
    assert.equal((await api().delete(`/api/orgs/${org.orgId}/members/${member}`, { cookie: await sessionOf(member) })).status, 204);
    const row = await pool().query('SELECT owner_user_id FROM spaces WHERE id = $1', [personal]);
    assert.equal(row.rows[0].owner_user_id, null);
  });

  test('a member leaves with their own id; an admin cannot remove an owner; the last owner cannot leave', async () => {
    const org = await anOrg(pool());
    const member = await aMember(pool(), org.orgId, 'guest');
    assert.equal((await api().delete(`/api/orgs/${org.orgId}/members/${member}`, { cookie: await sessionOf(member) })).status, 204);
    const admin = await sessionOf(await aMember(pool(), org.orgId, 'admin'));
    assert.equal((await api().delete(`/api/orgs/${org.orgId}/members/${org.ownerId}`, { cookie: admin })).status, 403);
    const leave = await api().delete(`/api/orgs/${org.orgId}/members/${org.ownerId}`, { cookie: await sessionOf(org.ownerId) });
    assert.equal(leave.status, 409);
    assert.equal(leave.body.code, 'last_owner');
  });

  test('a member without members:write cannot remove someone else', async () => {
    const org = await anOrg(pool());
    const a = await aMember(pool(), org.orgId, 'member');
    const b = await aMember(pool(), org.orgId, 'member');
    const res = await api().delete(`/api/orgs/${org.orgId}/members/${b}`, { cookie: await sessionOf(a) });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'forbidden');
  });
});
