// The provider as a relying party following the standards sees it, with openid-client 6:
// offline_access gives a refresh token without prompt=consent (the consent page says so), the
// platform's JWT access tokens introspect (RFC 7662) and reach userinfo, discovery lists the API's
// scopes, and the consent page describes each scope and names the instance.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as oidc from 'openid-client';
import { KEY_SCOPES } from '../../lib/permissions.ts';
import { aUserWithPassword } from '../support/builders.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aClient, codeFlow, relyingParty, type Person } from './oidc-harness.ts';

let testApp: TestApp;
let issuer: string;
let person: Person & { userId: string; email: string };
let rp: oidc.Configuration;
let other: oidc.Configuration;

before(async () => {
  testApp = await startTestApp();
  issuer = testApp.url;
  const pool = testApp.deps.database.pool;
  person = await aUserWithPassword(pool);
  await aClient(pool, { id: 'oac_rp', level: 'instance', scopes: ['agents:read', 'spaces:read'] });
  await aClient(pool, { id: 'oac_other', level: 'instance', scopes: ['agents:read'] });
  rp = await relyingParty(issuer, 'oac_rp');
  other = await relyingParty(issuer, 'oac_other');
});
after(() => testApp.close());

test("discovery's scopes_supported lists the OpenID scopes and every API scope", () => {
  const listed = rp.serverMetadata().scopes_supported ?? [];
  const missing = ['openid', 'profile', 'email', 'offline_access', ...KEY_SCOPES].filter((s) => !listed.includes(s));
  assert.deepEqual(missing, []);
});

test('offline_access without prompt=consent: the consent page says it, and a refresh token comes; introspection and userinfo take the access token', async () => {
  const flow = await codeFlow(rp, person, { scope: 'openid email profile offline_access agents:read', prompt: null });
  assert.ok(flow.tokens, flow.browser.lastPage()?.html);
  const { tokens } = flow;
  const consent = flow.browser.pages.find((p) => p.html.includes('value="allow"'));
  assert.ok(consent, 'a consent page was shown');
  assert.match(consent.html, /Keep this access while you are away/);
  assert.match(consent.html, /See agents and their configuration <small>\(<code>agents:read<\/code>\)<\/small>/);
  assert.match(consent.html, /See your email address/);
  assert.ok(consent.html.includes(`Agent Platform at ${new URL(issuer).host}`), 'the instance is named');

  assert.ok(tokens.refresh_token, 'a refresh token for offline_access');
  assert.equal(tokens.access_token.split('.').length, 3, 'a JWT access token');

  // RFC 7662 through openid-client: the platform's own JWT
  const seen = await oidc.tokenIntrospection(rp, tokens.access_token);
  assert.equal(seen.active, true);
  assert.equal(seen.sub, person.userId);
  assert.equal(seen.client_id, 'oac_rp');
  assert.equal(seen.iss, issuer);
  assert.ok(String(seen.scope).split(' ').includes('agents:read'), String(seen.scope));
  assert.equal(seen.aud, `${issuer}/api`);
  // a public client learns nothing about another client's token
  assert.equal((await oidc.tokenIntrospection(other, tokens.access_token)).active, false);
  // a forged signature is not active
  const [h, p, s] = tokens.access_token.split('.');
  const forged = `${h}.${p}.${s.slice(0, -4)}${s.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
  assert.equal((await oidc.tokenIntrospection(rp, forged)).active, false);

  // userinfo with the token issued for the API
  const info = await oidc.fetchUserInfo(rp, tokens.access_token, person.userId);
  assert.equal(info.sub, person.userId);
  assert.equal(info.email, person.email);

  // the refresh token works, rotating; revoking it ends the grant: the access token goes inactive
  const refreshed = await oidc.refreshTokenGrant(rp, tokens.refresh_token);
  assert.ok(refreshed.access_token);
  assert.ok(refreshed.refresh_token && refreshed.refresh_token !== tokens.refresh_token);
  await oidc.tokenRevocation(rp, refreshed.refresh_token);
  assert.equal((await oidc.tokenIntrospection(rp, refreshed.access_token)).active, false);
  assert.equal((await oidc.tokenIntrospection(rp, tokens.access_token)).active, false);
  await assert.rejects(oidc.fetchUserInfo(rp, refreshed.access_token, person.userId));
});

test('without openid, userinfo refuses the API token; without offline_access, no refresh token', async () => {
  const flow = await codeFlow(rp, person, { scope: 'agents:read', prompt: null });
  assert.ok(flow.tokens, flow.browser.lastPage()?.html);
  assert.equal(flow.tokens.refresh_token, undefined);
  const res = await fetch(`${issuer}/api/auth/oauth2/userinfo`, { headers: { authorization: `Bearer ${flow.tokens.access_token}` } });
  assert.equal(res.status, 401);
  assert.equal(((await res.json()) as { error: string }).error, 'invalid_token');
});
