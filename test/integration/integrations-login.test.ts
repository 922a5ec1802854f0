// Connect by fields with connect.login against a loopback upstream that sets a session cookie:
// one request, placeholders filled as typed, no redirect followed, only outputs stored (never the
// password), refused login 500 internal_error, a login that does not complete 504 timeout,
// reconnect keeping the id, identity_mismatch; the connect link and its hosted form.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { purgeConnectSessions } from '../../api/services/integrations/connect.ts';
import { call } from '../support/http.ts';
import { anIntegration, anIntegrationWorld, type IntegrationWorld } from './integrations-harness.ts';

let world: IntegrationWorld;
let api: IntegrationWorld['api'];
let upstream: http.Server;
let base: string;
const seen: Array<{ path: string; body: string; cookie?: string }> = [];

const LOGIN_SCHEMA = { type: 'object', properties: { username: { type: 'string' }, password: { type: 'string' }, otp: { type: 'string' } }, required: ['username', 'password'] };

function loginAuth(path: string, body = 'username={{username}}&password={{password}}') {
  return {
    type: 'custom',
    credentials: { schema: LOGIN_SCHEMA },
    connect: { login: {
      request: { method: 'POST', url: `${base}${path}`, content_type: 'application/x-www-form-urlencoded', body },
      success_criteria: [{ condition: 'status == 200' }],
      outputs: { session: { from: 'cookie', name: 'session' }, account_id: { from: 'body', path: 'user' } },
    } },
    authorized_uris: [`${base}/*`],
    delivery: { http: { in: 'header', name: 'Cookie', prefix: 'session=', value: '{$credential.session}' } },
  };
}

before(async () => {
  upstream = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ path: req.url ?? '', body, cookie: req.headers.cookie });
      if (req.url === '/slow') return; // never answers
      if (req.url === '/moved') {
        res.writeHead(302, { location: '/elsewhere', 'set-cookie': 'session=from-redirect' }).end();
        return;
      }
      const form = new URLSearchParams(body);
      const user = body.match(/^username=([^&]*)/)?.[1] ?? '';
      if (form.get('password') === null || !body.includes('password=p@ss w+rd')) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"bad credentials"}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': [`session=sess-${user}-42; Path=/; HttpOnly`, 'other=x'] })
        .end(JSON.stringify({ user }));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  world = await anIntegrationWorld([new URL(base).host]);
  api = world.api;
  await anIntegration(world, '@acme/portal', {
    source: { kind: 'none' }, default_tools: ['api_call'],
    auths: {
      login: loginAuth('/login'),
      otp: loginAuth('/login', 'username={{username}}&password={{password}}&otp={{otp}}'),
      moved: loginAuth('/moved'),
      slow: loginAuth('/slow'),
    },
  });
  await anIntegration(world, '@acme/elsewhere', {
    source: { kind: 'none' },
    auths: { login: { ...loginAuth('/login'), connect: { login: { ...loginAuth('/login').connect.login, request: { method: 'POST', url: 'http://127.0.0.1:9/login', body: 'u={{username}}' } } }, authorized_uris: ['http://127.0.0.1:9/*'] } },
  });
});
after(async () => {
  await world.close();
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
});

const fields = (auth: string) => `/api/integrations/@acme/portal/auths/${auth}/connect/fields`;
const PASSWORD = 'p@ss w+rd';

