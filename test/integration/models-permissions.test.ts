import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { aMember, aSession } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { aCredential, aModel, aModelWorld, PROVIDER_KEY } from './models-harness.ts';

const w = await aModelWorld();
after(() => w.close());
const pool = w.app.deps.database.pool;
const cred = await aCredential(w);
const model = await aModel(w, cred.id);
const sessionOf = async (userId: string) => client(w.app.url, { cookie: (await aSession(pool, userId)).cookie, org: w.org.orgId });

test('models need only X-Org-Id with a session: no space header', async () => {
  const owner = await sessionOf(w.org.ownerId);
  const list = await owner.get('/api/models');
  assert.equal(list.status, 200);
  assert.deepEqual(list.body.data.map((m: any) => m.id), [model.id]);
  const created = await owner.post('/api/model-provider-credentials', { provider: 'openai-compatible', name: 'By session', base_url: w.model.url, api_key: PROVIDER_KEY });
  assert.equal(created.status, 201);

  const noOrg = client(w.app.url, { cookie: (await aSession(pool, w.org.ownerId)).cookie });
  const refused = await noOrg.get('/api/models');
  assert.equal(refused.status, 400);
  assert.equal(refused.body.param, 'X-Org-Id');
});

test('a member reads models but without models:write gets 403 on every write and test', async () => {
  const member = await sessionOf(await aMember(pool, w.org.orgId, 'member'));
  assert.equal((await member.get('/api/models')).status, 200);
  assert.equal((await member.get(`/api/model-provider-credentials/${cred.id}`)).status, 200);
  const attempts = [
    member.post('/api/model-provider-credentials', { provider: 'openai-compatible', name: 'x', base_url: w.model.url }),
    member.patch(`/api/model-provider-credentials/${cred.id}`, { name: 'x' }),
    member.delete(`/api/model-provider-credentials/${cred.id}`),
    member.post('/api/model-provider-credentials/test', { provider: 'openai-compatible', base_url: w.model.url }),
    member.post(`/api/model-provider-credentials/${cred.id}/test`),
    member.post('/api/model-provider-credentials/discover', { credential_id: cred.id }),
    member.post('/api/models', { credential_id: cred.id, model: 'fake-text' }),
    member.patch(`/api/models/${model.id}`, { name: 'x' }),
    member.delete(`/api/models/${model.id}`),
    member.post('/api/models/test', { credential_id: cred.id, model: 'fake' }),
    member.post(`/api/models/${model.id}/test`),
  ];
  for (const res of await Promise.all(attempts)) {
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'forbidden');
  }
});

test('a guest cannot even read models', async () => {
  const guest = await sessionOf(await aMember(pool, w.org.orgId, 'guest'));
  assert.equal((await guest.get('/api/models')).status, 403);
});

test('an API key carries only its scopes: models:read lists, models:write adds, models:delete deletes', async () => {
  const reader = await w.freshApi(['models:read']);
  assert.equal((await reader.get('/api/models')).status, 200);
  assert.equal((await reader.post('/api/models', { credential_id: cred.id, model: 'fake-text' })).status, 403);

  const writer = await w.freshApi(['models:read', 'models:write']);
  const added = await writer.post('/api/models', { credential_id: cred.id, model: 'fake-text' });
  assert.equal(added.status, 201);
  assert.equal(added.body.name, 'fake-text', 'the name defaults to the model id');
  assert.equal((await writer.delete(`/api/models/${added.body.id}`)).status, 403);
  const deleter = await w.freshApi(['models:delete']);
  assert.equal((await deleter.delete(`/api/models/${added.body.id}`)).status, 204);
});
