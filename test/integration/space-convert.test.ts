// Converting an orphaned personal space into a team space: only a personal space
// (space_not_personal) whose owner has left (personal_space_not_orphaned), by owners and admins.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useTestApp } from '../support/app.ts';
import { aMember, anOrg, aSpace } from '../support/builders.ts';

const { pool, api, sessionOf } = useTestApp();

test('an orphaned personal space becomes a team space; a team space or an owned personal space is 409', async () => {
  const org = await anOrg(pool());
  const owner = await sessionOf(org.ownerId);
  const at = { cookie: owner, org: org.orgId };

  const team = await api().post(`/api/spaces/${org.spaceId}/convert`, {}, at);
  assert.equal(team.status, 409, team.text);
  assert.equal(team.body.code, 'space_not_personal');

  const own = await aSpace(pool(), org.orgId, { kind: 'personal', ownerUserId: org.ownerId });
  const owned = await api().post(`/api/spaces/${own}/convert`, {}, at);
  assert.equal(owned.status, 409, owned.text);
  assert.equal(owned.body.code, 'personal_space_not_orphaned');

  // a member leaves while a run is active in their personal space: it stays, orphaned
  const leaver = await aMember(pool(), org.orgId, 'member');
  const personal = await aSpace(pool(), org.orgId, { kind: 'personal', ownerUserId: leaver });
  await pool().query(
    `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, timeout_seconds, event_secret, sink_expires_at)
     VALUES ('run_convert_live', $1, $2, '@a/b', '1.0.0', 'running', 'member', 60, 'x', now())`,
    [org.orgId, personal],
  );
  assert.equal((await api().delete(`/api/orgs/${org.orgId}/members/${leaver}`, { cookie: await sessionOf(leaver) })).status, 204);

  // a member does not see it; an admin below owner converts it
  const member = await sessionOf(await aMember(pool(), org.orgId, 'member'));
  assert.equal((await api().post(`/api/spaces/${personal}/convert`, {}, { cookie: member, org: org.orgId })).status, 404);
  const admin = await sessionOf(await aMember(pool(), org.orgId, 'admin'));
  const converted = await api().post(`/api/spaces/${personal}/convert`, {}, { cookie: admin, org: org.orgId });
  assert.equal(converted.status, 200, converted.text);
  assert.equal(converted.body.kind, 'team');
  assert.equal(converted.body.owner_user_id, null);
  assert.equal((await pool().query('SELECT kind FROM spaces WHERE id = $1', [personal])).rows[0].kind, 'team');

  // now a team space: it takes members, and converting again is space_not_personal
  const newcomer = await aMember(pool(), org.orgId, 'member');
  const added = await api().post(`/api/spaces/${personal}/members`, { userId: newcomer, role_key: 'editor' }, at);
  assert.equal(added.status, 201, added.text);
  const again = await api().post(`/api/spaces/${personal}/convert`, {}, at);
  assert.equal(again.status, 409);
  assert.equal(again.body.code, 'space_not_personal');
});

test('a member with spaces:write in a team space still cannot convert: owners and admins only', async () => {
  const org = await anOrg(pool());
  const lead = await sessionOf(await aMember(pool(), org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'space_admin' }));
  const res = await api().post(`/api/spaces/${org.spaceId}/convert`, {}, { cookie: lead, org: org.orgId });
  assert.equal(res.status, 403, res.text);
  assert.equal(res.body.code, 'forbidden');
});
