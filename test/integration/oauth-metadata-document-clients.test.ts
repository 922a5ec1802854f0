// Client ID metadata documents: a client_id that is an https URL names the JSON document served
// there. findOAuthClient (what the provider calls) fetches it through the egress guard, trusts it
// only when it names itself and describes a public client, caches it as an instance-level row and
// fetches it again after the TTL. The document server here is plain http on 127.0.0.1, allowed
// only because EGRESS_ALLOW_INTERNAL_HOSTS names its host:port (production client ids are https).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { clientIdUrl, resolveUrlClient, UrlClientRefusal } from '../../api/services/oauth-clients/metadata-document.ts';
import { findOAuthClient } from '../../api/services/oauth-clients/store.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

type Served = { status?: number; type?: string; body: string; delayMs?: number; location?: string };
const documents = new Map<string, Served>();
const hits = new Map<string, number>();
let strayHits = 0;
let server: http.Server;
let stray: http.Server;
let base: string;
let strayBase: string;
let app: TestApp;

async function listen(handler: http.RequestListener): Promise<{ server: http.Server; base: string }> {
  const s = http.createServer(handler);
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return { server: s, base: `http://127.0.0.1:${(s.address() as AddressInfo).port}` };
}

before(async () => {
  ({ server, base } = await listen((req, res) => {
    hits.set(req.url!, (hits.get(req.url!) ?? 0) + 1);
    const doc = documents.get(req.url!);
    if (!doc) {
      res.writeHead(404).end();
      return;
    }
    const send = () => {
      res.writeHead(doc.status ?? 200, { 'content-type': doc.type ?? 'application/json', ...(doc.location ? { location: doc.location } : {}) });
      res.end(doc.body);
    };
    if (doc.delayMs) setTimeout(send, doc.delayMs);
    else send();
  }));
  ({ server: stray, base: strayBase } = await listen((_req, res) => {
    strayHits++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  }));
  app = await startTestApp({ env: { EGRESS_ALLOW_INTERNAL_HOSTS: base.replace('http://', '') } });
});
after(async () => {
  await app.close();
  server.closeAllConnections();
  stray.closeAllConnections();
  await Promise.all([new Promise((r) => server.close(r)), new Promise((r) => stray.close(r))]);
});

const deps = () => ({ pool: app.deps.database.pool, secrets: app.deps.secrets });
const serve = (path: string, doc: Record<string, unknown> | string, over: Partial<Served> = {}) =>
  documents.set(path, { body: typeof doc === 'string' ? doc : JSON.stringify(doc), ...over });
const metadataFor = (path: string, over: Record<string, unknown> = {}) => ({
  client_id: `${base}${path}`, client_name: 'Editor Plugin', redirect_uris: ['http://127.0.0.1:6274/callback'],
  grant_types: ['authorization_code', 'refresh_token'], token_endpoint_auth_method: 'none', ...over,
});
async function rowOf(id: string) {
  return (await app.deps.database.pool.query('SELECT * FROM oauth_clients WHERE id = $1', [id])).rows[0];
}

test('a document naming itself becomes an instance client, cached until the TTL, then fetched again', async () => {
  const path = '/clients/editor.json';
  const id = `${base}${path}`;
  serve(path, metadataFor(path, { scope: 'openid mcp:read mcp:invoke', logo_uri: 'https://editor.example.test/logo.png' }));
  const first = await findOAuthClient(deps(), id);
  assert.ok(first);
  assert.equal(first.clientId, id);
  assert.equal(first.level, 'instance');
  assert.equal(first.registration, 'metadata_document');
  assert.equal(first.tokenEndpointAuthMethod, 'none');
  assert.equal(first.clientSecret, null);
  assert.equal(first.name, 'Editor Plugin');
  assert.deepEqual(first.redirectUris, ['http://127.0.0.1:6274/callback']);
  assert.deepEqual(first.scopes, ['openid', 'mcp:read', 'mcp:invoke']);
  assert.deepEqual(first.metadata, { logo_uri: 'https://editor.example.test/logo.png' });
  assert.equal(hits.get(path), 1);

  const again = await findOAuthClient(deps(), id);
  assert.equal(again?.clientId, id);
  assert.equal(hits.get(path), 1, 'served from the cache while fresh');

  serve(path, metadataFor(path, { redirect_uris: ['https://editor.example.test/cb'] }));
  await app.deps.database.pool.query("UPDATE oauth_clients SET updated_at = now() - interval '2 hours' WHERE id = $1", [id]);
  const refreshed = await findOAuthClient(deps(), id);
  assert.equal(hits.get(path), 2, 'fetched again once stale');
  assert.deepEqual(refreshed?.redirectUris, ['https://editor.example.test/cb']);

  documents.delete(path);
  await app.deps.database.pool.query("UPDATE oauth_clients SET updated_at = now() - interval '2 hours' WHERE id = $1", [id]);
  assert.equal(await findOAuthClient(deps(), id), null, 'a withdrawn document is not served from a stale copy');
  assert.equal(await rowOf(id), undefined);
});

