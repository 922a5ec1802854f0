// The credential matrix of issue 29, generated from the built route table (core and modules):
// every protected operation × {session; API key with one unrelated read scope; the same kind of
// key acting for an end-user (Service-User); organization-level token with one unrelated scope;
// instance token of a dynamically registered client granted one unrelated scope; an end-user's
// space-level token} × {the credential's own organization, another organization of the same
// person}. The person owns both organizations, so every refusal comes from the credential, never
// from the role. Expected: refused (401/403) unless the credential's
// effective permissions meet the operation's declared need; the refused writes changed nothing.
// Also here: the table has no protected operation without a declared need, and one test per
// finding 1-3 of the issue, driven as an integrator (and an attacker) would. The owner's session
// runs last: its deletions (the organizations themselves) end the world.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createApp } from '../../api/app.ts';
import { loadModules } from '../../api/modules/index.ts';
import { defaultTenant, undeclaredRoutes, type RouteDef } from '../../api/route.ts';
import { allRoutes } from '../../api/routes/index.ts';
import { needMet, SPACE_TOKEN_SCOPES } from '../../lib/permissions.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg, aSession, aSpace, aUserWithPassword } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { orgSnapshot } from '../support/tenant-world.ts';
import { aClient, codeFlow, jwtParts, relyingParty, REDIRECT, type Person } from './oidc-harness.ts';

const UNRELATED = 'proxies:read';

let app: TestApp;
let routes: RouteDef<any, any, any>[];
let person: Person & { userId: string };
// A and C: two organizations of the same person (owner of both); sA, sC their spaces
let A: string, sA: string, C: string, sC: string;
const cred: Record<string, { headers: Record<string, string>; bound: boolean; ceiling: Set<string> | null; kind: string }> = {};

const pool = () => app.deps.database.pool;

async function registerDynamicClient(scope: string): Promise<string> {
  const res = await call(app.url, 'POST', '/api/auth/oauth2/register', {
    body: { client_name: 'Anonymous tool', redirect_uris: [REDIRECT], grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'none', scope },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.client_id;
}

async function tokenOf(clientId: string, scope: string, who: Person = person): Promise<string> {
  const flow = await codeFlow(await relyingParty(app.url, clientId), who, { scope });
  assert.ok(flow.tokens, flow.browser.lastPage()?.html);
  return flow.tokens.access_token;
}

before(async () => {
  app = await startTestApp();
  const modules = await loadModules(app.deps.config.MODULES, app.deps);
  routes = createApp(app.deps, { routes: allRoutes(), modules, log: app.deps.log, version: 'test' }).routes;
  person = await aUserWithPassword(pool());
  const a = await anOrg(pool());
  const c = await anOrg(pool());
  A = a.orgId; sA = a.spaceId; C = c.orgId; sC = c.spaceId;
  await pool().query(`INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $3, 'owner'), ($2, $3, 'owner')`, [A, C, person.userId]);

  const cookie = (await aSession(pool(), person.userId)).cookie;
  cred.session = { headers: { cookie }, bound: false, ceiling: null, kind: 'session' };
  const { key } = await aKey(pool(), { orgId: A, spaceId: sA, userId: person.userId, scopes: [UNRELATED] });
  cred.apiKey = { headers: { authorization: `Bearer ${key}` }, bound: true, ceiling: new Set([UNRELATED]), kind: 'api_key' };

  await aClient(pool(), { id: 'oac_matrix_org', level: 'org', orgId: A, scopes: [UNRELATED, 'agents:read'] });
  const orgToken = await tokenOf('oac_matrix_org', `openid ${UNRELATED}`);
  assert.equal(jwtParts(orgToken).payload.scope.includes('agents:read'), false);
  cred.orgToken = { headers: { authorization: `Bearer ${orgToken}` }, bound: true, ceiling: new Set([UNRELATED]), kind: 'org' };

  const dynamic = await registerDynamicClient(`openid ${UNRELATED}`);
  const instToken = await tokenOf(dynamic, `openid ${UNRELATED}`);
  assert.equal(jwtParts(instToken).payload.lvl, 'instance');
  cred.instanceToken = { headers: { authorization: `Bearer ${instToken}` }, bound: false, ceiling: new Set([UNRELATED]), kind: 'instance' };

  await aClient(pool(), { id: 'oac_matrix_space', level: 'space', orgId: A, spaceId: sA, scopes: [...SPACE_TOKEN_SCOPES], allowSignup: true });
  const euToken = await tokenOf('oac_matrix_space', `openid ${SPACE_TOKEN_SCOPES.join(' ')}`);
  assert.equal(jwtParts(euToken).payload.lvl, 'space');
  cred.endUserToken = { headers: { authorization: `Bearer ${euToken}` }, bound: true, ceiling: new Set(SPACE_TOKEN_SCOPES), kind: 'space' };

  // end-user impersonation: a key of the space acting for one of its end-users (Service-User) has
  // the key's authority (its scopes within its creator's role), bound to the key's organization and space
  await pool().query('INSERT INTO end_users (id, org_id, space_id, external_id, name) VALUES ($1, $2, $3, $4, $5)', ['eu_matrix_impersonated', A, sA, 'matrix-customer', 'Customer']);
  const impersonating = await aKey(pool(), { orgId: A, spaceId: sA, userId: person.userId, scopes: ['runs:read'] });
  cred.impersonation = { headers: { authorization: `Bearer ${impersonating.key}`, 'service-user': 'eu_matrix_impersonated' }, bound: true, ceiling: new Set(['runs:read']), kind: 'impersonation' };
});
after(() => app.close());

const isProtected = (r: RouteDef<any, any, any>) => (r.stage ?? 'protected') === 'protected';
const tenantOf = (r: RouteDef<any, any, any>) => r.tenant ?? defaultTenant(r.path);

/** The path with the organization / space of `org` (A or C), and absent ids elsewhere. */
function fill(r: RouteDef<any, any, any>, org: 'own' | 'other'): string {
  const [o, s] = org === 'own' ? [A, sA] : [C, sC];
  return r.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (name === 'orgId' || name === 'org') return o;
    if (name === 'spaceId') return s;
    if (name === 'scope') return '@absent';
    return 'absent';
  });
}

