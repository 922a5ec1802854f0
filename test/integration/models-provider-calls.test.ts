import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { searchOpenRouterModels } from '../../api/modules/core-providers/openrouter.ts';
import { probeChatCompletion } from '../../api/modules/core-providers/provider-client.ts';
import { isProblem } from '../../lib/problem.ts';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { aKey } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { aClosedPort, aCredential, aModel, aModelWorld, aScriptedProvider, PROVIDER_KEY } from './models-harness.ts';

const w = await aModelWorld();
after(() => w.close());
const inline = (base_url: string) => ({ provider: 'openai-compatible', base_url, api_key: PROVIDER_KEY });

test('testing a credential lists the provider\'s models; nothing is stored', async () => {
  const res = await w.api.post('/api/model-provider-credentials/test', inline(w.model.url));
  assert.equal(res.status, 200);
  assert.equal(res.body.ok, true);
  assert.ok(res.body.models.includes('fake'));
  assert.equal(typeof res.body.latency_ms, 'number');
  assert.deepEqual((await w.api.get('/api/model-provider-credentials')).body.data, []);
});

test('an unreachable provider is 502 network_error; a provider error is 502 provider_error with its status', async () => {
  const down = await w.api.post('/api/model-provider-credentials/test', inline(`http://127.0.0.1:${aClosedPort(w)}/v1`));
  assert.equal(down.status, 502);
  assert.equal(down.body.code, 'network_error');

  const wrongPath = await w.api.post('/api/model-provider-credentials/test', inline(w.model.url.replace(/\/v1$/, '/nowhere')));
  assert.equal(wrongPath.status, 502);
  assert.equal(wrongPath.body.code, 'provider_error');
  assert.equal(wrongPath.body.provider_status, 404);
});

test('a provider message that echoes the key is answered without it', async (t) => {
  const echo = await aScriptedProvider(w, 401, { error: { message: `Incorrect API key provided: ${PROVIDER_KEY}` } });
  t.after(() => echo.close());
  const res = await w.api.post('/api/model-provider-credentials/test', inline(echo.url));
  assert.equal(res.status, 502);
  assert.equal(res.body.code, 'provider_error');
  assert.equal(res.body.provider_status, 401);
  assert.equal(res.text.includes(PROVIDER_KEY), false);
  assert.match(res.body.detail, /\[redacted\]/);
});

test('a stored credential is tested and its models discovered, each naming the model already added', async () => {
  const cred = await aCredential(w);
  const tested = await w.api.post(`/api/model-provider-credentials/${cred.id}/test`);
  assert.equal(tested.status, 200);
  assert.ok(tested.body.models.includes('fake-text'));

  const added = await aModel(w, cred.id, { model: 'fake-text' });
  const found = await w.api.post('/api/model-provider-credentials/discover', { credential_id: cred.id });
  assert.equal(found.status, 200);
  assert.equal(found.body.data.find((m: any) => m.id === 'fake-text').model_id, added.id);
  assert.equal(found.body.data.find((m: any) => m.id === 'fake').model_id, null);

  const described = await w.api.post('/api/model-provider-credentials/discover', inline(w.model.url));
  assert.equal(described.status, 200);
  assert.ok(described.body.data.every((m: any) => m.model_id === null));
});

test('testing a model sends a one-token completion with the credential\'s key', async () => {
  const cred = await aCredential(w);
  const before = w.model.requests.length;
  const res = await w.api.post('/api/models/test', { credential_id: cred.id, model: 'fake' });
  assert.equal(res.status, 200);
  assert.deepEqual({ ok: res.body.ok, model: res.body.model }, { ok: true, model: 'fake' });
  const sent = w.model.requests.slice(before);
  assert.equal(sent.length, 1);
  assert.equal(sent[0].authorization, `Bearer ${PROVIDER_KEY}`);
  assert.equal(sent[0].body.max_tokens, 1);

  const model = await aModel(w, cred.id, { model: 'fake', name: 'Fake' });
  const stored = await w.api.post(`/api/models/${model.id}/test`);
  assert.equal(stored.status, 200);
});