test('refused documents leave the client unknown and store nothing', async () => {
  const cases: Array<[string, Record<string, unknown> | string, Partial<Served>?]> = [
    ['/other-id.json', { ...metadataFor('/other-id.json'), client_id: `${base}/someone-else.json` }],
    ['/no-id.json', { ...metadataFor('/no-id.json'), client_id: undefined }],
    ['/secret.json', metadataFor('/secret.json', { token_endpoint_auth_method: 'client_secret_basic' })],
    ['/with-secret.json', metadataFor('/with-secret.json', { client_secret: 'shared' })],
    ['/bad-redirect.json', metadataFor('/bad-redirect.json', { redirect_uris: ['http://evil.example.test/cb'] })],
    ['/bad-scope.json', metadataFor('/bad-scope.json', { scope: 'openid root:all' })],
    ['/huge.json', metadataFor('/huge.json', { client_name: 'x'.repeat(100), padding: 'y'.repeat(6000) })],
    ['/not-json.json', '<html>hello</html>', { type: 'text/html' }],
    ['/broken.json', '{"client_id": ', {}],
    ['/server-error.json', metadataFor('/server-error.json'), { status: 500 }],
    ['/moved.json', metadataFor('/moved.json'), { status: 302, location: '/clients/editor.json' }],
  ];
  for (const [path, doc, over] of cases) {
    serve(path, doc, over ?? {});
    assert.equal(await findOAuthClient(deps(), `${base}${path}`), null, path);
    assert.equal(await rowOf(`${base}${path}`), undefined, path);
    assert.equal(hits.get(path), 1, `${path} was fetched once`);
  }
});

test('a slow document server is given up on at the time limit', async () => {
  const path = '/slow.json';
  serve(path, metadataFor(path), { delayMs: 1500 });
  const started = Date.now();
  const opts = { egress: { allowInternalHosts: [base.replace('http://', '')] }, ttlSeconds: 60, timeoutMs: 300 };
  assert.equal(await resolveUrlClient({ ...deps(), urlClients: opts }, `${base}${path}`), null);
  assert.ok(Date.now() - started < 1400, `gave up after ${Date.now() - started} ms`);
});

test('the egress guard: a loopback port not allowlisted is never contacted', async () => {
  assert.equal(await findOAuthClient(deps(), `${strayBase}/client.json`), null);
  assert.equal(strayHits, 0);
});

test('client_id URL rules: https with a path, canonical, no fragment, user info or dot segments', () => {
  const egress = { allowInternalHosts: [base.replace('http://', '')] };
  for (const bad of [
    'https://app.example.test', 'https://app.example.test/', 'https://app.example.test/c#x', 'https://u:p@app.example.test/c',
    'https://app.example.test/a/../c', 'https://app.example.test/a/%2e%2e/c', 'https://APP.example.test/c', 'http://app.example.test/c',
    'http://127.0.0.1:1/c', 'ftp://app.example.test/c', `https://app.example.test/${'a'.repeat(2100)}`,
  ]) {
    assert.throws(() => clientIdUrl(bad, egress), UrlClientRefusal, bad);
  }
  assert.equal(clientIdUrl('https://app.example.test/oauth/client.json', egress).hostname, 'app.example.test');
  assert.equal(clientIdUrl(`${base}/c.json`, egress).pathname, '/c.json');
});
