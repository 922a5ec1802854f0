// Dynamic client registration (RFC 7591) at POST /api/auth/oauth2/register: no session, public
// instance-level clients only, hostile metadata refused with RFC 7591 error bodies (never a
// problem document), and a per-IP limit answering 429 with Retry-After and an RFC 6749 body.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { findOAuthClient } from '../../api/services/oauth-clients/store.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { call } from '../support/http.ts';

let app: TestApp;
let ipSeq = 0;
before(async () => {
  // X-Forwarded-For (trusted from loopback here) gives each test its own client address
  app = await startTestApp({ env: { OAUTH_REGISTRATIONS_PER_MINUTE: '3', TRUST_PROXY: 'loopback' } });
});
after(() => app.close());

const freshIp = () => `203.0.113.${++ipSeq}`;
const register = (body: unknown, ip: string, headers: Record<string, string> = {}) =>
  call(app.url, 'POST', '/api/auth/oauth2/register', typeof body === 'string'
    ? { rawBody: body, headers: { 'content-type': 'application/json', 'x-forwarded-for': ip, ...headers } }
    : { body, headers: { 'x-forwarded-for': ip, ...headers } });

test('registers a public instance client and answers its metadata; the provider finds it', async () => {
  const res = await register({
    client_name: 'Claude Code', redirect_uris: ['http://127.0.0.1:33418/callback', 'https://app.example.test/cb'],
    grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none',
    scope: 'openid offline_access mcp:read mcp:invoke', client_uri: 'https://app.example.test/', unknown_member: 'ignored',
  }, freshIp());
  assert.equal(res.status, 201, res.text);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.match(res.body.client_id, /^oac_/);
  assert.ok(Math.abs(res.body.client_id_issued_at - Date.now() / 1000) < 60);
  assert.equal(res.body.token_endpoint_auth_method, 'none');
  assert.equal(res.body.scope, 'openid offline_access mcp:read mcp:invoke');
  assert.equal('client_secret' in res.body, false);
  assert.equal('unknown_member' in res.body, false);
  assert.equal(res.body.client_uri, 'https://app.example.test/');
  const found = await findOAuthClient({ pool: app.deps.database.pool, secrets: app.deps.secrets }, res.body.client_id);
  assert.equal(found?.level, 'instance');
  assert.equal(found?.registration, 'dynamic');
  assert.equal(found?.orgId, null);
  assert.equal(found?.clientSecret, null);
  assert.deepEqual(found?.redirectUris, ['http://127.0.0.1:33418/callback', 'https://app.example.test/cb']);
  assert.deepEqual(found?.grantTypes, ['authorization_code', 'refresh_token']);
});

test('a device-flow client needs no redirect URI; no scope means the default set', async () => {
  const res = await register({ client_name: 'CLI', grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'] }, freshIp());
  assert.equal(res.status, 201, res.text);
  assert.deepEqual(res.body.redirect_uris, []);
  assert.ok(res.body.scope.split(' ').includes('openid'));
});

test('hostile metadata is refused with invalid_redirect_uri or invalid_client_metadata', async () => {
  const cases: Array<[unknown, string]> = [
    [{ redirect_uris: ['http://evil.example.test/cb'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['https://app.example.test/cb#frag'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['file:///etc/passwd'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: 'https://app.example.test/cb' }, 'invalid_redirect_uri'],
    [{ redirect_uris: Array.from({ length: 11 }, (_, i) => `https://app.example.test/${i}`) }, 'invalid_redirect_uri'],
    [{ redirect_uris: [`https://app.example.test/${'a'.repeat(2100)}`] }, 'invalid_redirect_uri'],
    [{}, 'invalid_redirect_uri'],
    [{ redirect_uris: ['https://app.example.test/cb'], token_endpoint_auth_method: 'client_secret_basic' }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://app.example.test/cb'], client_secret: 'chosen' }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://app.example.test/cb'], grant_types: ['password'] }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://app.example.test/cb'], grant_types: ['client_credentials'] }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://app.example.test/cb'], response_types: ['token'] }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://app.example.test/cb'], scope: 'openid admin:everything' }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://app.example.test/cb'], scope: 'x '.repeat(3000) }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://app.example.test/cb'], client_name: 'x'.repeat(201) }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://app.example.test/cb'], client_name: 'a\u0000b' }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://app.example.test/cb'], logo_uri: 'http://app.example.test/logo.png' }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://app.example.test/cb'], post_logout_redirect_uris: ['ftp://x.example.test/'] }, 'invalid_client_metadata'],
    [Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`m${i}`, i])), 'invalid_client_metadata'],
    [['not', 'an', 'object'], 'invalid_client_metadata'],
    ['{"redirect_uris": [', 'invalid_client_metadata'],
    [JSON.stringify({ redirect_uris: ['https://app.example.test/cb'], client_name: 'x'.repeat(20_000) }), 'invalid_client_metadata'],
  ];
  for (const [body, error] of cases) {
    const res = await register(body, freshIp());
    const shown = JSON.stringify(body).slice(0, 80);
    assert.equal(res.status, 400, `${shown}: ${res.text.slice(0, 200)}`);
    assert.equal(res.body.error, error, `${shown}: ${res.text.slice(0, 200)}`);
    assert.equal(typeof res.body.error_description, 'string');
    assert.equal(res.body.type, undefined, 'not a problem document');
  }
  const { rows } = await app.deps.database.pool.query("SELECT count(*)::int AS n FROM oauth_clients WHERE registration = 'dynamic'");
  assert.equal(rows[0].n, 2, 'nothing refused was stored');
});

test('past the per-IP limit: 429, Retry-After and an RFC 6749 body; another address is not affected', async () => {
  const ip = freshIp();
  const body = { redirect_uris: ['https://app.example.test/cb'] };
  for (let i = 0; i < 3; i++) {
    const ok = await register(body, ip);
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.headers.get('ratelimit-policy'), '3;w=60');
  }
  const refused = await register(body, ip);
  assert.equal(refused.status, 429);
  assert.match(refused.headers.get('content-type') ?? '', /^application\/json/);
  const retry = Number(refused.headers.get('retry-after'));
  assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 60, `Retry-After ${retry}`);
  assert.equal(refused.body.error, 'temporarily_unavailable');
  assert.equal(typeof refused.body.error_description, 'string');
  assert.deepEqual(Object.keys(refused.body).sort(), ['error', 'error_description']);
  assert.equal((await register(body, freshIp())).status, 201);
});

test('no session is needed, and a session or key changes nothing', async () => {
  const res = await register({ redirect_uris: ['https://app.example.test/cb'] }, freshIp(), { cookie: 'agent_platform.session_token=nonsense', authorization: 'Bearer nonsense' });
  assert.equal(res.status, 201, res.text);
});
