// OAuth clients at each level, as the spec's "OIDC access tokens" table has them: org clients bound
// to their organization with token scopes intersected with the person's current role, space
// clients signing in end-users (closed sign-up unless allowed) with a fixed scope allowlist and
// refused by platform routes; the library's own client endpoints answering 401; the OAuth
// endpoints' per-IP limit answered the OAuth way; signing-key rotation.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as oidc from 'openid-client';
import { newId } from '../../lib/ids.ts';
import { aSession, anOrg, aUserWithPassword } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { rotateOidcSigningKey } from '../../api/modules/oidc/index.ts';
import { SPACE_CLIENT_SCOPES } from '../../api/modules/oidc/scopes.ts';
import { aClient, codeFlow, jwtParts, relyingParty, type Person } from './oidc-harness.ts';

let testApp: TestApp;
const pool = () => testApp.deps.database.pool;
let issuer: string;
let orgId: string;
let spaceId: string;
let otherOrg: string;
let member: Person & { userId: string };
let guest: Person & { userId: string };
let outsider: Person & { userId: string };

before(async () => {
  testApp = await startTestApp();
  issuer = testApp.url;
  const org = await anOrg(pool());
  orgId = org.orgId;
  spaceId = org.spaceId;
  otherOrg = (await anOrg(pool())).orgId;
  member = await aUserWithPassword(pool());
  guest = await aUserWithPassword(pool());
  outsider = await aUserWithPassword(pool());
  await pool().query(`INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $2, 'member'), ($1, $3, 'guest'), ($4, $2, 'member')`, [orgId, member.userId, guest.userId, otherOrg]);
  await aClient(pool(), { id: 'oac_org', level: 'org', orgId, scopes: ['spaces:read', 'spaces:write', 'mcp:read'] });
  await aClient(pool(), { id: 'oac_space', level: 'space', orgId, spaceId, scopes: ['agents:read', 'runs:read', 'spaces:read'] });
  await aClient(pool(), { id: 'oac_space_open', level: 'space', orgId, spaceId, scopes: ['agents:read'], allowSignup: true });
  await aClient(pool(), { id: 'oac_inst', level: 'instance', scopes: ['spaces:read'] });
});
after(() => testApp.close());

test('org client: bound to its organization; permissions are token scopes intersected with the current role', async () => {
  const rp = await relyingParty(issuer, 'oac_org');
  const narrow = await codeFlow(rp, member, { scope: 'openid spaces:read' });
  assert.ok(narrow.tokens, narrow.browser.lastPage()?.html);
  const token = narrow.tokens.access_token;
  assert.equal(jwtParts(token).payload.org, orgId);

  // no X-Org-Id needed: the token names its organization
  const listed = await call(issuer, 'GET', '/api/spaces', { key: token });
  assert.equal(listed.status, 200, listed.text);
  // another organization (where the person is a member too) is refused
  const elsewhere = await call(issuer, 'GET', '/api/spaces', { key: token, org: otherOrg });
  assert.equal(elsewhere.status, 403);
  assert.equal(elsewhere.body.param, 'X-Org-Id');
  // the member holds spaces:write, the token does not carry it
  const create = await call(issuer, 'POST', '/api/spaces', { key: token, body: { name: 'From the app' } });
  assert.equal(create.status, 403, create.text);
  // role preview is the session's and the instance token's only
  const preview = await call(issuer, 'GET', '/api/spaces', { key: token, headers: { 'x-view-as': 'guest' } });
  assert.equal(preview.status, 400);
  assert.equal(preview.body.code, 'view_as_unsupported');

  // the guest's token carries spaces:write, the guest's role does not hold it
  const wide = await codeFlow(rp, guest, { scope: 'openid spaces:read spaces:write' });
  assert.ok(wide.tokens, wide.browser.lastPage()?.html);
  assert.match(String(jwtParts(wide.tokens.access_token).payload.scope), /spaces:write/);
  assert.equal((await call(issuer, 'GET', '/api/spaces', { key: wide.tokens.access_token })).status, 200);
  assert.equal((await call(issuer, 'POST', '/api/spaces', { key: wide.tokens.access_token, body: { name: 'No' } })).status, 403);
  // promoted, the same token can: the role is read at each request
  await pool().query(`UPDATE org_members SET role = 'member' WHERE org_id = $1 AND user_id = $2`, [orgId, guest.userId]);
  await pool().query(`NOTIFY auth_changed`);
  let created = { status: 0, text: '' };
  for (let i = 0; i < 50 && created.status !== 201; i++) {
    created = await call(issuer, 'POST', '/api/spaces', { key: wide.tokens.access_token, body: { name: `Promoted ${i}` } });
    if (created.status !== 201) await new Promise((r) => setTimeout(r, 20));
  }
  assert.equal(created.status, 201, created.text);

  // someone outside the organization cannot sign in to its client
  const refused = await codeFlow(rp, outsider, { scope: 'openid spaces:read' });
  assert.equal(refused.tokens, undefined);
  assert.equal(refused.browser.lastPage()?.status, 401);
  assert.match(refused.browser.lastPage()?.html ?? '', /not a member/);
});

