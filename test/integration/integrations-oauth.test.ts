// OAuth 2 connections against an independent authorization server on loopback (oauth2-mock-server):
// authorization code with PKCE (S256) and state through the connect link and the callback, a run
// whose boot refreshes a token near expiry, and a revoked refresh token flipping
// needs_reconnection so that the next launch answers missing_integration_connection; the credential
// proxy's 410s for a revoked refresh token and for an expired token that cannot be refreshed.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { OAuth2Server } from 'oauth2-mock-server';
import { anAgent, anIntegration, anIntegrationWorld, type IntegrationWorld } from './integrations-harness.ts';

let world: IntegrationWorld;
let api: IntegrationWorld['api'];
const oauth = new OAuth2Server();
let revoked = false;
const tokenRequests: Array<Record<string, string>> = [];

before(async () => {
  await oauth.issuer.keys.generate('RS256');
  await oauth.start(0, '127.0.0.1');
  oauth.service.on('beforeResponse', (response: { body: Record<string, unknown>; statusCode: number }, req: { body: Record<string, string> }) => {
    tokenRequests.push(req.body);
    response.body.scope = 'read';
    // tokens minted within the same second are identical JWTs: mark refreshed ones
    if (req.body.grant_type === 'refresh_token') response.body.access_token = `refreshed-${tokenRequests.length}`;
    if (req.body.grant_type === 'refresh_token' && revoked) {
      response.statusCode = 400;
      response.body = { error: 'invalid_grant', error_description: 'refresh token revoked' };
    }
  });
  const issuer = new URL(oauth.issuer.url!);
  world = await anIntegrationWorld([issuer.host]);
  api = world.api;
  await anIntegration(world, '@acme/calendar', {
    source: { kind: 'none' }, default_tools: ['api_call'],
    auths: { oauth: {
      type: 'oauth2',
      oauth2: { authorization_url: `${issuer.origin}/authorize`, token_url: `${issuer.origin}/token`, scopes: ['read'] },
      authorized_uris: ['https://calendar.example/*'],
      delivery: { http: { in: 'header', name: 'Authorization', prefix: 'Bearer ', value: '{$credential.access_token}' } },
    } },
  });
});
after(async () => {
  await world.close();
  await oauth.stop();
});

