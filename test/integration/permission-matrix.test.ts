// Every organization role (members and guests with each space preset) against every key scope of
// the spec that has a route in the built app: a key carrying exactly that scope is refused with
// 403 forbidden exactly when its creator does not hold the permission. Expectations come from the
// spec's scope table (test/fixtures/spec/scopes.json, the spec's own extract) and the role rules
// written below, never from lib/permissions.ts, so a wrong catalog entry fails here.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createApp } from '../../api/app.ts';
import { loadModules } from '../../api/modules/index.ts';
import type { RouteDef } from '../../api/route.ts';
import { allRoutes } from '../../api/routes/index.ts';
import { KEY_SCOPES } from '../../lib/permissions.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, aSession, type BuiltOrg } from '../support/builders.ts';
import { call } from '../support/http.ts';

const SPEC_TABLE: Array<{ group: string; scope: string }> = JSON.parse(readFileSync(new URL('../fixtures/spec/scopes.json', import.meta.url), 'utf8'));
// Scopes this platform adds to the spec's table, each documented in the guides (docs/) beside the feature
// it guards, and placed in the catalog after the spec scope named here.
const EXTENSIONS: Array<{ group: string; scope: string; after: string }> = [
  { group: 'Runs', scope: 'runs:approve', after: 'runs:cancel' }, // human approval of tool calls
];
const SPEC = SPEC_TABLE.flatMap((row) => [row, ...EXTENSIONS.filter((e) => e.after === row.scope).map(({ group, scope }) => ({ group, scope }))]);
const SCOPES = SPEC.map((s) => s.scope);

// The copy is the spec's extract verbatim; where the shared spec folder sits beside the checkout
// (a developer's machine, CI), the two must not drift apart.
test('the scope table used here is the shared spec\'s, byte for byte', () => {
  const shared = new URL('../../../shared/spec/scopes.json', import.meta.url);
  if (!existsSync(shared)) return;
  assert.equal(readFileSync(new URL('../fixtures/spec/scopes.json', import.meta.url), 'utf8'), readFileSync(shared, 'utf8'));
});

// The role rules. The organization roles are the spec's four; owners and admins cover every team
// space (409 redundant_space_role). What acts on the organization rather than a space (models and
// proxies: "organization-level routes such as /api/models need X-Org-Id only"; org-level webhooks;
// the organization's MCP endpoint) comes from the organization role, never from a space role: a
// key pinned to a space must not reach further than its creator's session there.
const ORG_LEVEL = new Set(SCOPES.filter((s) =>
  SPEC.find((x) => x.scope === s)!.group === 'Models and proxies' || s === 'org-webhooks:read' || s.startsWith('mcp:')));
const SPACE_SCOPES = SCOPES.filter((s) => !ORG_LEVEL.has(s));
const action = (s: string) => s.split(':')[1]!;
const isRead = (s: string) => action(s) === 'read' || action(s) === 'read-all';

/** What the organization role alone holds, outside any space role. */
const ORG_ROLE_HOLDS: Record<string, readonly string[]> = {
  owner: SCOPES,
  admin: SCOPES,
  member: ['models:read', 'proxies:read', 'spaces:read', 'spaces:write', 'mcp:read', 'mcp:invoke'],
  guest: ['spaces:read'],
};

/** The space role presets: what each holds in its space. */
const PRESET_HOLDS: Record<string, readonly string[]> = {
  space_admin: SPACE_SCOPES,
  // an editor works in the space but neither deletes nor changes the space itself
  editor: SPACE_SCOPES.filter((s) => action(s) !== 'delete' && s !== 'spaces:write'),
  // a runner also decides its runs' approval requests (issue 33: the roles that run agents hold runs:approve)
  runner: SPACE_SCOPES.filter((s) => isRead(s) || ['agents:run', 'runs:cancel', 'runs:approve', 'integrations:connect', 'schedules:write'].includes(s)),
  viewer: SPACE_SCOPES.filter((s) => isRead(s) && s !== 'runs:read-all'),
};

/** A guest holds only the reading part of whatever space role it is given. */
function held(orgRole: string, preset: string | null): Set<string> {
  const space = preset ? PRESET_HOLDS[preset]!.filter((s) => orgRole !== 'guest' || isRead(s)) : [];
  return new Set([...ORG_ROLE_HOLDS[orgRole]!, ...space]);
}

const PROFILES: Array<{ orgRole: 'owner' | 'admin' | 'member' | 'guest'; preset: string | null }> = [
  { orgRole: 'owner', preset: null },
  { orgRole: 'admin', preset: null },
  { orgRole: 'member', preset: null },
  ...Object.keys(PRESET_HOLDS).map((p) => ({ orgRole: 'member' as const, preset: p })),
  { orgRole: 'guest', preset: null },
  ...Object.keys(PRESET_HOLDS).map((p) => ({ orgRole: 'guest' as const, preset: p })),
];

