// A run's sidecar reading its connections mid-run over the runner routes (signed with the run's
// secret): the current credential of a connection the run bound, a refresh of an OAuth access
// token against an independent authorization server on loopback (oauth2-mock-server), and a real
// sidecar that meets a 401, has the platform refresh the token once and retries once. Refused:
// connections the run did not bind to that integration (another run's, another tenant's, the same
// actor's unbound one) with 400 connection_not_in_run; credentials that cannot be refreshed (API
// key, login outputs, OAuth without a refresh token) with 409 connect_run_no_refresh; another
// run's secret with 401; a revoked refresh token with its 410s; an ended run with 409, an expired
// sink with 410.
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { OAuth2Server } from 'oauth2-mock-server';
import { runConnectionSigningPayload } from '../../lib/run-connection-signing.ts';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { call, client } from '../support/http.ts';
import { importPackage } from '../support/runs.ts';
import { anAgent, anIntegration, anIntegrationWorld, apiKeyAuth, archive, type IntegrationWorld } from './integrations-harness.ts';
import { aSidecarToken, bearer, sidecarUrlOf, spawnWarm } from './sidecar-run-harness.ts';

let world: IntegrationWorld;
let api: IntegrationWorld['api'];
const oauth = new OAuth2Server();
let revoked = false;
const tokenRequests: Array<Record<string, string>> = [];
/** every access token the authorization server issued, in order */
const issued: string[] = [];

/** A loopback API that accepts only the newest access token issued (and an API key), and a path that always answers 401. */
const seen: IncomingHttpHeaders[] = [];
const upstream = createServer((req, res) => {
  seen.push(req.headers);
  req.resume();
  const auth = req.headers.authorization;
  const ok = req.url !== '/api/always-401' && (auth === `Bearer ${issued.at(-1)}` || req.headers['x-api-key'] === 'crm-key-4f1c');
  res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' }).end(JSON.stringify(ok ? { events: 2, echoed: auth } : { error: 'invalid_token', echoed: auth }));
});
let upstreamUrl: string;

let calendarConnection: string;
let crmConnection: string;
let portalConnection: string;
let runA: { id: string; secret: string };
let runP: { id: string; secret: string };

function connectionPath(method: 'GET' | 'POST', runId: string, connectionId: string, integration: string): string {
  return `/internal/runs/${runId}/connections/${encodeURIComponent(connectionId)}${method === 'POST' ? '/refresh' : ''}?integration=${encodeURIComponent(integration)}`;
}

/** A runner request for `runId`, signed with `secret` as the sidecar signs it (action, connection, integration; no body). */
function runner(method: 'GET' | 'POST', runId: string, connectionId: string, integration: string, secret: string) {
  const payload = runConnectionSigningPayload(method === 'POST' ? 'refresh' : 'read', connectionId, integration);
  return call(world.app.url, method, connectionPath(method, runId, connectionId, integration), { headers: signedRunEventHeaders(secret, payload), rawBody: method === 'POST' ? '' : undefined });
}

function expectProblem(res: { status: number; headers: Headers; body: any; text: string }, status: number, code: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.code, code, res.text);
  assert.match(res.headers.get('content-type') ?? '', /problem\+json/);
}

const refreshes = () => tokenRequests.filter((r) => r.grant_type === 'refresh_token').length;

