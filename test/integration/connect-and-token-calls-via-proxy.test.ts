// The organization's default proxy carries its connect logins and OAuth token calls too: a
// connect/fields login, the code exchange at the connect callback, and a refresh (at a run's boot
// near expiry, through the runner routes, on the credential proxy's way) each reach the
// vendor through a loopback CONNECT proxy, which the vendor sees as its peer. Without a default
// proxy they go direct; a login target the egress guard refuses never reaches the proxy; a proxy
// refusing its credentials answers 502 upstream_unreachable (never a 500) and the vendor hears
// nothing.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { OAuth2Server } from 'oauth2-mock-server';
import type { SandboxSpec } from '../../activities/sandbox/adapter.ts';
import { runConnectionSigningPayload } from '../../lib/run-connection-signing.ts';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import { startConnectProxy, type ConnectProxy } from '../support/connect-proxy.ts';
import { call } from '../support/http.ts';
import { namedPort } from '../support/platform-process.ts';
import { anAgent, anIntegration, anIntegrationWorld, type IntegrationWorld } from './integrations-harness.ts';

const USER = 'org-proxy';
const PASSWORD = 'org-proxy-pass-0123456789';
const basic = (password: string) => `Basic ${Buffer.from(`${USER}:${password}`).toString('base64')}`;

let world: IntegrationWorld;
let api: IntegrationWorld['api'];
let proxy: ConnectProxy;
let proxyId: string;
const oauth = new OAuth2Server();
let issuerPort: number;
/** the token endpoint's calls: the grant and the port of the peer that sent it */
const tokenCalls: Array<{ grant: string; peer: number }> = [];
let vendor: Server;
let vendorPort: number;
/** the vendor's requests: the path and the port of the peer that sent it */
const vendorSeen: Array<{ path: string; peer: number }> = [];
let refusedPort: number;
let connectionId: string | undefined;
let agent: string;

function loginAuth(base: string) {
  return {
    type: 'custom',
    credentials: { schema: { type: 'object', properties: { username: { type: 'string' }, password: { type: 'string' } }, required: ['username', 'password'] } },
    connect: { login: {
      request: { method: 'POST', url: `${base}/login`, content_type: 'application/x-www-form-urlencoded', body: 'username={{username}}&password={{password}}' },
      success_criteria: [{ condition: 'status == 200' }],
      outputs: { session: { from: 'cookie', name: 'session' } },
    } },
    authorized_uris: [`${base}/*`],
    delivery: { http: { in: 'header', name: 'Cookie', prefix: 'session=', value: '{$credential.session}' } },
  };
}

before(async () => {
  proxy = await startConnectProxy({ credentials: { username: USER, password: PASSWORD } });
  await oauth.issuer.keys.generate('RS256');
  await oauth.start(0, '127.0.0.1');
  oauth.service.on('beforeResponse', (response: { body: Record<string, unknown> }, req: { body: Record<string, string>; socket: { remotePort?: number } }) => {
    tokenCalls.push({ grant: req.body.grant_type, peer: req.socket.remotePort ?? 0 });
    response.body.scope = 'read';
    // tokens minted within the same second are identical JWTs: each refreshed one is told apart
    if (req.body.grant_type === 'refresh_token') response.body.access_token = `refreshed-${tokenCalls.length}`;
  });
  const issuer = new URL(oauth.issuer.url!);
  issuerPort = Number(issuer.port);
  vendor = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      vendorSeen.push({ path: req.url ?? '', peer: req.socket.remotePort ?? 0 });
      res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'session=sess-ada-42; Path=/' }).end('{"user":"ada"}');
    });
  });
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve));
  vendorPort = (vendor.address() as AddressInfo).port;
  const vendorUrl = `http://127.0.0.1:${vendorPort}`;
  refusedPort = await namedPort();

  world = await anIntegrationWorld([issuer.host, `127.0.0.1:${vendorPort}`, new URL(proxy.url).host]);
  api = world.api;
  await anIntegration(world, '@acme/portal', { source: { kind: 'none' }, default_tools: ['api_call'], auths: { login: loginAuth(vendorUrl) } });
  // named literally, but the operator did not allow its port: the guard refuses it
  await anIntegration(world, '@acme/internal', { source: { kind: 'none' }, auths: { login: loginAuth(`http://127.0.0.1:${refusedPort}`) } });
  await anIntegration(world, '@acme/calendar', {
    source: { kind: 'none' }, default_tools: ['api_call'],
    auths: { oauth: {
      type: 'oauth2',
      oauth2: { authorization_url: `${issuer.origin}/authorize`, token_url: `${issuer.origin}/token`, scopes: ['read'] },
      authorized_uris: [`${vendorUrl}/api/*`],
      delivery: { http: { in: 'header', name: 'Authorization', prefix: 'Bearer ', value: '{$credential.access_token}' } },
    } },
  });
  const set = await api.put('/api/integrations/@acme/calendar/settings', { oauth_client: { auth_key: 'oauth', client_id: 'platform-client', client_secret: 'client-secret-1' } });
  assert.equal(set.status, 200, set.text);
  agent = await anAgent(world, '@acme/scheduler', { '@acme/calendar': ['api_call'] });
});

