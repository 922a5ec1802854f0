import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { anOrg, aKey } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { aCredential, aModel, aModelWorld, PROVIDER_KEY } from './models-harness.ts';

const w = await aModelWorld();
after(() => w.close());
const pool = w.app.deps.database.pool;

test('a credential is never answered with its key: creating, reading and listing show only a hint', async () => {
  const res = await w.api.post('/api/model-provider-credentials', { provider: 'openai-compatible', name: 'Local', base_url: `${w.model.url}/`, api_key: PROVIDER_KEY });
  assert.equal(res.status, 201);
  const cred = res.body;
  assert.match(cred.id, /^cred_/);
  assert.equal(cred.object, 'model_provider_credential');
  assert.equal(cred.base_url, w.model.url, 'the trailing slash is dropped');
  assert.equal(cred.api_key_set, true);
  assert.equal(cred.api_key_hint, '…WXYZ');
  assert.equal(cred.model_count, 0);
  assert.equal('api_key' in cred, false);

  const one = await w.api.get(`/api/model-provider-credentials/${cred.id}`);
  const list = await w.api.get('/api/model-provider-credentials');
  assert.equal(one.status, 200);
  assert.deepEqual(one.body, cred);
  assert.deepEqual(list.body.data.map((c: any) => c.id), [cred.id]);
  for (const text of [res.text, one.text, list.text]) assert.equal(text.includes(PROVIDER_KEY), false);
});

test('the key is sealed at rest: the row holds ciphertext that opens to the key', async () => {
  const cred = await aCredential(w, { name: 'Sealed' });
  const { rows } = await pool.query('SELECT * FROM model_provider_credentials WHERE id = $1', [cred.id]);
  const row = rows[0];
  assert.equal(JSON.stringify(row).includes(PROVIDER_KEY), false);
  assert.match(row.api_key_sealed, /^v1\./);
  assert.equal(w.app.deps.secrets.open(row.api_key_sealed), PROVIDER_KEY);
});

test('a short key shows no hint; a credential may hold no key at all', async () => {
  const short = await aCredential(w, { api_key: 'sk-short' });
  assert.equal(short.api_key_hint, null);
  const keyless = await aCredential(w, { api_key: undefined });
  assert.equal(keyless.api_key_set, false);
  assert.equal(keyless.api_key_hint, null);
});

test('PATCH renames, rotates the key and removes it', async () => {
  const cred = await aCredential(w);
  const renamed = await w.api.patch(`/api/model-provider-credentials/${cred.id}`, { name: 'Renamed' });
  assert.equal(renamed.status, 200);
  assert.equal(renamed.body.name, 'Renamed');
  assert.equal(renamed.body.api_key_hint, '…WXYZ');

  const rotated = await w.api.patch(`/api/model-provider-credentials/${cred.id}`, { api_key: 'sk-rotated-key-9876543210' });
  assert.equal(rotated.body.api_key_hint, '…3210');
  assert.equal(rotated.text.includes('sk-rotated-key-9876543210'), false);
  const { rows } = await pool.query('SELECT api_key_sealed FROM model_provider_credentials WHERE id = $1', [cred.id]);
  assert.equal(w.app.deps.secrets.open(rows[0].api_key_sealed), 'sk-rotated-key-9876543210');

  const removed = await w.api.patch(`/api/model-provider-credentials/${cred.id}`, { api_key: null });
  assert.equal(removed.body.api_key_set, false);
  assert.equal(removed.body.api_key_hint, null);
  assert.equal(removed.body.name, 'Renamed');
});

test('a credential used by a model cannot be deleted (409 credential_in_use) until the model goes', async () => {
  const cred = await aCredential(w, { name: 'In use' });
  const model = await aModel(w, cred.id, { model: 'fake-text' });
  assert.equal((await w.api.get(`/api/model-provider-credentials/${cred.id}`)).body.model_count, 1);
  const refused = await w.api.delete(`/api/model-provider-credentials/${cred.id}`);
  assert.equal(refused.status, 409);
  assert.equal(refused.body.code, 'credential_in_use');
  assert.equal((await w.api.delete(`/api/models/${model.id}`)).status, 204);
  assert.equal((await w.api.delete(`/api/model-provider-credentials/${cred.id}`)).status, 204);
  assert.equal((await w.api.get(`/api/model-provider-credentials/${cred.id}`)).status, 404);
});

test('providers: presets fill the base URL, openai-compatible needs one, an unknown one is not registered', async () => {
  const preset = await w.api.post('/api/model-provider-credentials', { provider: 'openai', name: 'OpenAI', api_key: PROVIDER_KEY });
  assert.equal(preset.status, 201);
  assert.equal(preset.body.base_url, 'https://api.openai.com/v1');

  const noBase = await w.api.post('/api/model-provider-credentials', { provider: 'openai-compatible', name: 'x', api_key: PROVIDER_KEY });
  assert.equal(noBase.status, 400);
  assert.equal(noBase.body.code, 'validation_failed');
  assert.equal(noBase.body.errors[0].field, 'base_url');

  const unknown = await w.api.post('/api/model-provider-credentials', { provider: 'mystery', name: 'x', base_url: w.model.url });
  assert.equal(unknown.status, 409);
  assert.equal(unknown.body.code, 'model_provider_unregistered');

  const badUrl = await w.api.post('/api/model-provider-credentials', { provider: 'openai-compatible', name: 'x', base_url: 'ftp://127.0.0.1/v1' });
  assert.equal(badUrl.status, 400);
});

test('another organization\'s credentials are out of reach (404) and not listed', async () => {
  const mine = await aCredential(w, { name: 'Mine' });
  const other = await anOrg(pool);
  const stranger = client(w.app.url, { key: (await aKey(pool, { orgId: other.orgId, spaceId: other.spaceId, userId: other.ownerId })).key });
  assert.equal((await stranger.get(`/api/model-provider-credentials/${mine.id}`)).status, 404);
  assert.equal((await stranger.patch(`/api/model-provider-credentials/${mine.id}`, { name: 'Taken' })).status, 404);
  assert.equal((await stranger.delete(`/api/model-provider-credentials/${mine.id}`)).status, 404);
  assert.equal((await stranger.post(`/api/model-provider-credentials/${mine.id}/test`)).status, 404);
  assert.deepEqual((await stranger.get('/api/model-provider-credentials')).body.data, []);
  const borrowed = await stranger.post('/api/models', { credential_id: mine.id, model: 'fake', name: 'Borrowed' });
  assert.equal(borrowed.status, 404);
});
