// Space roles: presets listed read-only, organization-defined bundles of space permissions whose
// changes reach their holders at once, and the rules on keys, permissions and deletion.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SPACE_ROLE_PRESETS } from '../../lib/permissions.ts';
import { useTestApp } from '../support/app.ts';
import { aMember, anOrg, aSession } from '../support/builders.ts';
import { client } from '../support/http.ts';

const { app: currentApp, pool, api, sessionOf } = useTestApp();

describe('space roles', () => {
  test('the list starts with the presets, marked read-only; members may read it', async () => {
    const org = await anOrg(pool());
    const member = await sessionOf(await aMember(pool(), org.orgId, 'member'));
    const res = await api().get(`/api/orgs/${org.orgId}/roles`, { cookie: member });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data.map((r: { key: string; preset: boolean }) => `${r.key}:${r.preset}`), SPACE_ROLE_PRESETS.map((p) => `${p.key}:true`));
  });

  test('a custom role grants exactly its permissions, and a change applies to its holders at once', async () => {
    const org = await anOrg(pool());
    const owner = await sessionOf(org.ownerId);
    const created = await api().post(`/api/orgs/${org.orgId}/roles`, { key: 'auditor', name: 'Auditor', permissions: ['space-members:read', 'spaces:read'] }, { cookie: owner });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.preset, false);
    const holder = await sessionOf(await aMember(pool(), org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'auditor' }));
    assert.equal((await api().get(`/api/spaces/${org.spaceId}/members`, { cookie: holder, org: org.orgId })).status, 200);
    assert.equal((await api().patch(`/api/spaces/${org.spaceId}`, { name: 'x' }, { cookie: holder, org: org.orgId })).status, 403);

    const narrowed = await api().patch(`/api/orgs/${org.orgId}/roles/${created.body.id}`, { permissions: ['spaces:read'] }, { cookie: owner });
    assert.equal(narrowed.status, 200);
    assert.equal((await api().get(`/api/spaces/${org.spaceId}/members`, { cookie: holder, org: org.orgId })).status, 403);
  });

  test('a preset key or a key in use is 409 role_key_taken', async () => {
    const org = await anOrg(pool());
    const owner = await sessionOf(org.ownerId);
    const preset = await api().post(`/api/orgs/${org.orgId}/roles`, { key: 'editor', name: 'Mine', permissions: [] }, { cookie: owner });
    assert.equal(preset.status, 409);
    assert.equal(preset.body.code, 'role_key_taken');
    assert.equal((await api().post(`/api/orgs/${org.orgId}/roles`, { key: 'ops', name: 'Ops', permissions: [] }, { cookie: owner })).status, 201);
    const dup = await api().post(`/api/orgs/${org.orgId}/roles`, { key: 'ops', name: 'Ops again', permissions: [] }, { cookie: owner });
    assert.equal(dup.status, 409);
    assert.equal(dup.body.code, 'role_key_taken');
  });

  test('organization permissions and unknown names cannot go in a space role', async () => {
    const org = await anOrg(pool());
    const res = await api().post(`/api/orgs/${org.orgId}/roles`, { key: 'bad', name: 'Bad', permissions: ['agents:read', 'members:write', 'launch:rockets'] }, { cookie: await sessionOf(org.ownerId) });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body.errors.map((e: { field: string }) => e.field), ['permissions[1]', 'permissions[2]']);
  });

  test('a role still held is 409 role_in_use; once released it is deleted', async () => {
    const org = await anOrg(pool());
    const owner = await sessionOf(org.ownerId);
    const role = await api().post(`/api/orgs/${org.orgId}/roles`, { key: 'temp', name: 'Temp', permissions: ['spaces:read'] }, { cookie: owner });
    const holder = await aMember(pool(), org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'temp' });
    const inUse = await api().delete(`/api/orgs/${org.orgId}/roles/${role.body.id}`, { cookie: owner });
    assert.equal(inUse.status, 409);
    assert.equal(inUse.body.code, 'role_in_use');
    assert.equal((await api().delete(`/api/spaces/${org.spaceId}/members/${holder}`, { cookie: owner, org: org.orgId })).status, 204);
    assert.equal((await api().delete(`/api/orgs/${org.orgId}/roles/${role.body.id}`, { cookie: owner })).status, 204);
  });

  test('members cannot define roles; presets cannot be changed', async () => {
    const org = await anOrg(pool());
    const member = await sessionOf(await aMember(pool(), org.orgId, 'member'));
    assert.equal((await api().post(`/api/orgs/${org.orgId}/roles`, { key: 'x', name: 'X', permissions: [] }, { cookie: member })).status, 403);
    const owner = await sessionOf(org.ownerId);
    // a preset is built in: changing or deleting it is 403 operation_not_allowed, not a missing role
    for (const res of [
      await api().patch(`/api/orgs/${org.orgId}/roles/editor`, { name: 'Changed' }, { cookie: owner }),
      await api().delete(`/api/orgs/${org.orgId}/roles/space_admin`, { cookie: owner }),
    ]) {
      assert.equal(res.status, 403, res.text);
      assert.equal(res.body.code, 'operation_not_allowed');
    }
    assert.equal((await api().patch(`/api/orgs/${org.orgId}/roles/role_missing`, { name: 'Changed' }, { cookie: owner })).status, 404);
    const listed = await api().get(`/api/orgs/${org.orgId}/roles`, { cookie: owner });
    assert.equal(listed.body.data.find((r: { key: string }) => r.key === 'editor').name, SPACE_ROLE_PRESETS.find((p) => p.key === 'editor')!.name);
  });
});