before(async () => {
  await oauth.issuer.keys.generate('RS256');
  await oauth.start(0, '127.0.0.1');
  oauth.service.on('beforeResponse', (response: { body: Record<string, unknown>; statusCode: number }, req: { body: Record<string, string> }) => {
    tokenRequests.push(req.body);
    if (req.body.grant_type === 'refresh_token' && revoked) {
      response.statusCode = 400;
      response.body = { error: 'invalid_grant', error_description: 'refresh token revoked' };
      return;
    }
    response.body.scope = 'read';
    // tokens minted within the same second are identical JWTs: each refreshed one is told apart
    if (req.body.grant_type === 'refresh_token') response.body.access_token = `refreshed-${tokenRequests.length}-${Math.random().toString(36).slice(2)}`;
    issued.push(String(response.body.access_token));
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  // a custom-fields login whose only stored credential is the session it answers
  const login = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ session: 'portal-session-93ab' }));
  });
  await new Promise<void>((resolve) => login.listen(0, '127.0.0.1', resolve));
  after(() => new Promise<void>((resolve) => { login.closeAllConnections(); login.close(() => resolve()); }));
  const loginUrl = `http://127.0.0.1:${(login.address() as AddressInfo).port}`;
  const issuer = new URL(oauth.issuer.url!);
  world = await anIntegrationWorld([issuer.host, new URL(upstreamUrl).host, new URL(loginUrl).host]);
  api = world.api;

  await anIntegration(world, '@acme/calendar', {
    source: { kind: 'none' }, default_tools: ['api_call'],
    auths: { oauth: {
      type: 'oauth2',
      oauth2: { authorization_url: `${issuer.origin}/authorize`, token_url: `${issuer.origin}/token`, scopes: ['read'] },
      authorized_uris: [`${upstreamUrl}/api/*`],
      delivery: { http: { in: 'header', name: 'Authorization', prefix: 'Bearer ', value: '{$credential.access_token}' } },
    } },
  });
  await anIntegration(world, '@acme/crm', apiKeyAuth(upstreamUrl));
  await anIntegration(world, '@acme/portal', {
    source: { kind: 'none' }, default_tools: ['api_call'],
    auths: { login: {
      type: 'custom',
      credentials: { schema: { type: 'object', properties: { username: { type: 'string' }, password: { type: 'string' } }, required: ['username', 'password'] } },
      connect: { login: {
        request: { method: 'POST', url: `${loginUrl}/login`, content_type: 'application/json', body: '{"u":"{{username}}","p":"{{password}}"}' },
        outputs: { session: { from: 'body', path: 'session' } },
      } },
      authorized_uris: [`${loginUrl}/*`],
      delivery: { http: { in: 'header', name: 'X-Session', value: '{$credential.session}' } },
    } },
  });

  const set = await api.put('/api/integrations/@acme/calendar/settings', { oauth_client: { auth_key: 'oauth', client_id: 'platform-client', client_secret: 'client-secret-1' } });
  assert.equal(set.status, 200, set.text);
  const link = await api.post('/api/integrations/@acme/calendar/auths/oauth/connect/session', {});
  const start = await fetch(world.onApp(link.body.connect_url), { redirect: 'manual' });
  const consent = await fetch(new URL(start.headers.get('location')!), { redirect: 'manual' });
  const callback = new URL(consent.headers.get('location')!);
  assert.equal((await fetch(`${world.app.url}${callback.pathname}${callback.search}`)).status, 200);
  calendarConnection = (await api.get('/api/connections')).body.data.find((c: { integration_package_id: string }) => c.integration_package_id === '@acme/calendar').id;
  const crm = await api.post('/api/integrations/@acme/crm/auths/key/connect/fields', { credentials: { api_key: 'crm-key-4f1c' } });
  assert.equal(crm.status, 201, crm.text);
  crmConnection = crm.body.id;
  const portal = await api.post('/api/integrations/@acme/portal/auths/login/connect/fields', { credentials: { username: 'ada', password: 'pw-never-stored' } });
  assert.equal(portal.status, 201, portal.text);
  portalConnection = portal.body.id;

  const planner = await anAgent(world, '@acme/planner', { '@acme/calendar': ['api_call'], '@acme/crm': ['api_call'] });
  const porter = await anAgent(world, '@acme/porter', { '@acme/portal': ['api_call'] });
  const a = await api.post(`/api/agents/${planner}/run`, { input: {} });
  assert.equal(a.status, 201, a.text);
  const p = await api.post(`/api/agents/${porter}/run`, { input: {} });
  assert.equal(p.status, 201, p.text);
  runA = { id: a.body.id, secret: await world.runSecret(a.body.id) };
  runP = { id: p.body.id, secret: await world.runSecret(p.body.id) };
});

