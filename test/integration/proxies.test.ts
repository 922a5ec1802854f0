// The proxies family: an organization's outbound HTTP CONNECT proxies (credentials sealed, never
// returned), the test route through a real CONNECT proxy on loopback (the egress guard judging
// both the proxy and the target), and the default proxy carrying the organization's model traffic.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { aKey } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { startConnectProxy } from '../support/connect-proxy.ts';
import { aClosedPort, aCredential, aModel, aModelWorld, PROVIDER_KEY } from './models-harness.ts';

const w = await aModelWorld();
const USER = 'proxy-user';
const PASSWORD = 'proxy-pass-0123456789';
const proxy = await startConnectProxy({ port: w.sparePort(), credentials: { username: USER, password: PASSWORD } });
after(async () => {
  await proxy.close();
  await w.close();
});
const modelPort = new URL(w.model.url).port;
const throughProxy = () => proxy.connects.filter((c) => c.authority === `127.0.0.1:${modelPort}`).length;

async function aProxy(body: Record<string, unknown> = {}): Promise<any> {
  const res = await w.api.post('/api/proxies', { name: 'Office', url: proxy.url, username: USER, password: PASSWORD, ...body });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

test('a proxy is created, listed, read, renamed and deleted; its credentials are sealed and never returned', async () => {
  const created = await aProxy();
  assert.match(created.id, /^prx_/);
  assert.deepEqual(
    { object: created.object, url: created.url, credentials_set: created.credentials_set, is_default: created.is_default },
    { object: 'proxy', url: proxy.url, credentials_set: true, is_default: false },
  );
  const row = (await w.app.deps.database.pool.query('SELECT credentials_sealed FROM proxies WHERE id = $1', [created.id])).rows[0];
  assert.ok(row.credentials_sealed);
  assert.equal(row.credentials_sealed.includes(PASSWORD) || row.credentials_sealed.includes(USER), false);

  const list = await w.api.get('/api/proxies');
  assert.equal(list.status, 200);
  assert.ok(list.body.data.some((p: any) => p.id === created.id));
  const read = await w.api.get(`/api/proxies/${created.id}`);
  for (const res of [list, read]) assert.equal(res.text.includes(PASSWORD) || res.text.includes(USER), false);

  const renamed = await w.api.patch(`/api/proxies/${created.id}`, { name: 'Renamed', username: null });
  assert.equal(renamed.status, 200);
  assert.deepEqual([renamed.body.name, renamed.body.credentials_set], ['Renamed', false]);

  assert.equal((await w.api.delete(`/api/proxies/${created.id}`)).status, 204);
  assert.equal((await w.api.get(`/api/proxies/${created.id}`)).status, 404);
  assert.equal((await w.api.delete(`/api/proxies/${created.id}`)).status, 404);
});

test('bad proxy addresses are refused: not http, credentials in the URL, a path, a password alone, an internal address not allowed', async () => {
  const refused = async (body: Record<string, unknown>, status: number, code: string) => {
    const res = await w.api.post('/api/proxies', { name: 'Bad', ...body });
    assert.equal(res.status, status, `${JSON.stringify(body)}: ${res.text}`);
    assert.equal(res.body.code, code);
  };
  await refused({ url: 'https://127.0.0.1:3128' }, 400, 'validation_failed');
  await refused({ url: `http://u:p@127.0.0.1:${proxy.port}` }, 400, 'validation_failed');
  await refused({ url: `${proxy.url}/path` }, 400, 'validation_failed');
  await refused({ url: 'not a url' }, 400, 'validation_failed');
  await refused({ url: proxy.url, password: 'alone' }, 400, 'validation_failed');
  await refused({ url: 'http://127.0.0.1:9' }, 400, 'blocked_url');
  await refused({ url: 'http://169.254.169.254:80' }, 400, 'blocked_url');
});

test('the test route fetches the target through the proxy with its credentials', async () => {
  const p = await aProxy();
  const before = proxy.connects.length;
  const res = await w.api.post(`/api/proxies/${p.id}/test`, { target_url: `${w.model.url}/models` });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual([res.body.ok, res.body.proxy_id, res.body.status], [true, p.id, 200]);
  assert.equal(typeof res.body.latency_ms, 'number');
  const seen = proxy.connects.slice(before);
  assert.equal(seen.length, 1);
  // the proxy is asked for the checked address, never for a name it would resolve itself
  assert.equal(seen[0].authority, `127.0.0.1:${modelPort}`);
  assert.equal(seen[0].authorization, `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`);
});

test('test failures: wrong credentials (407), a target the guard refuses (never asked of the proxy), a proxy that is down', async () => {
  const api = await w.freshApi();
  const wrong = await aProxy({ password: 'wrong-password' });
  const denied = await api.post(`/api/proxies/${wrong.id}/test`, { target_url: `${w.model.url}/models` });
  assert.equal(denied.status, 502);
  assert.equal(denied.body.code, 'upstream_unreachable');
  assert.equal(denied.body.proxy_status, 407);

  const good = await aProxy();
  const before = proxy.connects.length;
  const blocked = await api.post(`/api/proxies/${good.id}/test`, { target_url: 'http://127.0.0.1:9/' });
  assert.equal(blocked.status, 403);
  assert.equal(blocked.body.code, 'blocked_target');
  const metadata = await api.post(`/api/proxies/${good.id}/test`, { target_url: 'http://169.254.169.254/latest/meta-data/' });
  assert.equal(metadata.body.code, 'blocked_target');
  assert.equal(proxy.connects.length, before, 'a refused target never reaches the proxy');

  const badTarget = await api.post(`/api/proxies/${good.id}/test`, { target_url: 'ftp://example.test/' });
  assert.equal(badTarget.status, 400);
  assert.equal(badTarget.body.code, 'validation_failed');

  const down = await aProxy({ url: `http://127.0.0.1:${aClosedPort(w)}`, username: undefined, password: undefined });
  const unreachable = await api.post(`/api/proxies/${down.id}/test`, { target_url: `${w.model.url}/models` });
  assert.equal(unreachable.status, 502);
  assert.equal(unreachable.body.code, 'upstream_unreachable');

  assert.equal((await w.api.post('/api/proxies/prx_nothing/test', { target_url: `${w.model.url}/models` })).status, 404);
});

test('test failures at the target: a name that cannot resolve (502 upstream_unresolvable), a target that never answers (504 upstream_timeout)', async () => {
  const api = await w.freshApi();
  const good = await aProxy();
  // a 64-character label: the resolver refuses it on this machine, without asking any name server
  const unresolvable = await api.post(`/api/proxies/${good.id}/test`, { target_url: `http://${'a'.repeat(64)}.test/` });
  assert.equal(unresolvable.status, 502, unresolvable.text);
  assert.equal(unresolvable.body.code, 'upstream_unresolvable');

  // a loopback target (allowed by name) that takes the connection through the proxy and never answers
  const silent = net.createServer(() => {});
  const port = w.sparePort();
  await new Promise<void>((r) => silent.listen(port, '127.0.0.1', () => r()));
  try {
    const started = Date.now();
    const hung = await api.post(`/api/proxies/${good.id}/test`, { target_url: `http://127.0.0.1:${port}/` });
    assert.equal(hung.status, 504, hung.text);
    assert.equal(hung.body.code, 'upstream_timeout');
    assert.ok(Date.now() - started < 15_000, 'the test route gives up at its deadline');
  } finally {
    silent.close();
  }
});

test('the test route allows 5 calls a minute per caller', async () => {
  const p = await aProxy();
  const api = await w.freshApi();
  for (let i = 0; i < 5; i++) assert.equal((await api.post(`/api/proxies/${p.id}/test`, { target_url: `${w.model.url}/models` })).status, 200);
  const refused = await api.post(`/api/proxies/${p.id}/test`, { target_url: `${w.model.url}/models` });
  assert.equal(refused.status, 429);
  assert.equal(refused.headers.get('ratelimit-policy'), '5;w=60');
});

test('the default proxy carries the organization\'s model traffic; one default at a time; none: direct', async () => {
  const first = await aProxy({ is_default: true });
  const cred = await aCredential(w);
  const model = await aModel(w, cred.id, { model: 'fake', is_default: true });

  let before = throughProxy();
  assert.equal((await w.api.post(`/api/model-provider-credentials/${cred.id}/test`)).status, 200);
  assert.equal((await w.api.post('/api/model-provider-credentials/discover', { credential_id: cred.id })).status, 200);
  assert.equal((await w.api.post(`/api/models/${model.id}/test`)).status, 200);
  assert.equal(throughProxy(), before + 3);

  // the model proxy of a run goes through it as well
  const pool = w.app.deps.database.pool;
  const runId = `run_viaproxy_${Date.now()}`;
  await pool.query(
    `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, actor_user_id, timeout_seconds, event_secret, sink_expires_at, model_id)
     VALUES ($1, $2, $3, '@acme/agent', '1.0.0', 'running', 'member', $4, 60, $5, now() + interval '1 hour', $6)`,
    [runId, w.org.orgId, w.org.spaceId, w.org.ownerId, w.app.deps.secrets.seal(newRunEventSecret()), model.id],
  );
  const key = (await aKey(pool, { orgId: w.org.orgId, spaceId: w.org.spaceId, userId: w.org.ownerId, scopes: ['llm-proxy:call'] })).key;
  before = throughProxy();
  const completion = await call(w.app.url, 'POST', '/api/llm-proxy/chat/completions', {
    key, headers: { 'x-run-id': runId }, body: { model: 'x', messages: [{ role: 'user', content: 'hi' }] },
  });
  assert.equal(completion.status, 200, completion.text);
  assert.equal(throughProxy(), before + 1);
  assert.equal(w.model.requests.at(-1)?.authorization, `Bearer ${PROVIDER_KEY}`);

  // a second default takes the place of the first
  const second = await aProxy({ is_default: true, password: 'wrong-password' });
  assert.equal((await w.api.get(`/api/proxies/${first.id}`)).body.is_default, false);
  // traffic really goes through it: a proxy refusing the credentials fails the provider call
  const failing = await w.api.post(`/api/model-provider-credentials/${cred.id}/test`);
  assert.equal(failing.status, 502);
  assert.equal(failing.body.code, 'network_error');
  assert.match(failing.body.detail, /proxy/);
  const failingRun = await call(w.app.url, 'POST', '/api/llm-proxy/chat/completions', {
    key, headers: { 'x-run-id': runId }, body: { model: 'x', messages: [{ role: 'user', content: 'hi' }] },
  });
  assert.equal(failingRun.status, 502);
  assert.equal(failingRun.body.code, 'upstream_unreachable');

  // no default any more: direct
  assert.equal((await w.api.patch(`/api/proxies/${second.id}`, { is_default: false })).status, 200);
  before = proxy.connects.length;
  assert.equal((await w.api.post(`/api/model-provider-credentials/${cred.id}/test`)).status, 200);
  assert.equal(proxy.connects.length, before);
});

test('members read proxies but cannot change them (proxies:write, proxies:delete)', async () => {
  const p = await aProxy();
  const reader = await w.freshApi(['proxies:read']);
  assert.equal((await reader.get(`/api/proxies/${p.id}`)).status, 200);
  assert.equal((await reader.patch(`/api/proxies/${p.id}`, { name: 'x' })).status, 403);
  assert.equal((await reader.delete(`/api/proxies/${p.id}`)).status, 403);
  assert.equal((await reader.post(`/api/proxies/${p.id}/test`, { target_url: `${w.model.url}/models` })).status, 403);
});