interface Outcome {
  status: number;
  code?: string;
}

/** One request; a stream is read no further than its status (its body never ends). */
async function send(r: RouteDef<any, any, any>, org: 'own' | 'other', headers: Record<string, string>): Promise<Outcome> {
  const [o, s] = org === 'own' ? [A, sA] : [C, sC];
  const method = r.method.toUpperCase();
  const h: Record<string, string> = { ...headers, 'x-org-id': o, 'x-space-id': s };
  let url = `${app.url}${fill(r, org)}`;
  if (r.sse) url += `?orgId=${o}&spaceId=${s}`;
  const body = method === 'GET' || method === 'DELETE' ? undefined : '{}';
  if (body) h['content-type'] = 'application/json';
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 10_000);
  try {
    const res = await fetch(url, { method, headers: h, body, signal: abort.signal });
    const type = res.headers.get('content-type') ?? '';
    if (!type.includes('json')) {
      abort.abort();
      return { status: res.status };
    }
    const parsed = (await res.json().catch(() => ({}))) as { code?: string; error?: string };
    return { status: res.status, code: parsed?.code ?? parsed?.error };
  } finally {
    clearTimeout(timer);
  }
}

const refused = (o: Outcome) => o.status === 401 || (o.status === 403 && (o.code === 'forbidden' || o.code === 'not_a_space_member'));

/** What the credential should be able to do: its ceiling meets the need (the person's role holds everything). */
function expectedAllowed(r: RouteDef<any, any, any>, name: string, org: 'own' | 'other'): boolean {
  const c = cred[name];
  if (c.kind === 'session') return true;
  if (org === 'other' && c.bound) return false;
  if (r.sessionOnly) return false;
  if (c.kind === 'space' && (tenantOf(r) !== 'space' || r.permission === 'signed-in')) return false;
  if (r.path === '/api/mcp/o/{org}') return false; // tokens for the API are not tokens for an MCP endpoint
  return needMet(r.permission!, c.ceiling!);
}