after(async () => {
  await world.close();
  await oauth.stop();
  await proxy.close();
  vendor.closeAllConnections();
  await new Promise<void>((resolve) => vendor.close(() => resolve()));
});

const login = (integration = '@acme/portal') =>
  api.post(`/api/integrations/${integration}/auths/login/connect/fields`, { credentials: { username: 'ada', password: 'p4ss-word' } });

/** The OAuth connect flow through a link, consent and the callback (a reconnect once connected); answers the callback. */
async function connectOAuth(): Promise<Response> {
  const link = await api.post('/api/integrations/@acme/calendar/auths/oauth/connect/session', connectionId ? { connection_id: connectionId } : {});
  assert.equal(link.status, 200, link.text);
  const start = await fetch(world.onApp(link.body.connect_url), { redirect: 'manual' });
  const consent = await fetch(new URL(start.headers.get('location')!), { redirect: 'manual' });
  const callback = new URL(consent.headers.get('location')!);
  return fetch(`${world.app.url}${callback.pathname}${callback.search}`);
}

async function expireSoon(): Promise<void> {
  await world.app.deps.database.pool.query(`UPDATE integration_connections SET token_expires_at = now() + interval '1 minute' WHERE id = $1`, [connectionId]);
}

/** A new run of the scheduler, refreshed at its boot (the sandbox is only recorded). */
async function bootARun(): Promise<SandboxSpec> {
  const run = await api.post(`/api/agents/${agent}/run`, { input: {} });
  assert.equal(run.status, 201, run.text);
  return world.bootAssignment(run.body.id);
}

/** A runner route for the connection (the refresh, or the read that refreshes near expiry), signed by a new run as its sidecar signs it. */
async function runner(action: 'refresh' | 'read' = 'refresh') {
  assert.ok(connectionId);
  const run = await api.post(`/api/agents/${agent}/run`, { input: {} });
  assert.equal(run.status, 201, run.text);
  const { rows } = await world.app.deps.database.pool.query('SELECT event_secret FROM runs WHERE id = $1', [run.body.id]);
  const headers = signedRunEventHeaders(world.app.deps.secrets.open(rows[0].event_secret), runConnectionSigningPayload(action, connectionId, '@acme/calendar'));
  const path = `/internal/runs/${run.body.id}/connections/${connectionId}${action === 'refresh' ? '/refresh' : ''}?integration=${encodeURIComponent('@acme/calendar')}`;
  return call(world.app.url, action === 'refresh' ? 'POST' : 'GET', path, { headers, rawBody: action === 'refresh' ? '' : undefined });
}

/** Asserts that the peer the vendor (on `port`) saw is the proxy's tunnel there, opened with the proxy's credentials. */
function cameThroughProxy(port: number, peer: number | undefined): void {
  const tunnel = proxy.connects.find((c) => c.authority === `127.0.0.1:${port}` && c.tunnelPort === peer);
  assert.ok(tunnel, `the request from port ${peer} came through a tunnel of the proxy to 127.0.0.1:${port}`);
  assert.equal(tunnel.authorization, basic(PASSWORD));
}

const lastToken = (grant: string) => tokenCalls.filter((c) => c.grant === grant).at(-1);

test('without a default proxy the login, the code exchange and a refresh go direct', async () => {
  const connected = await login();
  assert.equal(connected.status, 201, connected.text);
  const done = await connectOAuth();
  assert.equal(done.status, 200, await done.text());
  connectionId = (await api.get('/api/connections')).body.data.find((c: { integration_package_id: string }) => c.integration_package_id === '@acme/calendar').id;
  const refreshed = await runner();
  assert.equal(refreshed.status, 200, refreshed.text);
  assert.deepEqual(tokenCalls.map((c) => c.grant), ['authorization_code', 'refresh_token']);
  assert.equal(vendorSeen.at(-1)?.path, '/login');
  assert.equal(proxy.connects.length, 0, 'the proxy heard of none of them');
});

