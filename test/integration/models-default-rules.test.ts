import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { aCredential, aModel, aModelWorld } from './models-harness.ts';

const w = await aModelWorld();
after(() => w.close());
const cred = await aCredential(w);
const defaults = async () => (await w.api.get('/api/models')).body.data.filter((m: any) => m.is_default).map((m: any) => m.id);

test('the first enabled model becomes the default; adding another leaves it; naming a new default moves it', async () => {
  const first = await aModel(w, cred.id, { model: 'fake' });
  assert.match(first.id, /^mdl_/);
  assert.equal(first.is_default, true);
  const second = await aModel(w, cred.id, { model: 'fake-text' });
  assert.equal(second.is_default, false);
  assert.deepEqual(await defaults(), [first.id]);

  const third = await aModel(w, cred.id, { model: 'fake-bad-output', is_default: true });
  assert.equal(third.is_default, true);
  assert.deepEqual(await defaults(), [third.id]);

  const moved = await w.api.patch(`/api/models/${second.id}`, { is_default: true });
  assert.equal(moved.status, 200);
  assert.equal(moved.body.is_default, true);
  assert.deepEqual(await defaults(), [second.id]);
  assert.equal((await w.api.get(`/api/models/${third.id}`)).body.is_default, false);

  const list = await w.api.get('/api/models');
  assert.deepEqual(list.body.data.map((m: any) => m.id), [first.id, second.id, third.id]);
  assert.equal(list.body.data[0].provider, 'openai-compatible');
});

test('409 model_already_added when the credential already has that model id', async () => {
  const again = await w.api.post('/api/models', { credential_id: cred.id, model: 'fake', name: 'Again' });
  assert.equal(again.status, 409);
  assert.equal(again.body.code, 'model_already_added');
  // the same model id through another credential is another model
  const other = await aCredential(w, { name: 'Second endpoint' });
  assert.equal((await w.api.post('/api/models', { credential_id: other.id, model: 'fake' })).status, 201);
});

test('400 model_credential_missing when the credential holds no API key', async () => {
  const keyless = await aCredential(w, { api_key: undefined });
  const res = await w.api.post('/api/models', { credential_id: keyless.id, model: 'fake', name: 'Keyless' });
  assert.equal(res.status, 400);
  assert.equal(res.body.code, 'model_credential_missing');
});

test('409 model_disabled: a disabled model cannot be made the default, the default cannot be disabled', async () => {
  const born = await w.api.post('/api/models', { credential_id: cred.id, model: 'disabled-born', name: 'x', enabled: false, is_default: true });
  assert.equal(born.status, 409);
  assert.equal(born.body.code, 'model_disabled');

  const off = await aModel(w, cred.id, { model: 'fake-hang', enabled: false });
  assert.equal(off.is_default, false);
  const promote = await w.api.patch(`/api/models/${off.id}`, { is_default: true });
  assert.equal(promote.status, 409);
  assert.equal(promote.body.code, 'model_disabled');
  // enabling it in the same change is fine
  const both = await w.api.patch(`/api/models/${off.id}`, { is_default: true, enabled: true });
  assert.equal(both.status, 200);
  assert.deepEqual(await defaults(), [off.id]);

  const disable = await w.api.patch(`/api/models/${off.id}`, { enabled: false });
  assert.equal(disable.status, 409);
  assert.equal(disable.body.code, 'model_disabled');
  assert.equal((await w.api.get(`/api/models/${off.id}`)).body.enabled, true);
});

test('a default can be given up, and deleted: the organization is then without one', async () => {
  const [current] = await defaults();
  const cleared = await w.api.patch(`/api/models/${current}`, { is_default: false });
  assert.equal(cleared.body.is_default, false);
  assert.deepEqual(await defaults(), []);
  const again = await w.api.patch(`/api/models/${current}`, { is_default: true });
  assert.equal(again.body.is_default, true);
  assert.equal((await w.api.delete(`/api/models/${current}`)).status, 204);
  assert.deepEqual(await defaults(), []);
  assert.equal((await w.api.get(`/api/models/${current}`)).status, 404);
});

test('reasoning and temperature settings must fit what the model accepts', async () => {
  const expect = async (body: Record<string, unknown>, code: string) => {
    const res = await w.api.post('/api/models', { credential_id: cred.id, model: `m-${code}`, ...body });
    assert.equal(res.status, 400, code);
    assert.equal(res.body.code, code);
  };
  await expect({ reasoning_effort: 'high' }, 'reasoning_unsupported');
  await expect({ reasoning_levels: ['low', 'medium'], reasoning_effort: 'high' }, 'reasoning_level_unsupported');
  await expect({ supports_temperature: false, temperature: 0.2 }, 'temperature_unsupported');
  await expect({ reasoning_levels: ['low'], reasoning_effort: 'low', temperature: 0.2 }, 'temperature_with_reasoning_unsupported');

  const reasoner = await aModel(w, cred.id, { model: 'reasoner', reasoning_levels: ['low', 'high'], reasoning_effort: 'low', is_default: false });
  assert.deepEqual([reasoner.reasoning_levels, reasoner.reasoning_effort, reasoner.temperature], [['low', 'high'], 'low', null]);
  const narrowed = await w.api.patch(`/api/models/${reasoner.id}`, { reasoning_levels: ['high'] });
  assert.equal(narrowed.body.code, 'reasoning_level_unsupported');
  const changed = await w.api.patch(`/api/models/${reasoner.id}`, { reasoning_levels: ['high'], reasoning_effort: 'high' });
  assert.equal(changed.status, 200);
  const plain = await w.api.patch(`/api/models/${reasoner.id}`, { reasoning_effort: null, temperature: 0.7 });
  assert.deepEqual([plain.status, plain.body.temperature], [200, 0.7]);
});