describe('connect by fields with a login', () => {
  let connectionId: string;

  test('one request with the fields as typed; only the outputs are stored, never the password', async () => {
    const res = await api.post(fields('login'), { credentials: { username: 'ada', password: PASSWORD } });
    assert.equal(res.status, 201, res.text);
    connectionId = res.body.id;
    assert.equal(res.body.account_id, 'ada');
    assert.equal(res.body.label, 'ada');
    const hit = seen.filter((s) => s.path === '/login').at(-1)!;
    assert.equal(hit.body, `username=ada&password=${PASSWORD}`, 'placeholders filled as typed, without URL-encoding');
    assert.equal(hit.cookie, undefined, 'no cookie jar');
    const { rows } = await world.app.deps.database.pool.query('SELECT credentials FROM integration_connections WHERE id = $1', [connectionId]);
    assert.ok(!rows[0].credentials.includes('sess-ada-42'));
    assert.deepEqual(JSON.parse(world.app.deps.secrets.open(rows[0].credentials)), { session: 'sess-ada-42', account_id: 'ada' });
  });

  test('reconnect with connection_id keeps the id; another account is 409 identity_mismatch', async () => {
    const again = await api.post(fields('login'), { credentials: { username: 'ada', password: PASSWORD }, connection_id: connectionId });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.id, connectionId);
    const other = await api.post(fields('login'), { credentials: { username: 'bob', password: PASSWORD }, connection_id: connectionId });
    assert.equal(other.status, 409);
    assert.equal(other.body.code, 'identity_mismatch');
  });

  test('a refused login is 500 internal_error and stores nothing; a redirect is not followed', async () => {
    const before = (await api.get('/api/connections')).body.data.length;
    const refused = await api.post(fields('login'), { credentials: { username: 'ada', password: 'wrong' } });
    assert.equal(refused.status, 500);
    assert.equal(refused.body.code, 'internal_error');
    assert.ok(!refused.text.includes('wrong'));
    const moved = await api.post(fields('moved'), { credentials: { username: 'ada', password: PASSWORD } });
    assert.equal(moved.status, 500);
    assert.equal(moved.body.code, 'internal_error');
    assert.ok(!seen.some((s) => s.path === '/elsewhere'), 'the redirect was not followed');
    assert.equal((await api.get('/api/connections')).body.data.length, before);
  });

  test('an unfilled {{field}} is 400 unresolved_placeholder; a login target outside the egress allowlist is 403 blocked_target', async () => {
    const missing = await api.post(fields('otp'), { credentials: { username: 'ada', password: PASSWORD } });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.code, 'unresolved_placeholder');
    const blocked = await api.post('/api/integrations/@acme/elsewhere/auths/login/connect/fields', { credentials: { username: 'ada', password: PASSWORD } });
    assert.equal(blocked.status, 403, blocked.text);
    assert.equal(blocked.body.code, 'blocked_target');
  });

  test('a login that does not complete is 504 timeout', async () => {
    const res = await api.post(fields('slow'), { credentials: { username: 'ada', password: PASSWORD } });
    assert.equal(res.status, 504);
    assert.equal(res.body.code, 'timeout');
  });
});

describe('connect link and hosted form', () => {
  test('connect/session answers a ten-minute link; its form is plain HTML under a CSP; submitting it connects once', async () => {
    const link = await api.post('/api/integrations/@acme/portal/auths/login/connect/session', {});
    assert.equal(link.status, 200, link.text);
    const expires = Date.parse(link.body.expiresAt) - Date.now();
    assert.ok(expires > 9 * 60_000 && expires <= 10 * 60_000);
    const url = new URL(link.body.connect_url);
    const token = url.searchParams.get('token')!;

    const page = await call(world.app.url, 'GET', `${url.pathname}${url.search}`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type')!, /^text\/html/);
    assert.match(page.headers.get('content-security-policy')!, /default-src 'none'/);
    assert.match(page.text, /<input id="f_username" name="username" type="text"/);
    assert.match(page.text, /name="password" type="password"/);
    assert.ok(!/\b(src|href)=/.test(page.text), 'no external assets');

    const form = new URLSearchParams({ token, username: 'carol', password: PASSWORD }).toString();
    const post = (body: string) => call(world.app.url, 'POST', '/api/integrations/connect/start', { rawBody: body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const wrong = await post(new URLSearchParams({ token, username: 'carol', password: 'nope' }).toString());
    assert.equal(wrong.status, 500, 'a refused login leaves the link usable');
    const done = await post(form);
    assert.equal(done.status, 200, done.text);
    assert.match(done.text, /Connected/);
    const mine = (await api.get('/api/connections')).body.data.find((c: any) => c.account_id === 'carol');
    assert.ok(mine, 'the connection belongs to the link\'s creator');
    assert.equal(mine.owned_by_actor, true);

    const reused = await post(form);
    assert.equal(reused.status, 410);
    assert.equal(reused.body.code, 'connect_link_invalid');
    assert.equal((await call(world.app.url, 'GET', `${url.pathname}${url.search}`)).status, 410);
    assert.equal((await call(world.app.url, 'GET', '/api/integrations/connect/start?token=nope')).body.code, 'connect_link_invalid');
  });
});

test('links expired a day ago or more are swept', async () => {
  const pool = world.app.deps.database.pool;
  const link = await api.post('/api/integrations/@acme/portal/auths/login/connect/session', {});
  const fresh = await api.post('/api/integrations/@acme/portal/auths/login/connect/session', {});
  const token = new URL(link.body.connect_url).searchParams.get('token')!;
  const { sha256Hex } = await import('../../lib/crypto.ts');
  await pool.query(`UPDATE integration_connect_sessions SET expires_at = now() - interval '2 days' WHERE token_hash = $1`, [sha256Hex(token)]);
  assert.ok((await purgeConnectSessions(pool)) >= 1);
  const { rows } = await pool.query('SELECT token_hash FROM integration_connect_sessions WHERE token_hash = ANY($1)', [[sha256Hex(token), sha256Hex(new URL(fresh.body.connect_url).searchParams.get('token')!)]]);
  assert.equal(rows.length, 1, 'only the live link is left');
});