test('model test failures: provider_error, model_not_offered, model_credential_missing', async (t) => {
  const cred = await aCredential(w);
  const failing = await w.api.post('/api/models/test', { credential_id: cred.id, model: 'fake-error' });
  assert.equal(failing.status, 502);
  assert.equal(failing.body.code, 'provider_error');
  assert.equal(failing.body.provider_status, 500);

  const missing = await aScriptedProvider(w, 404, { error: { message: 'The model `gpt-9` does not exist', type: 'invalid_request_error', code: 'model_not_found' } });
  t.after(() => missing.close());
  const elsewhere = await aCredential(w, { base_url: missing.url });
  const notOffered = await w.api.post('/api/models/test', { credential_id: elsewhere.id, model: 'gpt-9' });
  assert.equal(notOffered.status, 400);
  assert.equal(notOffered.body.code, 'model_not_offered');

  const keyless = await aCredential(w, { api_key: undefined });
  const noKey = await w.api.post('/api/models/test', { credential_id: keyless.id, model: 'fake' });
  assert.equal(noKey.status, 400);
  assert.equal(noKey.body.code, 'model_credential_missing');
});

test('a provider that does not answer in time is 504 timeout', async () => {
  const started = Date.now();
  const err = await probeChatCompletion({ provider: 'openai-compatible', baseUrl: w.model.url, apiKey: PROVIDER_KEY }, 'fake-hang', {}, {
    egress: { allowInternalHosts: [new URL(w.model.url).host] },
    timeoutMs: 300,
  }).then(() => null, (e: unknown) => e);
  assert.ok(isProblem(err));
  assert.equal(err.code, 'timeout');
  assert.equal(err.status, 504);
  assert.ok(Date.now() - started < 5_000);
});

test('test routes allow 5 calls a minute per caller', async () => {
  const api = await w.freshApi();
  for (let i = 0; i < 5; i++) assert.equal((await api.post('/api/model-provider-credentials/test', inline(w.model.url))).status, 200);
  const refused = await api.post('/api/model-provider-credentials/test', inline(w.model.url));
  assert.equal(refused.status, 429);
  assert.equal(refused.body.code, 'rate_limited');
  assert.equal(refused.headers.get('ratelimit-policy'), '5;w=60');
  const discover = await api.post('/api/model-provider-credentials/discover', inline(w.model.url));
  assert.equal(discover.headers.get('ratelimit-policy'), '6;w=60');
});

test('the OpenRouter catalog search filters by id and caps the count (against a stand-in catalog)', async () => {
  const pdeps = { secrets: w.app.deps.secrets, egress: { allowInternalHosts: [new URL(w.model.url).host] } };
  const found = await searchOpenRouterModels(pdeps, { q: 'TEXT', limit: 20 }, w.model.url);
  assert.deepEqual(found.data.map((m) => m.id), ['fake-text']);
  const capped = await searchOpenRouterModels(pdeps, { limit: 2 }, w.model.url);
  assert.equal(capped.data.length, 2);
});

