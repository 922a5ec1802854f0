// Every route of the built app (core, public and module routes) has an entry in CASES: either an
// isolation probe or a stated reason it holds no other tenant's data. A probe furnishes tenant A
// (organization A, space s1) and proves that organization B and A's other space s2 (its owner, a
// member of both spaces and a member of s2 alone, each acting in s2) can neither read, change nor
// list A's resources: by-id routes answer 404 (a key may be refused with 403 for a permission no
// key holds), lists never show A's items while A's own caller sees them, and runner routes refuse
// a run's signature for another run. Declaring a route without an entry fails the suite.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createApp } from '../../api/app.ts';
import { loadModules } from '../../api/modules/index.ts';
import type { RouteDef } from '../../api/route.ts';
import { allRoutes } from '../../api/routes/index.ts';
import { runConnectionSigningPayload } from '../../lib/run-connection-signing.ts';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { call, type CallOptions } from '../support/http.ts';
import { aTenant, orgSnapshot, type Tenant } from '../support/tenant-world.ts';
import { CASES, fillPath, keyOf, type Probe } from './tenant-isolation-cases.ts';

let app: TestApp;
let routes: RouteDef[];
let a: Tenant;
let b: Tenant;

before(async () => {
  app = await startTestApp();
  const modules = await loadModules(app.deps.config.MODULES, app.deps);
  routes = createApp(app.deps, { routes: allRoutes(), modules, log: app.deps.log, version: 'test' }).routes;
  a = await aTenant(app);
  b = await aTenant(app);
});
after(() => app.close());

interface Caller {
  name: string;
  opts: CallOptions;
  /** an API key: a route needing a permission no key holds may answer 403 forbidden instead */
  key: boolean;
}

/** The credentials of one side: a key when keys may call the route, and a session. */
function side(name: string, key: string, cookie: string, org: string, space: string, route: RouteDef): Caller[] {
  const out: Caller[] = [{ name: `${name} session`, opts: { cookie, org, space }, key: false }];
  if (!route.sessionOnly) out.unshift({ name: `${name} key`, opts: { key }, key: true });
  return out;
}

const ownSide = (r: RouteDef) => side('A', a.ownerKey1, a.ownerCookie, a.orgId, a.s1, r);
const otherOrg = (r: RouteDef) => side('organization B', b.ownerKey1, b.ownerCookie, b.orgId, b.s1, r);
function otherSpace(r: RouteDef, c: Probe): Caller[] {
  if (c.orgLevel) return [];
  const member = side("s2's member", a.s2MemberKey, a.s2MemberCookie, a.orgId, a.s2, r);
  if (c.s2Member) return member;
  return [
    ...side("A's owner in s2", a.ownerKey2, a.ownerCookie, a.orgId, a.s2, r),
    ...side('a member of s1 and s2, in s2', a.bothMemberKey, a.bothMemberCookie, a.orgId, a.s2, r),
    ...member,
  ];
}

test('every route of the built app has a tenant-isolation case here', () => {
  const missing = routes.map(keyOf).filter((k) => !CASES[k]);
  assert.deepEqual(missing, [], 'add each route to CASES in tenant-isolation-matrix.test.ts: a probe, or { exempt: <reason> }');
  const known = new Set(routes.map(keyOf));
  assert.deepEqual(Object.keys(CASES).filter((k) => !known.has(k)), [], 'CASES names routes that no longer exist');
});

