import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { resolveRunModel } from '../../api/modules/core-providers/resolve-model.ts';
import { orgScopeOf } from '../../db/tenant.ts';
import { isProblem } from '../../lib/problem.ts';
import { aCredential, aModel, aModelWorld, PROVIDER_KEY } from './models-harness.ts';

const w = await aModelWorld();
after(() => w.close());
const pool = w.app.deps.database.pool;
const scope = orgScopeOf({ principal: { userId: w.org.ownerId }, org: { id: w.org.orgId } }, w.app.deps.database);
const resolve = (modelId?: string | null) => resolveRunModel(scope, w.app.deps.secrets, modelId);
const failure = (p: Promise<unknown>) => p.then(() => assert.fail('expected a problem'), (e: unknown) => {
  assert.ok(isProblem(e));
  return { code: e.code, status: e.status };
});

test('400 model_not_configured when the run names no model and the organization has no default', async () => {
  assert.deepEqual(await failure(resolve()), { code: 'model_not_configured', status: 400 });
  assert.deepEqual(await failure(resolve(null)), { code: 'model_not_configured', status: 400 });
  assert.deepEqual(await failure(resolve('mdl_unknown')), { code: 'model_not_configured', status: 400 });
});

test('the default model, or the one named, with its base URL and opened key', async () => {
  const cred = await aCredential(w);
  const first = await aModel(w, cred.id, { model: 'fake' });
  const second = await aModel(w, cred.id, { model: 'fake-text', temperature: 0.3 });
  assert.deepEqual(await resolve(), {
    modelId: first.id, model: 'fake', baseUrl: w.model.url, apiKey: PROVIDER_KEY, provider: 'openai-compatible', temperature: null, reasoningEffort: null, proxy: null,
    supportsTemperature: true, reasoningLevels: [],
  });
  const named = await resolve(second.id);
  assert.deepEqual([named.modelId, named.model, named.temperature], [second.id, 'fake-text', 0.3]);
});

test('409 model_disabled for a disabled model; 400 model_credential_missing once the key is removed', async () => {
  const cred = await aCredential(w, { name: 'Second' });
  const off = await aModel(w, cred.id, { model: 'fake', enabled: false });
  assert.deepEqual(await failure(resolve(off.id)), { code: 'model_disabled', status: 409 });
  const on = await aModel(w, cred.id, { model: 'fake-text' });
  assert.equal((await w.api.patch(`/api/model-provider-credentials/${cred.id}`, { api_key: null })).status, 200);
  assert.deepEqual(await failure(resolve(on.id)), { code: 'model_credential_missing', status: 400 });
});

test('409 model_needs_reconnection when the stored key cannot be opened here', async () => {
  const cred = await aCredential(w, { name: 'Foreign' });
  const model = await aModel(w, cred.id, { model: 'fake' });
  await pool.query('UPDATE model_provider_credentials SET api_key_sealed = $2 WHERE id = $1', [cred.id, 'v1.AAAA.BBBB.CCCC']);
  assert.deepEqual(await failure(resolve(model.id)), { code: 'model_needs_reconnection', status: 409 });
});

test('another organization\'s model does not resolve', async () => {
  const cred = await aCredential(w, { name: 'Mine' });
  const model = await aModel(w, cred.id, { model: 'fake' });
  const otherScope = { ...scope, orgId: '00000000-0000-4000-8000-000000000000' };
  const err = await resolveRunModel(otherScope, w.app.deps.secrets, model.id).catch((e: unknown) => e);
  assert.ok(isProblem(err));
  assert.equal(err.code, 'model_not_configured');
});