test('over HTTP: 409 model_needs_reconnection when the stored key cannot be opened here; 409 model_disabled for a run whose model was disabled', async () => {
  const pool = w.app.deps.database.pool;
  const cred = await aCredential(w, { name: 'Foreign key' });
  const model = await aModel(w, cred.id, { model: 'fake', name: 'Foreign', is_default: false });
  const runId = `run_codes_${Date.now()}`;
  await pool.query(
    `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, timeout_seconds, event_secret, sink_expires_at, model_id)
     VALUES ($1, $2, $3, '@acme/agent', '1.0.0', 'running', 'member', $4, 60, $5, now() + interval '1 hour', $6)`,
    [runId, w.org.orgId, w.org.spaceId, w.org.ownerId, w.app.deps.secrets.seal(newRunEventSecret()), model.id],
  );
  const key = (await aKey(pool, { orgId: w.org.orgId, spaceId: w.org.spaceId, userId: w.org.ownerId, scopes: ['llm-proxy:call'] })).key;
  const completion = () => call(w.app.url, 'POST', '/api/llm-proxy/chat/completions', {
    key, headers: { 'x-run-id': runId }, body: { model: 'x', messages: [{ role: 'user', content: 'hi' }] },
  });
  assert.equal((await completion()).status, 200);

  await pool.query('UPDATE model_provider_credentials SET api_key_sealed = $2 WHERE id = $1', [cred.id, 'v1.AAAA.BBBB.CCCC']);
  const stored = await (await w.freshApi()).post(`/api/models/${model.id}/test`);
  assert.equal(stored.status, 409);
  assert.equal(stored.body.code, 'model_needs_reconnection');
  const viaRun = await completion();
  assert.equal(viaRun.status, 409);
  assert.equal(viaRun.body.code, 'model_needs_reconnection');
  assert.equal(viaRun.text.includes('v1.AAAA'), false);

  assert.equal((await w.api.patch(`/api/model-provider-credentials/${cred.id}`, { api_key: PROVIDER_KEY })).status, 200);
  assert.equal((await completion()).status, 200);
  assert.equal((await w.api.patch(`/api/models/${model.id}`, { enabled: false })).status, 200);
  const disabled = await completion();
  assert.equal(disabled.status, 409);
  assert.equal(disabled.body.code, 'model_disabled');
});

test('a run\'s model call takes the model\'s default settings and is refused settings the model does not accept', async () => {
  const pool = w.app.deps.database.pool;
  const cred = await aCredential(w, { name: 'Settings' });
  const reasoner = await aModel(w, cred.id, { model: 'fake', name: 'Reasoner', is_default: false, supports_temperature: false, reasoning_levels: ['low', 'high'], reasoning_effort: 'low' });
  const plain = await aModel(w, cred.id, { model: 'fake-text', name: 'Plain', is_default: false, temperature: 0.3 });
  const key = (await aKey(pool, { orgId: w.org.orgId, spaceId: w.org.spaceId, userId: w.org.ownerId, scopes: ['llm-proxy:call'] })).key;
  const runOf = async (modelId: string) => {
    const runId = `run_settings_${modelId}`;
    await pool.query(
      `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, timeout_seconds, event_secret, sink_expires_at, model_id)
       VALUES ($1, $2, $3, '@acme/agent', '1.0.0', 'running', 'member', $4, 60, $5, now() + interval '1 hour', $6)`,
      [runId, w.org.orgId, w.org.spaceId, w.org.ownerId, w.app.deps.secrets.seal(newRunEventSecret()), modelId],
    );
    return (extra: Record<string, unknown> = {}) => call(w.app.url, 'POST', '/api/llm-proxy/chat/completions', {
      key, headers: { 'x-run-id': runId }, body: { model: 'x', messages: [{ role: 'user', content: 'hi' }], ...extra },
    });
  };
  const reason = await runOf(reasoner.id);
  assert.equal((await reason()).status, 200);
  assert.equal(w.model.requests.at(-1)?.body.reasoning_effort, 'low');
  assert.equal((await reason({ reasoning_effort: 'high' })).status, 200);
  assert.equal(w.model.requests.at(-1)?.body.reasoning_effort, 'high');
  const refused = async (send: () => Promise<any>, code: string) => {
    const before = w.model.requests.length;
    const res = await send();
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.code, code);
    assert.equal(w.model.requests.length, before, 'a refused call never reaches the provider');
  };
  await refused(() => reason({ reasoning_effort: 'medium' }), 'reasoning_level_unsupported');
  await refused(() => reason({ temperature: 0.5 }), 'temperature_unsupported');

  const simple = await runOf(plain.id);
  assert.equal((await simple()).status, 200);
  assert.equal(w.model.requests.at(-1)?.body.temperature, 0.3);
  await refused(() => simple({ reasoning_effort: 'low' }), 'reasoning_unsupported');
  await refused(() => simple({ temperature: 'hot' }), 'invalid_request');
});
