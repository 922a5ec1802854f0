// Every organization role (members and guests with each space preset) against every key scope
// that has a route today: a key carrying exactly that scope is refused with 403 forbidden exactly
// when its creator does not hold the permission. Expectations come from lib/permissions.ts, the
// routes from the route table, so new routes and scopes join the matrix by themselves.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RouteDef } from '../../api/route.ts';
import { allRoutes } from '../../api/routes/index.ts';
import {
  KEY_SCOPES, ORG_ROLE_PERMISSIONS, SPACE_ROLE_PRESETS, capForOrgRole, orgRoleCoversSpaces,
  type OrgRole, type Permission,
} from '../../lib/permissions.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, type BuiltOrg } from '../support/builders.ts';
import { call } from '../support/http.ts';

interface Representative {
  method: string;
  path: string;
}

/** Routes whose permission is checked in the handler against the space in the path. */
const SPACE_CHECKED: Partial<Record<Permission, Representative>> = {
  'spaces:delete': { method: 'DELETE', path: '/api/spaces/{spaceId}' },
};

/** One route per key scope: declared permission first, preferring a GET without path parameters. */
function representatives(): Map<string, Representative> {
  const rank = (r: RouteDef) => (r.method === 'get' ? 0 : 2) + (r.path.includes('{') ? 1 : 0);
  const out = new Map<string, Representative>();
  const candidates = allRoutes().filter((r) => (r.stage ?? 'protected') === 'protected' && r.permission && !r.sessionOnly);
  for (const scope of KEY_SCOPES) {
    const found = candidates.filter((r) => r.permission === scope).sort((a, b) => rank(a) - rank(b))[0];
    const chosen = found ? { method: found.method.toUpperCase(), path: found.path } : SPACE_CHECKED[scope];
    if (chosen) out.set(scope, chosen);
  }
  return out;
}

/** What a person with this organization role and space role holds in the space, per the catalog. */
function held(orgRole: OrgRole, preset: string | null): Set<string> {
  if (orgRoleCoversSpaces(orgRole)) return new Set([...ORG_ROLE_PERMISSIONS[orgRole], ...KEY_SCOPES]);
  const spacePerms = preset ? capForOrgRole(orgRole, SPACE_ROLE_PRESETS.find((p) => p.key === preset)!.permissions) : [];
  return new Set([...ORG_ROLE_PERMISSIONS[orgRole], ...spacePerms]);
}

const PROFILES: Array<{ orgRole: OrgRole; preset: string | null }> = [
  { orgRole: 'owner', preset: null },
  { orgRole: 'admin', preset: null },
  ...SPACE_ROLE_PRESETS.map((p) => ({ orgRole: 'member' as const, preset: p.key })),
  { orgRole: 'guest', preset: null },
  ...SPACE_ROLE_PRESETS.map((p) => ({ orgRole: 'guest' as const, preset: p.key })),
];

let app: TestApp;
let org: BuiltOrg;
before(async () => {
  app = await startTestApp();
  org = await anOrg(app.deps.database.pool);
});
after(() => app.close());

function fill(path: string): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => (name === 'spaceId' ? org.spaceId : name === 'id' ? 'eu_absent' : 'absent'));
}

describe('permission matrix', () => {
  const reps = representatives();
  test('the matrix covers the scope groups that have routes', (t) => {
    assert.ok(reps.has('spaces:read') && reps.has('end-users:read'));
    t.diagnostic(`scopes without a route yet: ${KEY_SCOPES.filter((s) => !reps.has(s)).join(', ') || 'none'}`);
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
});