/** Every table holding organization rows (the impersonation log aside: each request acting for an end-user is logged, as the spec asks). */
async function snapshot(): Promise<string> {
  const withoutLog = async (org: string) => {
    const rows = await orgSnapshot(app, org);
    delete rows.impersonation_log;
    return rows;
  };
  const orgs = await pool().query('SELECT md5(string_agg(x::text, \'|\' ORDER BY x.id)) AS h FROM organizations x WHERE id = ANY($1::uuid[])', [[A, C]]);
  return JSON.stringify([await withoutLog(A), await withoutLog(C), orgs.rows[0].h]);
}

async function inParallel<T>(items: T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await work(items[next++]);
  }));
}

describe('issue 29 findings', () => {
  test('1: a dynamically registered client consented "openid agents:read" acts with exactly that, never the person\'s power', async () => {
    const clientId = await registerDynamicClient('openid agents:read');
    const token = await tokenOf(clientId, 'openid agents:read');
    const as = (method: string, path: string, body?: unknown, org = A, space = sA) => call(app.url, method, path, { key: token, org, space, body });
    const before = await snapshot();
    const attempts = [
      await as('PATCH', `/api/orgs/${A}`, { name: 'Renamed by a tool' }),
      await as('POST', '/api/end-users', { externalId: 'x@example.test', name: 'X' }),
      await as('GET', `/api/orgs/${A}/members`),
      await as('GET', '/api/api-keys'),
      await as('POST', '/api/api-keys', { name: 'minted', scopes: ['agents:read', 'runs:read'] }),
      await as('GET', '/api/spaces', undefined, C, sC),
      await as('PATCH', `/api/orgs/${C}`, { name: 'Renamed elsewhere' }),
    ];
    for (const r of attempts) assert.equal(r.status, 403, r.text);
    assert.equal(await snapshot(), before);
    // what was consented works, in either organization of the person
    assert.equal((await as('GET', '/api/packages')).status, 200);
    assert.equal((await as('GET', '/api/packages', undefined, C, sC)).status, 200);
  });

  test('2: an organization-level token acts within its scopes and its organization only', async () => {
    await aClient(pool(), { id: 'oac_finding2', level: 'org', orgId: A, scopes: ['agents:read', 'runs:read'] });
    const token = await tokenOf('oac_finding2', 'openid agents:read runs:read');
    const before = await snapshot();
    const own = (method: string, path: string, body?: unknown) => call(app.url, method, path, { key: token, space: sA, body });
    for (const r of [
      await own('PATCH', `/api/orgs/${A}`, { name: 'Renamed' }),
      await own('POST', `/api/orgs/${A}/roles`, { key: 'sneaky', name: 'Sneaky', permissions: ['runs:read'] }),
      await own('POST', `/api/orgs/${A}/invitations`, { email: 'attacker@example.test', role: 'admin' }),
      await own('GET', `/api/orgs/${A}/members`),
    ]) assert.equal(r.status, 403, r.text);
    // the other organization, by path, header and SSE query
    const other = [
      await call(app.url, 'PATCH', `/api/orgs/${C}`, { key: token, body: { name: 'Renamed' } }),
      await call(app.url, 'POST', `/api/orgs/${C}/invitations`, { key: token, body: { email: 'attacker@example.test', role: 'owner' } }),
      await call(app.url, 'GET', '/api/runs', { key: token, org: C, space: sC }),
    ];
    // a stream's answer is read no further than its head (an accepted stream never ends)
    const stream = await fetch(`${app.url}/api/realtime/runs?orgId=${C}&spaceId=${sC}`, { headers: { authorization: `Bearer ${token}` } });
    if (!(stream.headers.get('content-type') ?? '').includes('json')) await stream.body?.cancel();
    assert.equal(stream.status, 403, 'an organization-level token naming another organization in a stream query');
    for (const r of other) assert.equal(r.status, 403, r.text);
    assert.equal(await snapshot(), before);
    assert.equal((await own('GET', '/api/runs')).status, 200, 'runs:read in its own organization works');
  });

  test('2b: a key is refused when a stream query (?token=) or a body names another organization or space', async () => {
    const { key } = await aKey(pool(), { orgId: A, spaceId: sA, userId: person.userId, scopes: ['runs:read', 'webhooks:write', 'webhooks:read'] });
    const second = await aSpace(pool(), A);
    for (const q of [`orgId=${C}`, `spaceId=${second}`]) {
      // read no further than the answer's head: an accepted stream never ends
      const res = await fetch(`${app.url}/api/realtime/runs?token=${key}&${q}`);
      const code = (res.headers.get('content-type') ?? '').includes('json') ? ((await res.json()) as { code?: string }).code : (await res.body?.cancel(), undefined);
      assert.deepEqual([res.status, code], [403, 'forbidden'], q);
    }
    const before = await snapshot();
    const body = await call(app.url, 'POST', '/api/webhooks', { key, body: { spaceId: second, url: 'https://hooks.example.test/x', events: ['run.success'] } });
    assert.equal(body.status, 403, body.text);
    assert.equal(body.body.param, 'spaceId');
    assert.equal(await snapshot(), before);
  });

  test('3: an end-user token of a space client runs agents and reads its own runs; refused elsewhere', async () => {
    const endUser = await aUserWithPassword(pool());
    await aClient(pool(), { id: 'oac_finding3', level: 'space', orgId: A, spaceId: sA, scopes: ['agents:run', 'runs:read', 'agents:read'], allowSignup: true });
    const token = await tokenOf('oac_finding3', 'openid agents:run runs:read', endUser);
    const claims = jwtParts(token).payload;
    assert.equal(claims.lvl, 'space');
    // no context headers needed: the token names its organization and space
    const runs = await call(app.url, 'GET', '/api/runs', { key: token });
    assert.equal(runs.status, 200, runs.text);
    assert.deepEqual(runs.body.data, []);
    const launch = await call(app.url, 'POST', '/api/agents/@absent/nothing/run', { key: token, body: { input: {} } });
    assert.notEqual(launch.status, 403, launch.text);
    // agents:read was not granted; spaces and other spaces are outside the allowlist
    assert.equal((await call(app.url, 'GET', '/api/agents/@absent/nothing/config', { key: token })).status, 403);
    assert.equal((await call(app.url, 'GET', '/api/spaces', { key: token })).status, 403);
    const otherSpace = await call(app.url, 'GET', '/api/runs', { key: token, space: await aSpace(pool(), A) });
    assert.equal(otherSpace.status, 403);
    assert.equal(otherSpace.body.param, 'X-Space-Id');
    // a removed end-user's token stops at once
    await pool().query('DELETE FROM end_users WHERE id = $1', [claims.sub]);
    await pool().query('NOTIFY auth_changed');
    let after = await call(app.url, 'GET', '/api/runs', { key: token });
    for (let i = 0; i < 50 && after.status !== 401; i++) after = await call(app.url, 'GET', '/api/runs', { key: token });
    assert.equal(after.status, 401);
  });

  test('grants end: no key can be minted with a token; removal from the organization and a password change end what the grant gave', async () => {
    const q = await aUserWithPassword(pool());
    await pool().query(`INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $2, 'admin')`, [A, q.userId]);
    await aClient(pool(), { id: 'oac_grants_end', level: 'org', orgId: A, scopes: ['runs:read', 'agents:read'] });
    const orgToken = await tokenOf('oac_grants_end', 'openid runs:read agents:read', q);
    const instToken = await tokenOf(await registerDynamicClient('openid runs:read agents:read'), 'openid runs:read agents:read', q);
    for (const token of [orgToken, instToken]) {
      // key management is a session's only: a token can neither list, mint nor revoke keys
      for (const [method, path] of [['POST', '/api/api-keys'], ['GET', '/api/api-keys'], ['GET', '/api/api-keys/available-scopes']]) {
        const res = await call(app.url, method, path, { key: token, org: A, space: sA, body: method === 'POST' ? { name: 'minted' } : undefined });
        assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
      }
      assert.equal((await call(app.url, 'GET', '/api/runs', { key: token, org: A, space: sA })).status, 200);
    }
    // removed from the organization by its owner: both tokens lose it at once
    const owner = cred.session.headers.cookie;
    const removed = await call(app.url, 'DELETE', `/api/orgs/${A}/members/${q.userId}`, { cookie: owner });
    assert.equal(removed.status, 204, removed.text);
    for (const token of [orgToken, instToken]) {
      const res = await call(app.url, 'GET', '/api/runs', { key: token, org: A, space: sA });
      assert.equal(res.status, 403, res.text);
    }
    // a password change ends the grant of a token that still had an organization
    const r = await aUserWithPassword(pool());
    await pool().query(`INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $2, 'admin')`, [A, r.userId]);
    const rToken = await tokenOf('oac_grants_end', 'openid agents:read', r);
    assert.equal((await call(app.url, 'GET', '/api/packages', { key: rToken, space: sA })).status, 200);
    const signedIn = await fetch(`${app.url}/api/auth/sign-in/email`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: r.email, password: r.password }) });
    const cookie = signedIn.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const changed = await call(app.url, 'POST', '/api/auth/change-password', { cookie, body: { current_password: r.password, new_password: 'another long password' } });
    assert.equal(changed.status, 204, changed.text);
    const after = await call(app.url, 'GET', '/api/packages', { key: rToken, space: sA });
    assert.equal(after.status, 401, after.text);
  });

  test('session-only account operations under /api/auth/ (and accepting an invitation) refuse every key and token: 401, nothing changed', async () => {
    // the table's own list: every /api/auth/* route marked session-only, plus the invitation acceptance
    const accountRoutes = routes.filter((r) => r.stage === 'auth' && r.sessionOnly).map((r) => `${r.method.toUpperCase()} ${r.path}`);
    assert.ok(accountRoutes.includes('POST /api/auth/change-password') && accountRoutes.includes('POST /api/auth/set-password'), accountRoutes.join(', '));
    const invitation = await call(app.url, 'POST', `/api/orgs/${A}/invitations`, { cookie: cred.session.headers.cookie, body: { email: 'invitee-of-a@example.test', role: 'admin' } });
    assert.equal(invitation.status, 201, invitation.text);
    const bodies: Record<string, unknown> = {
      'POST /api/auth/change-password': { current_password: person.password, new_password: 'taken over by a token' },
      'POST /api/auth/set-password': { new_password: 'taken over by a token' },
    };
    const targets = [...accountRoutes.map((r) => ({ op: r, path: r.split(' ')[1] })), { op: 'POST /api/invitations/{token}/accept', path: `/api/invitations/${invitation.body.token}/accept` }];
    const before = await snapshot();
    const wrong: string[] = [];
    for (const name of ['apiKey', 'impersonation', 'orgToken', 'instanceToken', 'endUserToken']) {
      for (const { op, path } of targets) {
        const method = op.split(' ')[0];
        const res = await fetch(`${app.url}${path}`, {
          method, redirect: 'manual',
          headers: { ...cred[name].headers, 'x-org-id': A, 'x-space-id': sA, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
          body: method === 'POST' ? JSON.stringify(bodies[op] ?? {}) : undefined,
        });
        if (res.status !== 401) wrong.push(`${name} ${op}: ${res.status} ${await res.text()}`);
        else await res.body?.cancel();
      }
    }
    assert.deepEqual(wrong, []);
    assert.equal(await snapshot(), before);
    // the password is the one the person chose
    const signIn = await call(app.url, 'POST', '/api/auth/sign-in/email', { body: { email: person.email, password: person.password } });
    assert.equal(signIn.status, 200, signIn.text);
  });

  test('refusals of an authenticated caller carry Service-Version (issue 30, item 8)', async () => {
    const { key } = await aKey(pool(), { orgId: A, spaceId: sA, userId: person.userId, scopes: [UNRELATED] });
    for (const res of [
      await call(app.url, 'GET', '/api/runs', { key }),
      await call(app.url, 'GET', '/api/runs', { key, org: C }),
      await call(app.url, 'GET', '/api/runs', { key, headers: { 'service-version': 'yesterday' } }),
      await call(app.url, 'GET', '/api/proxies', { key }),
    ]) {
      assert.ok([200, 400, 403].includes(res.status), res.text);
      assert.match(res.headers.get('service-version') ?? '', /^\d{4}-\d{2}-\d{2}$/, `${res.status} ${res.text}`);
    }
  });
});

