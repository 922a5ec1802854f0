import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../lib/ids.ts';
import { aModelWorld, PROVIDER_KEY } from './models-harness.ts';

// A platform whose operator did not allow internal hosts: the provider on 127.0.0.1 is out of bounds.
const w = await aModelWorld({ env: { EGRESS_ALLOW_INTERNAL_HOSTS: '' } });
after(() => w.close());
const pool = w.app.deps.database.pool;

test('a base URL on a loopback address is refused when saved (400 blocked_url)', async () => {
  for (const base_url of [w.model.url, 'http://localhost:1/v1', 'http://[::1]:1/v1', 'http://169.254.169.254/v1']) {
    const res = await w.api.post('/api/model-provider-credentials', { provider: 'openai-compatible', name: 'Local', base_url, api_key: PROVIDER_KEY });
    assert.equal(res.status, 400, base_url);
    assert.equal(res.body.code, 'blocked_url');
    assert.equal(res.body.errors[0].field, 'base_url');
  }
  assert.deepEqual((await w.api.get('/api/model-provider-credentials')).body.data, []);
});

test('testing or discovering against a loopback address is refused and sends nothing', async () => {
  const body = { provider: 'openai-compatible', base_url: w.model.url, api_key: PROVIDER_KEY };
  const tested = await w.api.post('/api/model-provider-credentials/test', body);
  assert.equal(tested.status, 400);
  assert.equal(tested.body.code, 'blocked_url');
  const discovered = await w.api.post('/api/model-provider-credentials/discover', body);
  assert.equal(discovered.body.code, 'blocked_url');
  const moved = await w.api.post('/api/model-provider-credentials', { provider: 'openai-compatible', name: 'Public', base_url: 'https://203.0.113.9/v1' });
  assert.equal(moved.body.code, 'blocked_url', 'documentation ranges are reserved too');
});

test('a stored credential pointing at a loopback address (allowed once, since disallowed) is refused at call time', async () => {
  const credId = newId('cred');
  await pool.query(
    `INSERT INTO model_provider_credentials (id, org_id, provider, name, base_url, api_key_sealed, api_key_hint) VALUES ($1, $2, 'openai-compatible', 'Old', $3, $4, null)`,
    [credId, w.org.orgId, w.model.url, w.app.deps.secrets.seal(PROVIDER_KEY)],
  );
  const before = w.model.requests.length;
  const tested = await w.api.post(`/api/model-provider-credentials/${credId}/test`);
  assert.equal(tested.status, 400);
  assert.equal(tested.body.code, 'blocked_url');
  const model = await w.api.post('/api/models/test', { credential_id: credId, model: 'fake' });
  assert.equal(model.body.code, 'blocked_url');
  assert.equal(w.model.requests.length, before, 'the provider heard nothing');

  const renamed = await w.api.patch(`/api/model-provider-credentials/${credId}`, { base_url: `${w.model.url}/again` });
  assert.equal(renamed.body.code, 'blocked_url', 'moving it to another internal address is refused too');
});