test('space client: end-users only (closed sign-up by default), the scope allowlist, refused by platform routes', async () => {
  const rp = await relyingParty(issuer, 'oac_space');
  // no end-user for this person in the space, and the client takes no sign-ups
  const closed = await codeFlow(rp, member, { scope: 'openid agents:read' });
  assert.equal(closed.tokens, undefined);
  assert.match(closed.browser.lastPage()?.html ?? '', /does not take sign-ups/);

  const endUserId = newId('eu');
  await pool().query('INSERT INTO end_users (id, org_id, space_id, external_id, name) VALUES ($1, $2, $3, $4, $5)', [endUserId, orgId, spaceId, member.email, 'Member as end-user']);
  const flow = await codeFlow(rp, member, { scope: 'openid agents:read runs:read spaces:read', resource: `${issuer}/api` });
  assert.ok(flow.tokens, flow.browser.lastPage()?.html);
  const { payload } = jwtParts(flow.tokens.access_token);
  assert.equal(payload.sub, endUserId);
  assert.equal(payload.spc, spaceId);
  const granted = String(payload.scope).split(' ');
  assert.ok(granted.includes('agents:read') && granted.includes('runs:read'));
  assert.ok(!granted.includes('spaces:read'), `spaces:read is outside the allowlist: ${payload.scope}`);
  for (const s of granted) assert.ok((SPACE_CLIENT_SCOPES as readonly string[]).includes(s), s);

  const refused = await call(issuer, 'GET', '/api/spaces', { key: flow.tokens.access_token, org: orgId });
  assert.equal(refused.status, 403);
  assert.match(refused.body.detail, /End-user tokens cannot call platform routes/);

  // a client open to sign-ups creates the end-user on first sign-in
  const open = await relyingParty(issuer, 'oac_space_open');
  const signup = await codeFlow(open, guest, { scope: 'openid agents:read' });
  assert.ok(signup.tokens, signup.browser.lastPage()?.html);
  const { rows } = await pool().query('SELECT id FROM end_users WHERE space_id = $1 AND external_id = $2', [spaceId, guest.email]);
  assert.equal(rows.length, 1);
  assert.equal(jwtParts(signup.tokens.access_token).payload.sub, rows[0].id);
  // that provider session is the end-user's: an instance client asks the person to sign in again
  const inst = await codeFlow(await relyingParty(issuer, 'oac_inst'), guest, { scope: 'openid spaces:read' }, signup.browser);
  assert.ok(inst.tokens, inst.browser.lastPage()?.html);
  assert.equal(jwtParts(inst.tokens.access_token).payload.sub, guest.userId);
});

test('the auth library\'s client endpoints answer 401 to a session and to everything else', async () => {
  const { cookie } = await aSession(pool(), member.userId);
  for (const name of ['create-client', 'get-client', 'get-clients', 'update-client', 'delete-client', 'client/rotate-secret']) {
    for (const method of ['GET', 'POST']) {
      const withSession = await call(issuer, method, `/api/auth/oauth2/${name}`, { cookie, ...(method === 'POST' ? { body: { client_id: 'oac_org' } } : {}) });
      assert.equal(withSession.status, 401, `${method} ${name}`);
      assert.equal(withSession.body.code, 'unauthorized');
      assert.equal((await call(issuer, method, `/api/auth/oauth2/${name}`)).status, 401);
    }
  }
});

test('the revocation endpoint is limited per IP: 429, Retry-After and an RFC 6749 body', async () => {
  const body = new URLSearchParams({ token: 'x', client_id: 'oac_inst' }).toString();
  let last: Response | undefined;
  for (let i = 0; i < 61; i++) {
    last = await fetch(`${issuer}/api/auth/oauth2/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
    if (i < 60) assert.equal(last.status, 200, `call ${i}`);
  }
  assert.equal(last!.status, 429);
  assert.ok(Number(last!.headers.get('retry-after')) >= 1);
  assert.match(last!.headers.get('content-type') ?? '', /^application\/json/);
  const json = (await last!.json()) as { error?: string; error_description?: string; type?: string };
  assert.equal(json.error, 'temporarily_unavailable');
  assert.equal(typeof json.error_description, 'string');
  assert.equal(json.type, undefined, 'not a problem document');
});

test('signing-key rotation: new tokens carry the new key, tokens of the retired one stay valid, both published', async () => {
  const rp = await relyingParty(issuer, 'oac_inst');
  const before = await codeFlow(rp, member, { scope: 'openid spaces:read' });
  assert.ok(before.tokens);
  const oldKid = jwtParts(before.tokens.access_token).header.kid;
  const newKid = await rotateOidcSigningKey(testApp.deps);
  assert.notEqual(newKid, oldKid);
  const jwks = await call(issuer, 'GET', '/api/auth/jwks');
  const kids = jwks.body.keys.map((k: any) => k.kid);
  assert.ok(kids.includes(oldKid) && kids.includes(newKid), JSON.stringify(kids));
  const after = await codeFlow(await relyingParty(issuer, 'oac_inst'), member, { scope: 'openid spaces:read' });
  assert.ok(after.tokens, after.browser.lastPage()?.html);
  assert.equal(jwtParts(after.tokens.access_token).header.kid, newKid);
  assert.equal((await call(issuer, 'GET', '/api/spaces', { key: after.tokens.access_token, org: orgId })).status, 200);
  assert.equal((await call(issuer, 'GET', '/api/spaces', { key: before.tokens.access_token, org: orgId })).status, 200);
  assert.ok(oidc);
});