interface Representative {
  method: string;
  path: string;
}

/** Routes whose permission is checked in the handler against the space in the path. */
const SPACE_CHECKED: Record<string, Representative> = {
  'spaces:delete': { method: 'DELETE', path: '/api/spaces/{spaceId}' },
};

/** One route per spec scope: declared permission first, preferring a GET without path parameters. */
function representatives(routes: RouteDef[]): Map<string, Representative> {
  const rank = (r: RouteDef) => (r.method === 'get' ? 0 : 2) + (r.path.includes('{') ? 1 : 0);
  const out = new Map<string, Representative>();
  const candidates = routes.filter((r) => (r.stage ?? 'protected') === 'protected' && r.permission && !r.sessionOnly && r.authority !== 'resource');
  for (const scope of SCOPES) {
    const found = candidates.filter((r) => r.permission === scope).sort((a, b) => rank(a) - rank(b))[0];
    const chosen = found ? { method: found.method.toUpperCase(), path: found.path } : SPACE_CHECKED[scope];
    if (chosen) out.set(scope, chosen);
  }
  return out;
}

let app: TestApp;
let org: BuiltOrg;
let reps: Map<string, Representative>;
before(async () => {
  app = await startTestApp();
  org = await anOrg(app.deps.database.pool);
  const modules = await loadModules(app.deps.config.MODULES, app.deps);
  reps = representatives(createApp(app.deps, { routes: allRoutes(), modules, log: app.deps.log, version: 'test' }).routes);
});
after(() => app.close());

function fill(path: string): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => (name === 'spaceId' ? org.spaceId : name === 'org' ? org.orgId : name === 'id' ? 'eu_absent' : 'absent'));
}

describe('permission matrix', () => {
  test("the key scope catalog is the spec's scope table, in its order", () => {
    assert.deepEqual([...KEY_SCOPES], SCOPES);
  });

  test('the matrix covers the scope groups that have routes', (t) => {
    for (const s of ['spaces:read', 'end-users:read', 'runs:read', 'agents:run', 'models:write']) assert.ok(reps.has(s), `no route for ${s}`);
    t.diagnostic(`spec scopes without a route yet: ${SCOPES.filter((s) => !reps.has(s)).join(', ') || 'none'}`);
  });

  for (const profile of PROFILES) {
    const label = profile.preset ? `${profile.orgRole} with ${profile.preset}` : profile.orgRole;
    test(`${label}: 403 forbidden exactly where the permission is missing`, async () => {
      const pool = app.deps.database.pool;
      const userId = profile.orgRole === 'owner'
        ? org.ownerId
        : await aMember(pool, org.orgId, profile.orgRole, profile.preset ? { spaceId: org.spaceId, roleKey: profile.preset } : undefined);
      const holds = held(profile.orgRole, profile.preset);
      const wrong: string[] = [];
      for (const [scope, rep] of reps) {
        const { key } = await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId, scopes: [scope] });
        const body = rep.method === 'GET' || rep.method === 'DELETE' ? undefined : {};
        const res = await call(app.url, rep.method, fill(rep.path), { key, body });
        const refused = res.status === 403 && res.body?.code === 'forbidden';
        if (refused === holds.has(scope)) wrong.push(`${scope} via ${rep.method} ${rep.path}: expected ${holds.has(scope) ? 'allowed' : '403'}, got ${res.status} ${res.body?.code ?? ''}`);
      }
      assert.deepEqual(wrong, []);
    });
  }

  test('X-View-As with an organization-defined space role previews exactly that role', async () => {
    const pool = app.deps.database.pool;
    await pool.query(`INSERT INTO space_roles (id, org_id, key, name, permissions) VALUES ('role_preview', $1, 'run_reader', 'Run reader', '{runs:read}')`, [org.orgId]);
    const cookie = (await aSession(pool, org.ownerId)).cookie;
    const as = (viewAs: string, path: string) => call(app.url, 'GET', path, { cookie, org: org.orgId, space: org.spaceId, headers: { 'x-view-as': viewAs } });
    const runs = await as('member:run_reader', '/api/runs');
    assert.equal(runs.status, 200, `runs:read held through the previewed role: ${runs.text}`);
    const endUsers = await as('member:run_reader', '/api/end-users');
    assert.equal(endUsers.status, 403, 'end-users:read is not in the previewed role');
    assert.equal((await as('guest:run_reader', '/api/runs')).status, 200, 'a guest keeps the reading part');
    const unknown = await as('member:no_such_role', '/api/runs');
    assert.equal(unknown.status, 403, 'a role key the organization does not define grants nothing');
  });
});