test('with a default proxy, a connect/fields login reaches the vendor through it; a target the guard refuses never reaches it', async () => {
  const created = await api.post('/api/proxies', { name: 'Office', url: proxy.url, username: USER, password: PASSWORD, is_default: true });
  assert.equal(created.status, 201, created.text);
  proxyId = created.body.id;

  const connected = await login();
  assert.equal(connected.status, 201, connected.text);
  assert.equal(vendorSeen.at(-1)?.path, '/login');
  cameThroughProxy(vendorPort, vendorSeen.at(-1)?.peer);

  const asked = proxy.connects.length;
  const refused = await login('@acme/internal');
  assert.equal(refused.status, 403, refused.text);
  assert.equal(refused.body.code, 'blocked_target');
  assert.equal(proxy.connects.length, asked, 'the proxy never heard of it');
});

test('the code exchange at the connect callback goes through the proxy', async () => {
  const done = await connectOAuth();
  assert.equal(done.status, 200, await done.text());
  assert.equal(tokenCalls.at(-1)?.grant, 'authorization_code');
  cameThroughProxy(issuerPort, tokenCalls.at(-1)?.peer);
});

test('a refresh goes through the proxy: at a run\'s boot near expiry, through the runner routes, on the credential proxy\'s way', async () => {
  await expireSoon();
  const spec = await bootARun();
  assert.match(spec.sidecar.integrations![0].credentials.access_token, /^refreshed-/);
  cameThroughProxy(issuerPort, lastToken('refresh_token')?.peer);

  const refreshes = tokenCalls.length;
  const refreshed = await runner();
  assert.equal(refreshed.status, 200, refreshed.text);
  assert.equal(tokenCalls.length, refreshes + 1);
  cameThroughProxy(issuerPort, lastToken('refresh_token')?.peer);

  await expireSoon();
  const read = await runner('read');
  assert.equal(read.status, 200, read.text);
  assert.equal(tokenCalls.length, refreshes + 2);
  cameThroughProxy(issuerPort, lastToken('refresh_token')?.peer);

  await expireSoon();
  const proxied = await api.get('/api/credential-proxy/proxy', {
    headers: { 'x-integration-id': '@acme/calendar', 'x-target': `http://127.0.0.1:${vendorPort}/api/events`, 'x-session-id': randomUUID() },
  });
  assert.equal(proxied.status, 200, proxied.text);
  assert.equal(tokenCalls.length, refreshes + 3);
  cameThroughProxy(issuerPort, lastToken('refresh_token')?.peer);
  cameThroughProxy(vendorPort, vendorSeen.at(-1)?.peer);
});

test('a proxy refusing its credentials fails the login, the exchange and a refresh with 502 upstream_unreachable; the vendor hears nothing', async () => {
  assert.equal((await api.patch(`/api/proxies/${proxyId}`, { username: USER, password: 'wrong-password-000' })).status, 200);
  const [seen, tokens] = [vendorSeen.length, tokenCalls.length];

  const connected = await login();
  assert.equal(connected.status, 502, connected.text);
  assert.equal(connected.body.code, 'upstream_unreachable');
  assert.equal(connected.body.proxy_status, 407);
  assert.equal(proxy.connects.at(-1)?.authorization, basic('wrong-password-000'));

  const done = await connectOAuth();
  const text = await done.text();
  assert.equal(done.status, 502, text);
  assert.equal(JSON.parse(text).code, 'upstream_unreachable');

  const refreshed = await runner();
  assert.equal(refreshed.status, 502, refreshed.text);
  assert.equal(refreshed.body.code, 'upstream_unreachable');

  await expireSoon();
  await assert.rejects(bootARun(), (err: { code?: string }) => err.code === 'upstream_unreachable');
  assert.deepEqual([vendorSeen.length, tokenCalls.length], [seen, tokens]);
  assert.equal((await api.patch(`/api/proxies/${proxyId}`, { username: USER, password: PASSWORD })).status, 200);
});

test('once the proxy is no longer the default, the login and the token calls go direct again', async () => {
  assert.equal((await api.patch(`/api/proxies/${proxyId}`, { is_default: false })).status, 200);
  const asked = proxy.connects.length;
  assert.equal((await login()).status, 201);
  const done = await connectOAuth();
  assert.equal(done.status, 200, await done.text());
  assert.equal((await runner()).status, 200);
  assert.equal(proxy.connects.length, asked);
});