after(async () => {
  await world.close();
  await oauth.stop();
  upstream.closeAllConnections();
  await new Promise<void>((resolve) => upstream.close(() => resolve()));
});

test("a run reads the current credential of a connection it bound, never a refresh token", async () => {
  const calendar = await runner('GET', runA.id, calendarConnection, '@acme/calendar', runA.secret);
  assert.equal(calendar.status, 200, calendar.text);
  assert.equal(calendar.headers.get('cache-control'), 'no-store');
  assert.equal(calendar.body.object, 'run_connection');
  assert.equal(calendar.body.connection_id, calendarConnection);
  assert.equal(calendar.body.integration_package_id, '@acme/calendar');
  assert.equal(calendar.body.auth_type, 'oauth2');
  assert.equal(calendar.body.credentials.access_token, issued.at(-1));
  assert.equal(calendar.body.credentials.refresh_token, undefined, 'the refresh token stays on the platform');
  assert.ok((await world.storedCredentials(calendarConnection)).refresh_token, 'the connection holds one');
  assert.match(calendar.body.expiresAt, /^\d{4}-\d\d-\d\dT/);

  const crm = await runner('GET', runA.id, crmConnection, '@acme/crm', runA.secret);
  assert.equal(crm.status, 200, crm.text);
  assert.deepEqual(crm.body.credentials, { api_key: 'crm-key-4f1c' });
  assert.equal(crm.body.expiresAt, null);
});

test('a connection the run did not bind to that integration is 400 connection_not_in_run', async () => {
  // another run's connection (run P bound the portal connection), over this run's secret
  expectProblem(await runner('GET', runA.id, portalConnection, '@acme/portal', runA.secret), 400, 'connection_not_in_run');
  expectProblem(await runner('POST', runA.id, portalConnection, '@acme/portal', runA.secret), 400, 'connection_not_in_run');
  // bound by this run, but to another integration
  expectProblem(await runner('GET', runA.id, crmConnection, '@acme/calendar', runA.secret), 400, 'connection_not_in_run');
  expectProblem(await runner('POST', runA.id, calendarConnection, '@acme/crm', runA.secret), 400, 'connection_not_in_run');
  // run P asking for run A's connection with its own secret
  expectProblem(await runner('GET', runP.id, calendarConnection, '@acme/calendar', runP.secret), 400, 'connection_not_in_run');
  // a real connection of the same actor to the same integration, made after the launch: not bound by this run
  const later = await api.post('/api/integrations/@acme/crm/auths/key/connect/fields', { credentials: { api_key: 'crm-key-second' } });
  assert.equal(later.status, 201, later.text);
  assert.notEqual(later.body.id, crmConnection);
  const unbound = await runner('GET', runA.id, later.body.id, '@acme/crm', runA.secret);
  expectProblem(unbound, 400, 'connection_not_in_run');
  assert.ok(!unbound.text.includes('crm-key-second'));
  // another tenant's connection
  const other = await anOrg(world.app.deps.database.pool, { name: 'Other' });
  const { key } = await aKey(world.app.deps.database.pool, { ...other, userId: other.ownerId });
  await importPackage(world.app.url, key, archive({ name: '@acme/crm', version: '1.0.0', type: 'integration', schema_version: '0.3', ...apiKeyAuth(upstreamUrl) }));
  const foreign = await client(world.app.url, { key }).post('/api/integrations/@acme/crm/auths/key/connect/fields', { credentials: { api_key: 'foreign-key-77' } });
  assert.equal(foreign.status, 201, foreign.text);
  const foreignRead = await runner('GET', runA.id, foreign.body.id, '@acme/crm', runA.secret);
  expectProblem(foreignRead, 400, 'connection_not_in_run');
  assert.ok(!foreignRead.text.includes('foreign-key-77'));
  // names that are no connection or no integration at all
  expectProblem(await runner('GET', runA.id, 'not-a-uuid', '@acme/crm', runA.secret), 400, 'connection_not_in_run');
  expectProblem(await runner('GET', runA.id, crmConnection, 'acme-crm', runA.secret), 400, 'connection_not_in_run');
  const huge = await runner('GET', runA.id, 'x'.repeat(5000), '@acme/crm', runA.secret);
  assert.equal(huge.status, 400, huge.text);
  // the integration is required
  const missing = await call(world.app.url, 'GET', `/internal/runs/${runA.id}/connections/${crmConnection}`, { headers: signedRunEventHeaders(runA.secret, runConnectionSigningPayload('read', crmConnection, '')) });
  expectProblem(missing, 400, 'invalid_request');
  assert.equal(missing.body.param, 'integration');
});

