// Space members: adding, changing and removing space roles, and the rules that refuse them.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useTestApp } from '../support/app.ts';
import { aMember, anOrg, aSession, aSpace, aUser } from '../support/builders.ts';
import { client } from '../support/http.ts';

const { app: currentApp, pool, api, sessionOf } = useTestApp();

describe('managing members of a team space', () => {
  test('a space admin adds a member, changes their role and removes them; the new member sees the space at once', async () => {
    const org = await anOrg(pool());
    const space = await aSpace(pool(), org.orgId, { name: 'Ops' });
    const lead = await sessionOf(await aMember(pool(), org.orgId, 'member', { spaceId: space, roleKey: 'space_admin' }));
    const newcomerId = await aMember(pool(), org.orgId, 'member');
    const newcomer = await sessionOf(newcomerId);
    assert.equal((await api().get(`/api/spaces/${space}`, { cookie: newcomer, org: org.orgId })).status, 404);

    const added = await api().post(`/api/spaces/${space}/members`, { userId: newcomerId, role_key: 'editor' }, { cookie: lead, org: org.orgId });
    assert.equal(added.status, 201, added.text);
    assert.equal(added.body.role_key, 'editor');
    assert.equal((await api().get(`/api/spaces/${space}`, { cookie: newcomer, org: org.orgId })).status, 200);

    const again = await api().post(`/api/spaces/${space}/members`, { userId: newcomerId, role_key: 'viewer' }, { cookie: lead, org: org.orgId });
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'space_member_exists');

    const changed = await api().patch(`/api/spaces/${space}/members/${newcomerId}`, { role_key: 'viewer' }, { cookie: lead, org: org.orgId });
    assert.equal(changed.status, 200);
    const list = await api().get(`/api/spaces/${space}/members`, { cookie: lead, org: org.orgId });
    assert.equal(list.body.data.find((m: { userId: string }) => m.userId === newcomerId).role_key, 'viewer');

    assert.equal((await api().delete(`/api/spaces/${space}/members/${newcomerId}`, { cookie: lead, org: org.orgId })).status, 204);
    assert.equal((await api().get(`/api/spaces/${space}`, { cookie: newcomer, org: org.orgId })).status, 404);
  });

  test('an owner or admin of the organization: 409 redundant_space_role', async () => {
    const org = await anOrg(pool());
    const admin = await aMember(pool(), org.orgId, 'admin');
    const res = await api().post(`/api/spaces/${org.spaceId}/members`, { userId: admin, role_key: 'viewer' }, { cookie: await sessionOf(org.ownerId), org: org.orgId });
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'redundant_space_role');
  });

  test('a personal space: 409 personal_space_has_no_members', async () => {
    const org = await anOrg(pool());
    const personal = await aSpace(pool(), org.orgId, { kind: 'personal', ownerUserId: org.ownerId });
    const member = await aMember(pool(), org.orgId, 'member');
    const res = await api().post(`/api/spaces/${personal}/members`, { userId: member, role_key: 'viewer' }, { cookie: await sessionOf(org.ownerId), org: org.orgId });
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'personal_space_has_no_members');
  });

  test('an unknown role key is a field error; a person outside the organization is 404', async () => {
    const org = await anOrg(pool());
    const owner = await sessionOf(org.ownerId);
    const member = await aMember(pool(), org.orgId, 'member');
    const badRole = await api().post(`/api/spaces/${org.spaceId}/members`, { userId: member, role_key: 'overlord' }, { cookie: owner, org: org.orgId });
    assert.equal(badRole.status, 400);
    assert.equal(badRole.body.errors[0].field, 'role_key');
    const { userId: outsider } = await aUser(pool());
    assert.equal((await api().post(`/api/spaces/${org.spaceId}/members`, { userId: outsider, role_key: 'viewer' }, { cookie: owner, org: org.orgId })).status, 404);
  });

  test('an editor can neither list nor change members', async () => {
    const org = await anOrg(pool());
    const editor = await sessionOf(await aMember(pool(), org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'editor' }));
    const member = await aMember(pool(), org.orgId, 'member');
    assert.equal((await api().get(`/api/spaces/${org.spaceId}/members`, { cookie: editor, org: org.orgId })).status, 403);
    assert.equal((await api().post(`/api/spaces/${org.spaceId}/members`, { userId: member, role_key: 'viewer' }, { cookie: editor, org: org.orgId })).status, 403);
  });
});
