// The instance as an OpenID provider, driven by openid-client (an independent relying party) and
// a scripted browser through the sign-in and consent pages: discovery, authorization code with
// PKCE, refresh-token rotation, revocation, the device flow, ES256 access tokens that call the
// API and the MCP endpoint, and audience binding (a token for one resource is refused by the other).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as oidc from 'openid-client';
import { aSession, anOrg, aUserWithPassword } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aClient, Browser, codeFlow, DEVICE_GRANT, jwtParts, relyingParty, type Person } from './oidc-harness.ts';

let testApp: TestApp;
const pool = () => testApp.deps.database.pool;
let issuer: string;
let orgId: string;
let person: Person & { userId: string };
let rp: oidc.Configuration;

before(async () => {
  testApp = await startTestApp();
  issuer = testApp.url;
  const org = await anOrg(pool());
  orgId = org.orgId;
  const p = await aUserWithPassword(pool());
  person = { ...p };
  await pool().query(`INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $2, 'admin')`, [orgId, p.userId]);
  await aClient(pool(), { id: 'oac_cli', level: 'instance', scopes: ['spaces:read', 'spaces:write', 'mcp:read', 'mcp:invoke', 'agents:read'] });
  rp = await relyingParty(issuer, 'oac_cli');
});

after(() => testApp.close());

const spaces = (token: string, org = orgId) => call(issuer, 'GET', '/api/spaces', { key: token, org });

test('discovery: both documents name this issuer, the spec paths, S256 only and the registration endpoint', async () => {
  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    const res = await call(issuer, 'GET', path);
    assert.equal(res.status, 200, path);
    const d = res.body;
    assert.equal(d.issuer, issuer);
    assert.equal(d.authorization_endpoint, `${issuer}/api/auth/oauth2/authorize`);
    assert.equal(d.token_endpoint, `${issuer}/api/auth/oauth2/token`);
    assert.equal(d.userinfo_endpoint, `${issuer}/api/auth/oauth2/userinfo`);
    assert.equal(d.introspection_endpoint, `${issuer}/api/auth/oauth2/introspect`);
    assert.equal(d.revocation_endpoint, `${issuer}/api/auth/oauth2/revoke`);
    assert.equal(d.jwks_uri, `${issuer}/api/auth/jwks`);
    assert.equal(d.device_authorization_endpoint, `${issuer}/api/auth/device/code`);
    assert.equal(d.registration_endpoint, `${issuer}/api/auth/oauth2/register`);
    assert.deepEqual(d.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(d.id_token_signing_alg_values_supported, ['ES256']);
  }
  const jwks = await call(issuer, 'GET', '/api/auth/jwks');
  assert.equal(jwks.status, 200);
  assert.ok(jwks.body.keys.length >= 1);
  for (const k of jwks.body.keys) {
    assert.equal(k.kty, 'EC');
    assert.equal(k.crv, 'P-256');
    assert.equal(k.d, undefined, 'never the private part');
  }
  const { rows } = await pool().query('SELECT private_jwk_sealed FROM oidc_signing_keys');
  assert.ok(rows.length >= 1);
  for (const r of rows) assert.ok(!r.private_jwk_sealed.includes('"d"'), 'the private key is sealed at rest');
});