test("another run's secret is refused with 401, whichever connection it names", async () => {
  for (const method of ['GET', 'POST'] as const) {
    const res = await runner(method, runA.id, calendarConnection, '@acme/calendar', runP.secret);
    assert.equal(res.status, 401, res.text);
    assert.ok(!res.text.includes(issued.at(-1)!));
  }
  const unsigned = await call(world.app.url, 'GET', `/internal/runs/${runA.id}/connections/${calendarConnection}?integration=@acme/calendar`);
  assert.equal(unsigned.status, 401);
  // the run's own signature made for another request opens nothing: a history read (empty body),
  // a read used for a refresh, another connection's or another integration's request
  const reused = [
    ['GET', signedRunEventHeaders(runA.secret, '')],
    ['POST', signedRunEventHeaders(runA.secret, '')],
    ['POST', signedRunEventHeaders(runA.secret, runConnectionSigningPayload('read', calendarConnection, '@acme/calendar'))],
    ['GET', signedRunEventHeaders(runA.secret, runConnectionSigningPayload('read', crmConnection, '@acme/calendar'))],
    ['GET', signedRunEventHeaders(runA.secret, runConnectionSigningPayload('read', calendarConnection, '@acme/crm'))],
  ] as const;
  for (const [method, headers] of reused) {
    const res = await call(world.app.url, method, connectionPath(method, runA.id, calendarConnection, '@acme/calendar'), { headers, rawBody: method === 'POST' ? '' : undefined });
    assert.equal(res.status, 401, `${method}: ${res.text}`);
    assert.ok(!res.text.includes(issued.at(-1)!));
  }
});

test('a refresh renews an OAuth access token at once; other credentials are 409 connect_run_no_refresh', async () => {
  const before = refreshes();
  const held = issued.at(-1);
  const res = await runner('POST', runA.id, calendarConnection, '@acme/calendar', runA.secret);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers.get('cache-control'), 'no-store');
  assert.equal(refreshes(), before + 1, 'one refresh_token grant, although the token was far from expiry');
  assert.match(res.body.credentials.access_token, /^refreshed-/);
  assert.notEqual(res.body.credentials.access_token, held);
  assert.equal(res.body.credentials.refresh_token, undefined);
  assert.equal((await world.storedCredentials(calendarConnection)).access_token, res.body.credentials.access_token, 'sealed into the connection');
  const reread = await runner('GET', runA.id, calendarConnection, '@acme/calendar', runA.secret);
  assert.equal(reread.body.credentials.access_token, res.body.credentials.access_token);

  // an API key and a login's session cannot be refreshed
  const key = await runner('POST', runA.id, crmConnection, '@acme/crm', runA.secret);
  expectProblem(key, 409, 'connect_run_no_refresh');
  assert.ok(!key.text.includes('crm-key-4f1c'));
  const session = await runner('POST', runP.id, portalConnection, '@acme/portal', runP.secret);
  expectProblem(session, 409, 'connect_run_no_refresh');
  assert.ok(!session.text.includes('portal-session-93ab'));

  // an OAuth connection whose provider granted no refresh token
  const pool = world.app.deps.database.pool;
  const secrets = world.app.deps.secrets;
  const stored = await world.storedCredentials(calendarConnection);
  const { refresh_token: kept, ...withoutRefresh } = stored;
  await pool.query('UPDATE integration_connections SET credentials = $2 WHERE id = $1', [calendarConnection, secrets.seal(JSON.stringify(withoutRefresh))]);
  const none = await runner('POST', runA.id, calendarConnection, '@acme/calendar', runA.secret);
  expectProblem(none, 409, 'connect_run_no_refresh');
  assert.equal(refreshes(), before + 1, 'no grant was attempted');
  await pool.query('UPDATE integration_connections SET credentials = $2 WHERE id = $1', [calendarConnection, secrets.seal(JSON.stringify({ ...withoutRefresh, refresh_token: kept }))]);
});

