// A key acts with its scopes intersected with what its creator holds now: demoting the creator
// narrows the key at once, a new role widens it back up to its scopes, and removing the creator
// from the organization revokes it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aMember, anOrg, aSession } from '../support/builders.ts';
import { client } from '../support/http.ts';

let app: TestApp;
before(async () => {
  app = await startTestApp();
});
after(() => app.close());

test('a key loses its creator\'s lost authority at once, and stops working when the creator leaves', async () => {
  const pool = app.deps.database.pool;
  const api = client(app.url);
  const org = await anOrg(pool);
  const owner = (await aSession(pool, org.ownerId)).cookie;
  const creatorId = await aMember(pool, org.orgId, 'admin');
  const creator = { cookie: (await aSession(pool, creatorId)).cookie, org: org.orgId, space: org.spaceId };
  const made = await api.post('/api/api-keys', { name: 'follows me' }, creator);
  assert.equal(made.status, 201, made.text);
  const key = made.body.key as string;
  assert.equal((await api.get('/api/end-users', { key })).status, 200);

  // Demoted to member with no role in the key's space: end-users:read is gone, spaces:read stays.
  assert.equal((await api.patch(`/api/orgs/${org.orgId}/members/${creatorId}`, { role: 'member' }, { cookie: owner })).status, 200);
  const demoted = await api.get('/api/end-users', { key });
  assert.equal(demoted.status, 403);
  assert.equal(demoted.body.code, 'forbidden');
  assert.equal((await api.get('/api/spaces', { key })).status, 200);

  // A viewer role in the space gives reading back; the key follows.
  assert.equal((await api.post(`/api/spaces/${org.spaceId}/members`, { userId: creatorId, role_key: 'viewer' }, { cookie: owner, org: org.orgId })).status, 201);
  assert.equal((await api.get('/api/end-users', { key })).status, 200);
  assert.equal((await api.post('/api/end-users', { externalId: 'e1', name: 'E' }, { key })).status, 403);

  // Leaving the organization revokes the key.
  assert.equal((await api.delete(`/api/orgs/${org.orgId}/members/${creatorId}`, { cookie: owner })).status, 204);
  const gone = await api.get('/api/spaces', { key });
  assert.equal(gone.status, 401);
  assert.equal(gone.body.code, 'unauthorized');
});

test('changing the permissions of the creator\'s custom space role changes the key\'s at once', async () => {
  const pool = app.deps.database.pool;
  const api = client(app.url);
  const org = await anOrg(pool);
  const owner = (await aSession(pool, org.ownerId)).cookie;
  const role = await api.post(`/api/orgs/${org.orgId}/roles`, { key: 'integrator', name: 'Integrator', permissions: ['end-users:read', 'api-keys:create'] }, { cookie: owner });
  const creatorId = await aMember(pool, org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'integrator' });
  const creator = { cookie: (await aSession(pool, creatorId)).cookie, org: org.orgId, space: org.spaceId };
  const made = await api.post('/api/api-keys', { name: 'integration', scopes: ['end-users:read'] }, creator);
  assert.deepEqual(made.body.scopes, ['end-users:read']);
  assert.equal((await api.get('/api/end-users', { key: made.body.key })).status, 200);
  assert.equal((await api.patch(`/api/orgs/${org.orgId}/roles/${role.body.id}`, { permissions: ['api-keys:create'] }, { cookie: owner })).status, 200);
  assert.equal((await api.get('/api/end-users', { key: made.body.key })).status, 403);
});
