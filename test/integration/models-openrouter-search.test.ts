// GET /api/models/openrouter over HTTP against a stand-in catalog at OPENROUTER_BASE_URL on
// loopback: its failures (network_error, provider_error, timeout), the search through the
// organization's default proxy, the filter, and its limit of 10 calls a minute.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { startTestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { startConnectProxy } from '../support/connect-proxy.ts';
import { client } from '../support/http.ts';
import { namedPort } from '../support/platform-process.ts';

const catalogPort = await namedPort();
const proxyPort = await namedPort();
let mode: 'error' | 'hang' | 'ok' = 'error';
let served = 0;
const CATALOG = {
  data: [
    { id: 'acme/writer-large', name: 'Acme: Writer Large', context_length: 128000 },
    { id: 'acme/writer-small', name: 'Acme: Writer Small', context_length: 32000 },
    { id: 'other/coder', name: 'Other Coder', context_length: 64000 },
  ],
};
const catalog: Server = createServer((req, res) => {
  served++;
  if (mode === 'hang') return; // never answers: the platform's deadline ends the call
  if (mode === 'error' || req.url !== '/api/v1/models') {
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'catalog is down' } }));
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(CATALOG));
});
const proxy = await startConnectProxy({ port: proxyPort, credentials: { username: 'u', password: 'right' } });

const app = await startTestApp({
  env: {
    OPENROUTER_BASE_URL: `http://127.0.0.1:${catalogPort}/api/v1`,
    OPENROUTER_TIMEOUT_MS: '400',
    EGRESS_ALLOW_INTERNAL_HOSTS: `127.0.0.1:${catalogPort},127.0.0.1:${proxyPort}`,
  },
});
const pool = app.deps.database.pool;
const org = await anOrg(pool);
const freshApi = async () => client(app.url, { key: (await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId })).key });
const api = await freshApi();
after(async () => {
  catalog.closeAllConnections();
  await new Promise<void>((r) => catalog.close(() => r()));
  await proxy.close();
  await app.close();
});

test('a catalog that cannot be reached is 502 network_error', async () => {
  const res = await api.get('/api/models/openrouter');
  assert.equal(res.status, 502);
  assert.equal(res.body.code, 'network_error');
});

test('a catalog that answers an error is 502 provider_error with its status', async () => {
  await new Promise<void>((r) => catalog.listen(catalogPort, '127.0.0.1', () => r()));
  const res = await api.get('/api/models/openrouter');
  assert.equal(res.status, 502);
  assert.equal(res.body.code, 'provider_error');
  assert.equal(res.body.provider_status, 500);
});

test('a catalog that does not answer within OPENROUTER_TIMEOUT_MS is 504 timeout', async () => {
  mode = 'hang';
  const started = Date.now();
  const res = await api.get('/api/models/openrouter');
  assert.equal(res.status, 504);
  assert.equal(res.body.code, 'timeout');
  assert.ok(Date.now() - started < 5_000);
});

test('the search goes through the organization\'s default proxy, then filters by id or name and caps the count', async () => {
  mode = 'ok';
  const wrong = await api.post('/api/proxies', { name: 'Office', url: proxy.url, username: 'u', password: 'wrong', is_default: true });
  assert.equal(wrong.status, 201, wrong.text);
  const before = served;
  const refused = await api.get('/api/models/openrouter');
  assert.equal(refused.status, 502);
  assert.equal(refused.body.code, 'network_error');
  assert.equal(served, before, 'refused by the proxy: the catalog saw nothing');

  assert.equal((await api.patch(`/api/proxies/${wrong.body.id}`, { username: 'u', password: 'right' })).status, 200);
  const connects = proxy.connects.length;
  const all = await api.get('/api/models/openrouter');
  assert.equal(all.status, 200, all.text);
  assert.deepEqual(all.body.data.map((m: any) => m.id), ['acme/writer-large', 'acme/writer-small', 'other/coder']);
  assert.equal(proxy.connects.length, connects + 1);
  assert.equal(proxy.connects.at(-1)?.authority, `127.0.0.1:${catalogPort}`);

  const byName = await api.get('/api/models/openrouter?q=writer%20small');
  assert.deepEqual(byName.body.data.map((m: any) => m.id), ['acme/writer-small']);
  const capped = await api.get('/api/models/openrouter?q=acme&limit=1');
  assert.deepEqual(capped.body.data.map((m: any) => m.id), ['acme/writer-large']);
  const bad = await api.get('/api/models/openrouter?limit=abc');
  assert.equal(bad.status, 400);
});

test('the search allows 10 calls a minute per caller', async () => {
  const fresh = await freshApi();
  for (let i = 0; i < 10; i++) assert.equal((await fresh.get('/api/models/openrouter')).status, 200);
  const refused = await fresh.get('/api/models/openrouter');
  assert.equal(refused.status, 429);
  assert.equal(refused.body.code, 'rate_limited');
  assert.equal(refused.headers.get('ratelimit-policy'), '10;w=60');
});