test('a real sidecar meeting a 401 has the platform refresh the token once and retries once; the new token is never logged', async (t) => {
  const spec = await world.bootAssignment(runA.id);
  const calendar = spec.sidecar.integrations!.find((i) => i.packageId === '@acme/calendar')!;
  assert.equal(calendar.authType, 'oauth2');
  assert.equal(spec.sidecar.connectionsUrl, spec.sidecar.eventsUrl.replace(/\/events$/, '/connections'));
  const sidecar = await spawnWarm('sidecar/main.ts');
  const token = aSidecarToken();
  let mcp: Client | undefined;
  t.after(async () => {
    await mcp?.close();
    await sidecar.kill();
  });
  // the boot names the configured address; this app listens on a port of its own
  const onThisApp = (u: string | undefined) => u && `${world.app.url}${new URL(u).pathname}`;
  sidecar.assign({ ...spec.sidecar, token, eventsUrl: onThisApp(spec.sidecar.eventsUrl), connectionsUrl: onThisApp(spec.sidecar.connectionsUrl), historyUrl: undefined, memoryUrl: undefined, publishUrl: undefined });
  mcp = new Client({ name: 'agent', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${sidecarUrlOf(sidecar)}/mcp`), { requestInit: { headers: bearer(token) } }));
  const apiCall = async (path: string) => {
    const result = await mcp!.callTool({ name: 'acme_calendar__api_call', arguments: { method: 'GET', url: `${upstreamUrl}${path}` } });
    return { isError: result.isError === true, text: (result.content as Array<{ text: string }>).map((c) => c.text).join('') };
  };

  // the token the sidecar holds works: no refresh
  let grants = refreshes();
  let calls = seen.length;
  const fine = await apiCall('/api/events');
  assert.equal(fine.isError, false, fine.text);
  assert.equal(seen.length - calls, 1);
  assert.equal(refreshes(), grants);

  // the provider expires it mid-run (a newer one is issued elsewhere): 401, one refresh, one retry with the new token
  const stale = issued.at(-1)!;
  issued.push('issued-elsewhere');
  grants = refreshes();
  calls = seen.length;
  const renewed = await apiCall('/api/events');
  assert.equal(renewed.isError, false, renewed.text);
  assert.equal(JSON.parse(renewed.text).status, 200);
  assert.equal(refreshes(), grants + 1, 'one refresh');
  const attempts = seen.slice(calls);
  assert.equal(attempts.length, 2, 'the call and one retry');
  assert.equal(attempts[0].authorization, `Bearer ${stale}`);
  const fresh = issued.at(-1)!;
  assert.match(fresh, /^refreshed-/);
  assert.equal(attempts[1].authorization, `Bearer ${fresh}`);
  assert.ok(!renewed.text.includes(fresh) && !renewed.text.includes(stale), 'the echoed tokens are scrubbed');

  // three calls meeting the 401 together share one refresh; each is retried once with the new token
  issued.push('issued-elsewhere-too');
  grants = refreshes();
  calls = seen.length;
  const together = await Promise.all([apiCall('/api/events'), apiCall('/api/events'), apiCall('/api/events')]);
  for (const answer of together) assert.equal(JSON.parse(answer.text).status, 200, answer.text);
  assert.equal(refreshes(), grants + 1, 'one refresh for the three calls');
  assert.equal(seen.length - calls, 6, 'each call and its one retry');

  // an upstream that keeps answering 401: one refresh and one retry, never more
  grants = refreshes();
  calls = seen.length;
  const refused = await apiCall('/api/always-401');
  assert.equal(refused.isError, true);
  assert.equal(JSON.parse(refused.text).status, 401);
  assert.equal(refreshes(), grants + 1);
  assert.equal(seen.length - calls, 2);
  const newest = issued.at(-1)!;

  // the provider revokes the refresh token: the 401 comes back as is, with the platform's code; the connection is flagged
  revoked = true;
  t.after(() => { revoked = false; });
  issued.push('issued-elsewhere-again');
  calls = seen.length;
  const revokedCall = await apiCall('/api/events');
  assert.equal(revokedCall.isError, true);
  assert.equal(JSON.parse(revokedCall.text).credential_refresh, 'refused: OAUTH_REFRESH_REVOKED');
  assert.equal(seen.length - calls, 1, 'no retry without a new token');
  assert.equal((await api.get(`/api/connections/${calendarConnection}`)).body.needs_reconnection, true);

  // the run's log says what happened, and no token is in it or in the sidecar's output
  let logs = '';
  for (let i = 0; i < 60 && !/could not refresh/.test(logs); i++) {
    logs = (await api.get(`/api/runs/${runA.id}/logs`)).text;
    if (!/could not refresh/.test(logs)) await new Promise((r) => setTimeout(r, 250));
  }
  assert.match(logs, /the platform refreshed it and the call was retried once/);
  assert.match(logs, /could not refresh it \(OAUTH_REFRESH_REVOKED\)/);
  for (const secret of [stale, fresh, newest, 'client-secret-1', ...(await storedRefreshTokens())]) {
    assert.equal(logs.includes(secret), false, 'a token is in the run log');
    assert.equal(sidecar.stderr().includes(secret), false, "a token is in the sidecar's output");
  }
});

async function storedRefreshTokens(): Promise<string[]> {
  const held = await world.storedCredentials(calendarConnection);
  return held.refresh_token ? [held.refresh_token] : [];
}

test('a revoked or flagged connection keeps its 410s; an ended run is no longer served', async () => {
  // flagged by the revoked refresh above
  expectProblem(await runner('POST', runA.id, calendarConnection, '@acme/calendar', runA.secret), 410, 'OAUTH_CONNECTION_NEEDS_RECONNECTION');
  expectProblem(await runner('GET', runA.id, calendarConnection, '@acme/calendar', runA.secret), 410, 'OAUTH_CONNECTION_NEEDS_RECONNECTION');
  // cleared by hand, the provider still refusing: 410 OAUTH_REFRESH_REVOKED, flagged again
  const pool = world.app.deps.database.pool;
  await pool.query('UPDATE integration_connections SET needs_reconnection = false WHERE id = $1', [calendarConnection]);
  revoked = true;
  try {
    expectProblem(await runner('POST', runA.id, calendarConnection, '@acme/calendar', runA.secret), 410, 'OAUTH_REFRESH_REVOKED');
  } finally {
    revoked = false;
  }
  assert.equal((await api.get(`/api/connections/${calendarConnection}`)).body.needs_reconnection, true, 'the flag outlived the refusal');

  const cancelled = await api.post(`/api/runs/${runP.id}/cancel`, {});
  assert.ok(cancelled.status < 300, cancelled.text);
  expectProblem(await runner('GET', runP.id, portalConnection, '@acme/portal', runP.secret), 409, 'run_not_running');
  expectProblem(await runner('POST', runP.id, portalConnection, '@acme/portal', runP.secret), 409, 'run_not_running');

  // a sink past its expiry serves no connection either, as it takes no event
  await pool.query(`UPDATE runs SET sink_expires_at = now() - interval '1 second' WHERE id = $1`, [runA.id]);
  expectProblem(await runner('GET', runA.id, crmConnection, '@acme/crm', runA.secret), 410, 'run_sink_expired');
  expectProblem(await runner('POST', runA.id, crmConnection, '@acme/crm', runA.secret), 410, 'run_sink_expired');
});
