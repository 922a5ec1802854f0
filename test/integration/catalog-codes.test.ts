// Catalog codes without a test of their own elsewhere, each provoked over HTTP where its meaning
// says: end-users refused in a personal space, and an organization removal the database refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useTestApp } from '../support/app.ts';
import { anOrg, aSpace } from '../support/builders.ts';

const { pool, api, sessionOf } = useTestApp();

test('an end-user is created in a team space only: 409 personal_space_takes_no_end_users', async () => {
  const org = await anOrg(pool());
  const owner = await sessionOf(org.ownerId);
  const personal = await aSpace(pool(), org.orgId, { kind: 'personal', ownerUserId: org.ownerId });
  const refused = await api().post('/api/end-users', { externalId: 'cust-1', name: 'Customer' }, { cookie: owner, org: org.orgId, space: personal });
  assert.equal(refused.status, 409, refused.text);
  assert.equal(refused.body.code, 'personal_space_takes_no_end_users');
  assert.equal((await pool().query('SELECT 1 FROM end_users WHERE space_id = $1', [personal])).rowCount, 0);
  const created = await api().post('/api/end-users', { externalId: 'cust-1', name: 'Customer' }, { cookie: owner, org: org.orgId, space: org.spaceId });
  assert.equal(created.status, 201, created.text);
});

test('a removal the database refuses is 400 delete_failed; the organization stays marked and DELETE again finishes', async () => {
  const org = await anOrg(pool());
  const owner = await sessionOf(org.ownerId);
  // a real PostgreSQL refusal of this one organization's row
  await pool().query(`CREATE FUNCTION test_refuse_org_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'refused by the test'; END $$`);
  await pool().query(`CREATE TRIGGER test_refuse_org_delete BEFORE DELETE ON organizations FOR EACH ROW
    WHEN (OLD.id = '${org.orgId}'::uuid) EXECUTE FUNCTION test_refuse_org_delete()`);
  try {
    const res = await api().delete(`/api/orgs/${org.orgId}`, { cookie: owner });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.code, 'delete_failed');
    assert.doesNotMatch(res.text, /refused by the test/);
    const row = await pool().query('SELECT deleting_at FROM organizations WHERE id = $1', [org.orgId]);
    assert.ok(row.rows[0].deleting_at, 'the organization stays marked for deletion');
  } finally {
    await pool().query('DROP TRIGGER test_refuse_org_delete ON organizations');
  }
  const again = await api().delete(`/api/orgs/${org.orgId}`, { cookie: owner });
  assert.equal(again.status, 204, again.text);
  assert.equal((await pool().query('SELECT 1 FROM organizations WHERE id = $1', [org.orgId])).rowCount, 0);
});
