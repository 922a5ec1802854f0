// Every protected operation declares what it needs (api/route.ts, permission): the authority rule
// (middleware/authenticate.ts) checks that need against the credential before the handler, so an
// operation without one would escape it. The walker below is what the router runs when it mounts a
// route; these cases prove it catches an undeclared route, and that the core table has none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRouteMounter } from '../../api/router.ts';
import { ok, route, undeclaredRoutes, type RouteDef } from '../../api/route.ts';
import { allRoutes } from '../../api/routes/index.ts';
import type { AppDeps } from '../../api/deps.ts';
import { isPermission, neededPermissions, type Need } from '../../lib/permissions.ts';

const handler = async () => ok({});
const declared = route({ method: 'get', path: '/api/things', summary: 'x', tag: 't', permission: 'agents:read', responses: {}, handler });
const undeclared = route({ method: 'get', path: '/api/other-things', summary: 'x', tag: 't', responses: {}, handler });
const legacyNull = { ...declared, path: '/api/null-things', permission: null as unknown as Need };
const publicRoute = route({ method: 'get', path: '/health', summary: 'x', tag: 't', stage: 'public', responses: {}, handler });

test('the walker names a protected route without a declared permission, and one declared null', () => {
  assert.deepEqual(undeclaredRoutes([declared, undeclared, legacyNull, publicRoute]).map((r) => r.path), ['/api/other-things', '/api/null-things']);
});

test('the router refuses to mount a protected route that declares no permission', () => {
  const deps = { config: { API_BODY_LIMIT_BYTES: 1024, ERROR_TYPE_BASE: 'x', TRUSTED_ORIGINS: [] }, cache: {}, authCache: {}, database: { pool: {} } } as unknown as AppDeps;
  const mount = createRouteMounter(deps, { oidc: {} });
  assert.throws(() => mount(undeclared), /GET \/api\/other-things is protected but declares no permission/);
  assert.doesNotThrow(() => mount(declared));
  assert.doesNotThrow(() => mount(publicRoute));
});

test('every protected route of the core table declares a need made of catalog permissions', () => {
  const routes: RouteDef<any, any, any>[] = allRoutes();
  assert.deepEqual(undeclaredRoutes(routes).map((r) => `${r.method} ${r.path}`), []);
  for (const r of routes) {
    if ((r.stage ?? 'protected') !== 'protected') continue;
    for (const p of neededPermissions(r.permission!)) assert.ok(isPermission(p), `${r.method} ${r.path} needs ${p}, not in the catalog`);
  }
});