test("neither organization B nor A's other space reads, changes or lists A's resources", async () => {
  const before = await orgSnapshot(app, a.orgId);
  const wrong: string[] = [];
  const probes = routes.flatMap((r) => {
    const c = CASES[keyOf(r)];
    return c && !('exempt' in c) && !('runner' in c) ? [{ r, c }] : [];
  });
  assert.ok(probes.length > 50, 'the route table has probed routes');

  // A's owner session sees the resource: the refusals below are about the tenant, not a missing row.
  for (const { r, c } of probes) {
    if (r.method !== 'get') continue;
    const path = c.ownPath ? c.ownPath(a) : fillPath(r.path, a);
    for (const caller of ownSide(r).filter((x) => !x.key)) {
      const res = await call(app.url, 'GET', path + (c.query ?? ''), caller.opts);
      if (res.status >= 400) wrong.push(`${keyOf(r)} (${caller.name}): A's own caller got ${res.status} ${res.body?.code ?? ''}`);
      else if (c.lists && !res.text.includes(`"${c.lists(a)}"`)) wrong.push(`${keyOf(r)} (${caller.name}): A's own list misses its item`);
    }
  }

  for (const { r, c } of probes) {
    const name = keyOf(r);
    const callers = [...otherOrg(r), ...otherSpace(r, c)];
    const method = r.method.toUpperCase();
    if (r.path.includes('{') || c.byBody) {
      const path = fillPath(r.path, a) + (c.query ?? '');
      for (const caller of callers) {
        const res = await call(app.url, method, path, { ...caller.opts, body: r.body ? (c.body?.(a) ?? {}) : undefined });
        if (res.status === 400 && ['validation_failed', 'invalid_request'].includes(res.body?.code)) {
          wrong.push(`${name} (${caller.name}): refused before the lookup (${res.body.code} ${res.body.param ?? ''}); give the case a body or query`);
          continue;
        }
        const refused = res.status === 404 || (caller.key && res.status === 403 && res.body?.code === 'forbidden');
        const listWithout = c.lists && res.status === 200 && !res.text.includes(`"${c.lists(a)}"`);
        if (!refused && !listWithout) wrong.push(`${name} (${caller.name}): ${res.status} ${res.body?.code ?? res.text.slice(0, 80)}`);
      }
    }
    if (c.lists && !r.path.includes('{')) {
      for (const caller of callers) {
        const res = await call(app.url, 'GET', r.path, caller.opts);
        if (res.status !== 200) wrong.push(`${name} (${caller.name}): its own list answered ${res.status} ${res.body?.code ?? ''}`);
        else if (res.text.includes(`"${c.lists(a)}"`)) wrong.push(`${name} (${caller.name}): lists A's ${c.lists(a)}`);
      }
    }
    if (c.ownPath) {
      for (const caller of otherOrg(r).filter((x) => !x.key)) {
        const res = await call(app.url, 'GET', c.ownPath(b), caller.opts);
        if (res.status !== 200) wrong.push(`${name} (${caller.name}): its own list answered ${res.status} ${res.body?.code ?? ''}`);
        else if (res.text.includes(`"${c.lists!(a)}"`)) wrong.push(`${name} (${caller.name}): lists A's ${c.lists!(a)}`);
      }
    }
  }
  assert.deepEqual(wrong, []);
  assert.deepEqual(await orgSnapshot(app, a.orgId), before, "organization A's rows are unchanged");
});

test('organization-level resources (a webhook and an OAuth client, authority from an organization permission): organization B neither reads, changes nor lists them', async () => {
  const before = await orgSnapshot(app, a.orgId);
  const orgLevel = { ...a, webhookId: a.orgWebhookId, oauthClientId: a.orgOauthClientId };
  const byId = routes.filter((r) => /^\/api\/(webhooks|oauth\/clients)\/\{id\}/.test(r.path));
  assert.ok(byId.length >= 9, byId.map(keyOf).join(', '));
  const wrong: string[] = [];
  for (const r of byId) {
    const path = fillPath(r.path, orgLevel);
    if (r.method === 'get') {
      const own = await call(app.url, 'GET', path, { cookie: a.ownerCookie, org: a.orgId, space: a.s1 });
      if (own.status !== 200) wrong.push(`${keyOf(r)}: A's owner got ${own.status} ${own.body?.code ?? ''}`);
    }
    const c = CASES[keyOf(r)] as Probe;
    for (const caller of otherOrg(r)) {
      const res = await call(app.url, r.method.toUpperCase(), path, { ...caller.opts, body: r.body ? (c.body?.(a) ?? {}) : undefined });
      const refused = res.status === 404 || (caller.key && res.status === 403 && res.body?.code === 'forbidden');
      if (!refused) wrong.push(`${keyOf(r)} (${caller.name}): ${res.status} ${res.body?.code ?? res.text.slice(0, 80)}`);
    }
  }
  // the lists: A's owner sees both (org-level rows are the webhook list's default), B's callers neither
  for (const [list, id] of [['/api/webhooks', a.orgWebhookId], ['/api/oauth/clients', a.orgOauthClientId]] as const) {
    const own = await call(app.url, 'GET', list, { cookie: a.ownerCookie, org: a.orgId, space: a.s1 });
    if (!own.text.includes(`"${id}"`)) wrong.push(`GET ${list}: A's owner misses ${id} (${own.status})`);
    for (const caller of otherOrg({ sessionOnly: false } as RouteDef)) {
      const res = await call(app.url, 'GET', list === '/api/webhooks' ? `${list}?all=true` : list, caller.opts);
      if (res.status !== 200 || res.text.includes(`"${id}"`)) wrong.push(`GET ${list} (${caller.name}): ${res.status}, lists ${id}: ${res.text.includes(`"${id}"`)}`);
    }
  }
  assert.deepEqual(wrong, []);
  assert.deepEqual(await orgSnapshot(app, a.orgId), before, "organization A's rows are unchanged");
});