test('authorization code + PKCE: an ES256 access token calls the API as the person; refresh rotates; revocation ends it', async () => {
  const flow = await codeFlow(rp, person, { scope: 'openid email offline_access spaces:read', resource: `${issuer}/api` });
  assert.ok(flow.tokens, flow.browser.lastPage()?.html);
  const { tokens, browser } = flow;
  // the pages carry a strict policy and no external asset
  const signIn = browser.pages.find((p) => p.html.includes('name="password"'));
  assert.ok(signIn);
  assert.ok(!/https?:\/\//.test(signIn.html.replace(/action="[^"]*"/g, '')), 'no external reference on the sign-in page');

  const { header, payload } = jwtParts(tokens.access_token);
  assert.equal(header.alg, 'ES256');
  assert.equal(header.typ, 'at+jwt');
  assert.equal(payload.sub, person.userId);
  assert.equal(payload.aud, `${issuer}/api`);
  assert.equal(payload.exp - payload.iat, 3600);
  assert.equal(tokens.claims()?.sub, person.userId);

  const listed = await spaces(tokens.access_token);
  assert.equal(listed.status, 200, listed.text);
  assert.ok(listed.body.data.length >= 1, listed.text);
  // an instance-level token needs X-Org-Id like a session
  const noOrg = await call(issuer, 'GET', '/api/spaces', { key: tokens.access_token });
  assert.equal(noOrg.status, 400, noOrg.text);
  assert.equal(noOrg.body.param, 'X-Org-Id', noOrg.text);
  // and refuses Service-User like a session
  const impersonating = await call(issuer, 'GET', '/api/spaces', { key: tokens.access_token, org: orgId, headers: { 'service-user': 'eu_x' } });
  assert.equal(impersonating.status, 400);
  assert.equal(impersonating.body.code, 'header_not_allowed');
  // a tampered signature is no credential
  const forged = tokens.access_token.slice(0, -4) + (tokens.access_token.endsWith('AAAA') ? 'BBBB' : 'AAAA');
  assert.equal((await spaces(forged)).status, 401);

  // refresh-token rotation: a new refresh token
  assert.ok(tokens.refresh_token, `a refresh token: ${JSON.stringify(tokens)}`);
  const refreshed = await oidc.refreshTokenGrant(rp, tokens.refresh_token, { resource: `${issuer}/api` });
  assert.ok(refreshed.refresh_token && refreshed.refresh_token !== tokens.refresh_token, 'a rotated refresh token');
  assert.equal((await spaces(refreshed.access_token)).status, 200);

  // grant rows carry the account: what a password change deletes
  const { rows } = await pool().query(`SELECT count(*)::int AS n FROM oidc_payloads WHERE account_id = $1 AND model IN ('Grant', 'RefreshToken')`, [person.userId]);
  assert.ok(rows[0].n >= 2, 'grant and refresh token rows name the account');

  // the revocation of the refresh token ends the grant: its access tokens stop working at once
  await oidc.tokenRevocation(rp, refreshed.refresh_token!);
  const after = await spaces(refreshed.access_token);
  assert.equal(after.status, 401);
  assert.equal(after.body.code, 'unauthorized');
  await assert.rejects(oidc.refreshTokenGrant(rp, refreshed.refresh_token!), (err: any) => err.error === 'invalid_grant');
  await assert.rejects(oidc.refreshTokenGrant(rp, tokens.refresh_token), (err: any) => err.error === 'invalid_grant');
});

test('a platform session in the browser signs in without a password; a plain PKCE challenge is refused', async () => {
  const { cookie } = await aSession(pool(), person.userId);
  const flow = await codeFlow(rp, { session: true }, { scope: 'openid spaces:read' }, new Browser(cookie));
  assert.ok(flow.tokens, flow.browser.lastPage()?.html);
  assert.equal(jwtParts(flow.tokens.access_token).payload.aud, `${issuer}/api`, 'an API scope without a resource gets the API');
  assert.equal((await spaces(flow.tokens.access_token)).status, 200);

  const url = oidc.buildAuthorizationUrl(rp, { redirect_uri: 'http://127.0.0.1:9/callback', scope: 'openid', code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' });
  const res = await fetch(url, { redirect: 'manual' });
  const location = res.headers.get('location') ?? '';
  assert.ok(res.status >= 300 && res.status < 400 && location.includes('error=invalid_request'), `${res.status} ${location}`);
});

test('audience: an MCP token works at its endpoint (and its tools) only; an API token is refused there', async () => {
  const mcpResource = `${issuer}/api/mcp/o/${orgId}`;
  const flow = await codeFlow(rp, person, { scope: 'openid mcp:read mcp:invoke spaces:read', resource: mcpResource });
  assert.ok(flow.tokens, flow.browser.lastPage()?.html);
  const mcpToken = flow.tokens.access_token;
  assert.equal(jwtParts(mcpToken).payload.aud, mcpResource);

  const client = new Client({ name: 'oidc-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${issuer}/api/mcp/o/${orgId}`), { requestInit: { headers: { authorization: `Bearer ${mcpToken}` } } }));
  const found = (await client.callTool({ name: 'search_operations', arguments: { query: 'list spaces', limit: 50 } })).structuredContent as any;
  const op = found.operations.find((o: any) => o.method === 'GET' && o.path === '/api/spaces');
  assert.ok(op, JSON.stringify(found));
  const invoked = (await client.callTool({ name: 'invoke_operation', arguments: { operation_id: op.operation_id } })).structuredContent as any;
  assert.equal(invoked.status, 200, JSON.stringify(invoked));
  await client.close();

  // the MCP token at the API, even naming the organization, is refused; so is a forged dispatch proof
  assert.equal((await spaces(mcpToken)).status, 401);
  const proofForged = await call(issuer, 'GET', '/api/spaces', { key: mcpToken, org: orgId, headers: { 'x-mcp-dispatch-proof': 'x'.repeat(43) } });
  assert.equal(proofForged.status, 401);
  // another organization's endpoint refuses it
  const other = await anOrg(pool());
  await pool().query(`INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $2, 'admin')`, [other.orgId, person.userId]);
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };
  const mcpHeaders = { accept: 'application/json, text/event-stream' };
  const elsewhere = await call(issuer, 'POST', `/api/mcp/o/${other.orgId}`, { key: mcpToken, body: init, headers: mcpHeaders });
  assert.equal(elsewhere.status, 401);

  // an API token at the MCP endpoint: 401 with the protected-resource challenge
  const api = await codeFlow(rp, person, { scope: 'openid mcp:read', resource: `${issuer}/api` });
  assert.ok(api.tokens);
  const refused = await call(issuer, 'POST', `/api/mcp/o/${orgId}`, { key: api.tokens.access_token, body: init, headers: mcpHeaders });
  assert.equal(refused.status, 401);
  assert.match(refused.headers.get('www-authenticate') ?? '', /resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/api\/mcp\/o\//);
  const meta = await call(issuer, 'GET', `/.well-known/oauth-protected-resource/api/mcp/o/${orgId}`);
  assert.deepEqual(meta.body.authorization_servers, [issuer]);
  // a resource of no organization is refused at the authorization request
  await assert.rejects(codeFlow(rp, person, { scope: 'openid mcp:read', resource: `${issuer}/api/mcp/o/not-an-org` }), (err: any) => err.error === 'invalid_target');
});

test('device flow (RFC 8628): the person approves on the verification page, the device polls and calls the API', async () => {
  const started = await oidc.initiateDeviceAuthorization(rp, { scope: 'openid offline_access spaces:read', resource: `${issuer}/api` });
  assert.ok(started.verification_uri.startsWith(`${issuer}/api/auth/device`));
  const browser = new Browser();
  await browser.walk(started.verification_uri, person, 'http://never', { userCode: started.user_code });
  assert.match(browser.lastPage()?.html ?? '', /Your device is signed in/, browser.lastPage()?.html);
  assert.ok(browser.pages.every((p) => !p.html.includes('fonts.googleapis')), 'no external asset on the device pages');
  // approved before the first poll: the first poll gets the tokens
  const tokens = await oidc.pollDeviceAuthorizationGrant(rp, { ...started, interval: 0.01 });
  assert.equal((await spaces(tokens.access_token)).status, 200);
  const { rows } = await pool().query(`SELECT account_id FROM oidc_payloads WHERE model = 'DeviceCode'`);
  assert.ok(rows.some((r) => r.account_id === person.userId), 'the device code row names its account');
  assert.ok(DEVICE_GRANT);
});

test('a password change ends what the provider issued to the account: its access token and refresh token stop working at once', async () => {
  const p = await aUserWithPassword(pool(), { password: 'an old password to change' });
  await pool().query(`INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $2, 'member')`, [orgId, p.userId]);
  const flow = await codeFlow(rp, p, { scope: 'openid offline_access spaces:read', resource: `${issuer}/api` });
  assert.ok(flow.tokens, flow.browser.lastPage()?.html);
  const { access_token: access, refresh_token: refresh } = flow.tokens;
  assert.equal((await spaces(access)).status, 200);
  assert.ok(refresh);

  const { cookie } = await aSession(pool(), p.userId);
  const changed = await call(issuer, 'POST', '/api/auth/change-password', { cookie, body: { current_password: p.password, new_password: 'a brand new password 2026' } });
  assert.equal(changed.status, 204, changed.text);

  const after = await spaces(access);
  assert.equal(after.status, 401, after.text);
  await assert.rejects(oidc.refreshTokenGrant(rp, refresh!), (err: any) => err.error === 'invalid_grant');
  const { rows } = await pool().query('SELECT count(*)::int AS n FROM oidc_payloads WHERE account_id = $1', [p.userId]);
  assert.equal(rows[0].n, 0);
});