test('authorization code with PKCE and state, refresh before expiry, and a revoked refresh token', async () => {
  const noClient = await api.post('/api/integrations/@acme/calendar/auths/oauth/connect/session', {});
  const noClientPage = await fetch(world.onApp(noClient.body.connect_url), { redirect: 'manual' });
  assert.equal(noClientPage.status, 503, 'no OAuth client registered: connect_unavailable');

  const set = await api.put('/api/integrations/@acme/calendar/settings', { oauth_client: { auth_key: 'oauth', client_id: 'platform-client', client_secret: 'client-secret-1' } });
  assert.equal(set.status, 200, set.text);
  assert.deepEqual(set.body.oauth_clients, [{ auth_key: 'oauth', client_id: 'platform-client' }]);
  assert.ok(!set.text.includes('client-secret-1'));

  const link = await api.post('/api/integrations/@acme/calendar/auths/oauth/connect/session', {});
  assert.equal(link.status, 200, link.text);
  const start = await fetch(world.onApp(link.body.connect_url), { redirect: 'manual' });
  assert.equal(start.status, 302);
  const authorize = new URL(start.headers.get('location')!);
  assert.equal(authorize.origin, new URL(oauth.issuer.url!).origin);
  assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
  assert.equal(authorize.searchParams.get('client_id'), 'platform-client');
  assert.equal(authorize.searchParams.get('scope'), 'read');
  const state = authorize.searchParams.get('state')!;
  assert.ok(state.length >= 32);
  assert.equal((await fetch(world.onApp(link.body.connect_url), { redirect: 'manual' })).status, 410, 'the link is single-use');

  const consent = await fetch(authorize, { redirect: 'manual' });
  const callback = new URL(consent.headers.get('location')!);
  assert.equal(callback.pathname, '/api/integrations/connect/callback');
  assert.equal(callback.searchParams.get('state'), state);
  const done = await fetch(`${world.app.url}${callback.pathname}${callback.search}`);
  assert.equal(done.status, 200, await done.clone().text());
  assert.match(await done.text(), /Connected/);
  const exchange = tokenRequests.find((r) => r.grant_type === 'authorization_code')!;
  assert.match(exchange.code_verifier, /^[A-Za-z0-9_-]{43}$/, 'the PKCE verifier was sent (the server checked it against the challenge)');
  const replay = await fetch(`${world.app.url}${callback.pathname}${callback.search}`);
  assert.equal(replay.status, 410, 'a state is used once');

  const connection = (await api.get('/api/connections')).body.data[0];
  assert.equal(connection.account_id, 'johndoe');
  assert.deepEqual(connection.scopes, ['read']);
  const pool = world.app.deps.database.pool;
  const stored = JSON.parse(world.app.deps.secrets.open((await pool.query('SELECT credentials FROM integration_connections WHERE id = $1', [connection.id])).rows[0].credentials));
  assert.ok(stored.access_token && stored.refresh_token);

  // a run whose token is about to expire: the boot refreshes it and hands the sidecar the new access token only
  const agent = await anAgent(world, '@acme/scheduler', { '@acme/calendar': ['api_call'] });
  await pool.query(`UPDATE integration_connections SET token_expires_at = now() + interval '1 minute' WHERE id = $1`, [connection.id]);
  const run = await api.post(`/api/agents/${agent}/run`, { input: {} });
  assert.equal(run.status, 201, run.text);
  const spec = await world.bootAssignment(run.body.id);
  const entry = spec.sidecar.integrations![0];
  assert.equal(entry.connectionId, connection.id);
  assert.match(entry.credentials.access_token, /^refreshed-/, 'refreshed');
  assert.equal(entry.credentials.refresh_token, undefined, 'the refresh token stays on the platform');
  assert.equal(tokenRequests.filter((r) => r.grant_type === 'refresh_token').length, 1);

  // the provider revokes the refresh token: the next boot fails and flags the connection
  revoked = true;
  await pool.query(`UPDATE integration_connections SET token_expires_at = now() + interval '1 minute' WHERE id = $1`, [connection.id]);
  const second = await api.post(`/api/agents/${agent}/run`, { input: {} });
  assert.equal(second.status, 201);
  await assert.rejects(world.bootAssignment(second.body.id), (err: { code?: string }) => err.code === 'OAUTH_REFRESH_REVOKED');
  assert.equal((await api.get(`/api/connections/${connection.id}`)).body.needs_reconnection, true);
  // a retried boot of that run finds the connection flagged
  await assert.rejects(world.bootAssignment(second.body.id), (err: { code?: string }) => err.code === 'OAUTH_CONNECTION_NEEDS_RECONNECTION');

  const third = await api.post(`/api/agents/${agent}/run`, { input: {} });
  assert.equal(third.status, 409);
  assert.equal(third.body.code, 'missing_integration_connection');
  const e = third.body.errors[0];
  assert.equal(e.connection_id, connection.id);
  assert.equal(e.owned_by_actor, true);
  assert.deepEqual(e.required_scopes, ['read']);
  assert.deepEqual(e.candidate_connections, [{ id: connection.id, label: 'johndoe', account_id: 'johndoe', owned_by_actor: true, needs_reconnection: true }]);
  assert.match(e.connect_url, /connect\/start\?token=/);

  // reconnecting through a link for that connection keeps its id and clears the flag
  revoked = false;
  const relink = await api.post('/api/integrations/@acme/calendar/auths/oauth/connect/session', { connection_id: connection.id });
  const again = await fetch(new URL((await fetch(world.onApp(relink.body.connect_url), { redirect: 'manual' })).headers.get('location')!), { redirect: 'manual' });
  const back = new URL(again.headers.get('location')!);
  assert.equal((await fetch(`${world.app.url}${back.pathname}${back.search}`)).status, 200);
  const after = await api.get(`/api/connections/${connection.id}`);
  assert.equal(after.body.needs_reconnection, false);
  assert.equal((await api.get('/api/connections')).body.data.length, 1);
  assert.equal((await api.post(`/api/agents/${agent}/run`, { input: {} })).status, 201);

  // the credential proxy meets a revoked refresh token the same way, over HTTP (no request reaches the target)
  revoked = true;
  await pool.query(`UPDATE integration_connections SET token_expires_at = now() + interval '1 minute' WHERE id = $1`, [connection.id]);
  const proxied = await api.get('/api/credential-proxy/proxy', {
    headers: { 'x-integration-id': '@acme/calendar', 'x-target': 'https://calendar.example/events', 'x-session-id': randomUUID() },
  });
  assert.equal(proxied.status, 410, proxied.text);
  assert.equal(proxied.body.code, 'OAUTH_REFRESH_REVOKED');
  assert.equal((await api.get(`/api/connections/${connection.id}`)).body.needs_reconnection, true);

  // an access token that expired with no refresh token to renew it: 410 OAUTH_CONNECTION_NEEDS_RECONNECTION
  const secrets = world.app.deps.secrets;
  const held = JSON.parse(secrets.open((await pool.query('SELECT credentials FROM integration_connections WHERE id = $1', [connection.id])).rows[0].credentials));
  delete held.refresh_token;
  await pool.query(
    `UPDATE integration_connections SET credentials = $2, needs_reconnection = false, token_expires_at = now() - interval '1 minute' WHERE id = $1`,
    [connection.id, secrets.seal(JSON.stringify(held))],
  );
  const expired = await api.get('/api/credential-proxy/proxy', {
    headers: { 'x-integration-id': '@acme/calendar', 'x-target': 'https://calendar.example/events', 'x-session-id': randomUUID() },
  });
  assert.equal(expired.status, 410, expired.text);
  assert.equal(expired.body.code, 'OAUTH_CONNECTION_NEEDS_RECONNECTION');
  assert.equal((await api.get(`/api/connections/${connection.id}`)).body.needs_reconnection, true);
});