test("a runner holding one run's secret is refused every other run's events, checkpoints, approvals, history, memory, files and connections", async () => {
  const runnerRoutes = routes.filter((r) => (CASES[keyOf(r)] as { runner?: true } | undefined)?.runner);
  assert.equal(runnerRoutes.length, 10);
  // a connection no run of either tenant bound: the run's own secret reaches the lookup, which refuses it
  const probeConnection = '3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d';
  const wrong: string[] = [];
  const others = [{ who: 'a run of organization B', id: b.runId }, { who: "a run of A's other space", id: a.s2RunId }];
  for (const r of runnerRoutes) {
    const method = r.method.toUpperCase();
    const raw = method !== 'POST' ? ''
      : r.path.endsWith('/files') ? JSON.stringify({ name: 'probe.txt', mimeType: 'text/plain', content: '' })
        : r.path.endsWith('/approvals') ? JSON.stringify({ tool: 'acme_probe__api_call', arguments: {}, timeout_seconds: 60 })
        : JSON.stringify({ sequence: 1, at: new Date().toISOString(), type: 'heartbeat' });
    const pathOf = (runId: string) => r.path.includes('{connectionId}')
      ? `${r.path.replace('{id}', runId).replace('{connectionId}', probeConnection)}?integration=@acme/probe`
      : r.path.replace('{id}', runId);
    // a connection route's signature covers its action, connection and integration, not a body
    const signs = r.path.includes('{connectionId}')
      ? runConnectionSigningPayload(r.path.endsWith('/refresh') ? 'refresh' : 'read', probeConnection, '@acme/probe')
      : raw;
    const send = (runId: string, secret: string) => call(app.url, method, pathOf(runId), {
      headers: { ...signedRunEventHeaders(secret, signs), ...(raw ? { 'content-type': 'application/json' } : {}) },
      rawBody: raw || undefined,
    });
    const own = await send(a.runId, a.runSecret);
    const expected = (CASES[keyOf(r)] as { own?: { status: number; code: string } }).own;
    if (expected ? own.status !== expected.status || own.body?.code !== expected.code : own.status >= 300) {
      wrong.push(`${keyOf(r)}: the run's own secret got ${own.status} ${own.body?.code ?? ''}`);
    }
    for (const other of others) {
      const res = await send(other.id, a.runSecret);
      if (res.status !== 401) wrong.push(`${keyOf(r)} for ${other.who} signed with run ${a.runId}'s secret: ${res.status} ${res.text.slice(0, 80)}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test("a run's history and memory hold only runs of its own space and organization", async () => {
  const get = (what: string) => call(app.url, 'GET', `/internal/runs/${a.runId}/${what}`, { headers: signedRunEventHeaders(a.runSecret, '') });
  const history = await get('history');
  const memory = await get('memory');
  assert.equal(history.status, 200);
  assert.equal(memory.status, 200);
  assert.ok(memory.text.includes(`fact of ${a.runId}`), 'the run recalls its own pin');
  for (const foreign of [a.s2RunId, b.runId]) {
    assert.ok(!history.text.includes(foreign), `history shows ${foreign}`);
    assert.ok(!memory.text.includes(foreign), `memory shows ${foreign}`);
  }
});