describe('credential matrix', () => {
  test('no protected operation of the built table (core and modules) lacks a declared need', () => {
    assert.ok(routes.filter(isProtected).length > 100, 'the table was built');
    assert.deepEqual(undeclaredRoutes(routes).map((r) => `${r.method.toUpperCase()} ${r.path}`), []);
  });

  test('the OpenAPI document states every operation\'s need and publishes the end-user allowlist', async () => {
    const doc = (await call(app.url, 'GET', '/api/openapi.json')).body;
    const bearer: string = doc.components.securitySchemes.bearer.description;
    for (const scope of SPACE_TOKEN_SCOPES) assert.ok(bearer.includes(scope), `the allowlist names ${scope}`);
    const missing: string[] = [];
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        if (!op || typeof op !== 'object' || !Array.isArray(op.security) || op.security.length === 0) continue;
        if (path.startsWith('/api/auth/')) continue;
        if (typeof op['x-permission'] !== 'string') missing.push(`${method.toUpperCase()} ${path}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  test('every operation × delegated credential × {own, other organization}: refused unless the grant meets the need; nothing changed', async () => {
    const before = await snapshot();
    const cases = routes.filter(isProtected).flatMap((r) => ['apiKey', 'impersonation', 'orgToken', 'instanceToken', 'endUserToken'].flatMap((name) => (['own', 'other'] as const).map((org) => ({ r, name, org }))));
    const wrong: string[] = [];
    let allowedSeen = 0;
    await inParallel(cases, 16, async ({ r, name, org }) => {
      const out = await send(r, org, cred[name].headers);
      const allowed = expectedAllowed(r, name, org);
      if (allowed) allowedSeen++;
      if (out.status >= 500) wrong.push(`${name} ${org} ${r.method.toUpperCase()} ${r.path}: ${out.status} ${out.code ?? ''}`);
      else if (refused(out) === allowed) wrong.push(`${name} ${org} ${r.method.toUpperCase()} ${r.path}: expected ${allowed ? 'allowed' : 'refused'}, got ${out.status} ${out.code ?? ''}`);
    });
    assert.deepEqual(wrong, []);
    assert.ok(allowedSeen >= 10, `the matrix also exercised allowed cases (${allowedSeen})`);
    assert.equal(await snapshot(), before, 'a refused request changed nothing in either organization');
    // the impersonating key's allowed requests were acted on for the end-user (each one logged)
    const logged = await pool().query(`SELECT count(*)::int AS n FROM impersonation_log WHERE end_user_id = 'eu_matrix_impersonated'`);
    assert.ok(logged.rows[0].n > 0, 'the impersonation row reached handlers as the end-user');
  });

  test('the session (the owner of both) is refused nowhere, in either organization', async () => {
    // destructive operations last and one by one: they may delete what the others use
    // (GET /api/models/openrouter asks the public OpenRouter catalog: no call leaves loopback here)
    const all = routes.filter((r) => isProtected(r) && r.path !== '/api/models/openrouter').flatMap((r) => (['own', 'other'] as const).map((org) => ({ r, org })));
    const last = (x: { r: RouteDef<any, any, any> }) => x.r.method === 'delete' ? (x.r.path === '/api/orgs/{orgId}' ? 2 : 1) : 0;
    const wrong: string[] = [];
    const check = async ({ r, org }: { r: RouteDef<any, any, any>; org: 'own' | 'other' }) => {
      const out = await send(r, org, cred.session.headers);
      if (out.status >= 500 || refused(out)) wrong.push(`session ${org} ${r.method.toUpperCase()} ${r.path}: ${out.status} ${out.code ?? ''}`);
    };
    await inParallel(all.filter((x) => last(x) === 0), 16, check);
    for (const x of all.filter((x) => last(x) > 0).sort((a, b) => last(a) - last(b))) await check(x);
    assert.deepEqual(wrong, []);
  });
});
