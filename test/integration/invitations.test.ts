// Invitations: issued with members:write, one pending per address, accepted by the invited
// address while signed in, and every way an acceptance can be refused.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useTestApp } from '../support/app.ts';
import { aMember, anOrg, aSession, aUser } from '../support/builders.ts';
import { client } from '../support/http.ts';

const { app: currentApp, pool, api, sessionOf } = useTestApp();

async function invite(orgId: string, cookie: string, email: string, role = 'member') {
  const res = await api().post(`/api/orgs/${orgId}/invitations`, { email, role }, { cookie });
  assert.equal(res.status, 201, res.text);
  return res.body as { id: string; token: string; status: string };
}

async function invitee(email: string): Promise<{ userId: string; cookie: string }> {
  const { userId } = await aUser(pool(), { email });
  return { userId, cookie: await sessionOf(userId) };
}

describe('issuing', () => {
  test('an admin invites; the token comes back once and the list shows the invitation pending', async () => {
    const org = await anOrg(pool());
    const admin = await sessionOf(await aMember(pool(), org.orgId, 'admin'));
    const inv = await invite(org.orgId, admin, 'newbie@example.test');
    assert.equal(inv.status, 'pending');
    assert.ok(inv.token.length >= 32);
    const list = await api().get(`/api/orgs/${org.orgId}/invitations`, { cookie: admin });
    assert.equal(list.status, 200);
    assert.equal(list.body.data[0].id, inv.id);
    assert.equal(list.body.data[0].status, 'pending');
    assert.equal(list.body.data[0].token, undefined);
  });

  test('a second pending invitation to the same address is 409 invitation_already_pending', async () => {
    const org = await anOrg(pool());
    const owner = await sessionOf(org.ownerId);
    await invite(org.orgId, owner, 'twice@example.test');
    const again = await api().post(`/api/orgs/${org.orgId}/invitations`, { email: 'TWICE@example.test', role: 'guest' }, { cookie: owner });
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'invitation_already_pending');
  });

  test('a member cannot invite; an admin cannot invite an owner; a current member cannot be invited', async () => {
    const org = await anOrg(pool());
    const member = await aMember(pool(), org.orgId, 'member');
    assert.equal((await api().post(`/api/orgs/${org.orgId}/invitations`, { email: 'a@example.test', role: 'member' }, { cookie: await sessionOf(member) })).status, 403);
    const admin = await sessionOf(await aMember(pool(), org.orgId, 'admin'));
    assert.equal((await api().post(`/api/orgs/${org.orgId}/invitations`, { email: 'b@example.test', role: 'owner' }, { cookie: admin })).status, 403);
    const { email } = (await pool().query('SELECT email FROM users WHERE id = $1', [member])).rows[0];
    const dup = await api().post(`/api/orgs/${org.orgId}/invitations`, { email, role: 'member' }, { cookie: admin });
    assert.equal(dup.status, 400);
    assert.equal(dup.body.errors[0].field, 'email');
  });
});

describe('accepting', () => {
  test('the invited address joins with the invited role and gets a personal space', async () => {
    const org = await anOrg(pool());
    const inv = await invite(org.orgId, await sessionOf(org.ownerId), 'Joiner@Example.test', 'admin');
    const who = await invitee('joiner@example.test');
    const res = await api().post(`/api/invitations/${inv.token}/accept`, undefined, { cookie: who.cookie });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual({ orgId: res.body.orgId, role: res.body.role }, { orgId: org.orgId, role: 'admin' });
    const orgs = await api().get('/api/orgs', { cookie: who.cookie });
    assert.deepEqual(orgs.body.data.map((o: { id: string; role: string }) => `${o.id}:${o.role}`), [`${org.orgId}:admin`]);
    const spaces = await api().get('/api/spaces', { cookie: who.cookie, org: org.orgId });
    assert.ok(spaces.body.data.some((s: { id: string; kind: string }) => s.id === res.body.personal_space_id && s.kind === 'personal'));
    const again = await api().post(`/api/invitations/${inv.token}/accept`, undefined, { cookie: who.cookie });
    assert.equal(again.status, 410);
    assert.equal(again.body.code, 'invitation_accepted');
  });

  test('without a session: 401 authentication_required', async () => {
    const org = await anOrg(pool());
    const inv = await invite(org.orgId, await sessionOf(org.ownerId), 'later@example.test');
    const res = await api().post(`/api/invitations/${inv.token}/accept`);
    assert.equal(res.status, 401);
    assert.equal(res.body.code, 'authentication_required');
  });

  test('another address: 403 email_mismatch, and nobody joins', async () => {
    const org = await anOrg(pool());
    const inv = await invite(org.orgId, await sessionOf(org.ownerId), 'intended@example.test');
    const wrong = await invitee('someone-else@example.test');
    const res = await api().post(`/api/invitations/${inv.token}/accept`, undefined, { cookie: wrong.cookie });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'email_mismatch');
    assert.equal((await pool().query('SELECT 1 FROM org_members WHERE user_id = $1', [wrong.userId])).rowCount, 0);
  });

  test('cancelled: 410 invitation_cancelled', async () => {
    const org = await anOrg(pool());
    const owner = await sessionOf(org.ownerId);
    const inv = await invite(org.orgId, owner, 'cancelled@example.test');
    assert.equal((await api().delete(`/api/orgs/${org.orgId}/invitations/${inv.id}`, { cookie: owner })).status, 204);
    const who = await invitee('cancelled@example.test');
    const res = await api().post(`/api/invitations/${inv.token}/accept`, undefined, { cookie: who.cookie });
    assert.equal(res.status, 410);
    assert.equal(res.body.code, 'invitation_cancelled');
  });

  test('expired: 410 invitation_expired, and a new invitation to the address can be sent', async () => {
    const org = await anOrg(pool());
    const owner = await sessionOf(org.ownerId);
    const inv = await invite(org.orgId, owner, 'slow@example.test');
    await pool().query(`UPDATE invitations SET expires_at = now() - interval '1 minute' WHERE id = $1`, [inv.id]);
    const who = await invitee('slow@example.test');
    const res = await api().post(`/api/invitations/${inv.token}/accept`, undefined, { cookie: who.cookie });
    assert.equal(res.status, 410);
    assert.equal(res.body.code, 'invitation_expired');
    await invite(org.orgId, owner, 'slow@example.test');
  });

  test('an unknown token: 404 invitation_not_found', async () => {
    const who = await invitee('lost@example.test');
    const res = await api().post('/api/invitations/no-such-token/accept', undefined, { cookie: who.cookie });
    assert.equal(res.status, 404);
    assert.equal(res.body.code, 'invitation_not_found');
  });

  test('an organization being deleted: 404 org_not_found', async () => {
    const org = await anOrg(pool());
    const inv = await invite(org.orgId, await sessionOf(org.ownerId), 'toolate@example.test');
    await pool().query('UPDATE organizations SET deleting_at = now() WHERE id = $1', [org.orgId]);
    const who = await invitee('toolate@example.test');
    const res = await api().post(`/api/invitations/${inv.token}/accept`, undefined, { cookie: who.cookie });
    assert.equal(res.status, 404);
    assert.equal(res.body.code, 'org_not_found');
  });
});
