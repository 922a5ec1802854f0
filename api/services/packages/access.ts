// Who may do what to a package. Permissions follow the package type (agent → agents:*, skill →
// skills:*, mcp-server → mcp-servers:*, integration → integrations:*).
//
// Reading: a package is readable when it lives or is placed in the space the caller acts in and
// the caller holds <type>:read there, or when the caller holds <type>:read in its home space.
// Writing: authority is the home space: the caller's <type>:write (or :delete) there. A session
// holds whatever its roles give it in the home space; an API key (or any credential pinned to one
// space) holds nothing outside its space, so it writes only packages homed in its own space.
// A package the caller cannot read answers 404, never 403.
import type { Config } from '../../../lib/config.ts';
import type { PackageType } from '../../../lib/afps/index.ts';
import { isPermission, type OrgRole, type Permission } from '../../../lib/permissions.ts';
import { problem } from '../../../lib/problem.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import type { Database } from '../../../db/client.ts';
import type { RequestContext } from '../../context.ts';
import { computePermissions } from '../access.ts';
import type { Queryable } from './store.ts';

export type PackageAction = 'read' | 'write' | 'delete';

const RESOURCE: Record<PackageType, string> = {
  agent: 'agents',
  skill: 'skills',
  'mcp-server': 'mcp-servers',
  integration: 'integrations',
};

export function packagePermission(type: PackageType, action: PackageAction): Permission {
  return `${RESOURCE[type]}:${action}` as Permission;
}

export interface Caller {
  userId: string;
  orgRole: OrgRole;
  /** the one space a pinned credential (API key) acts in */
  pinnedSpaceId?: string;
  /** a delegated credential's ceiling (key or token scopes): permissions anywhere are cut to them */
  keyScopes?: ReadonlySet<string>;
  /** permissions per space, computed once per request */
  known: Map<string, Promise<ReadonlySet<Permission>>>;
}

/** A space scope with what package services need to judge the caller and read settings. */
export interface PackageScope extends SpaceScope {
  caller: Caller;
  config: Config;
}

export function callerOf(ctx: RequestContext): Caller {
  const p = ctx.principal;
  if (!p || !ctx.org) throw new Error('package caller requested without an authenticated organization context');
  const known = new Map<string, Promise<ReadonlySet<Permission>>>();
  // the space the pipeline resolved keeps the permissions it computed (role preview included)
  if (ctx.space) known.set(ctx.space.id, Promise.resolve(ctx.permissions));
  return {
    userId: p.userId,
    orgRole: ctx.org.role,
    pinnedSpaceId: p.boundSpaceId,
    keyScopes: p.ceiling,
    known,
  };
}

/** The package scope of a request acting in `spaceId` (default: the request's space). */
export function packageScopeOf(ctx: RequestContext, deps: { config: Config; database: Pick<Database, 'pool' | 'db'> }, spaceId?: string): PackageScope {
  const p = ctx.principal;
  const space = spaceId ?? ctx.space?.id;
  if (!p || !ctx.org || !space) throw new Error('package scope requested without organization and space');
  return {
    pool: deps.database.pool,
    db: deps.database.db,
    orgId: ctx.org.id,
    spaceId: space,
    actor: { userId: p.userId, apiKeyId: p.apiKeyId, endUserId: ctx.endUserId },
    caller: callerOf(ctx),
    config: deps.config,
  };
}

async function loadSpacePermissions(q: Queryable, orgId: string, caller: Caller, spaceId: string): Promise<ReadonlySet<Permission>> {
  if (caller.pinnedSpaceId && caller.pinnedSpaceId !== spaceId) return new Set();
  const { rows } = await q.query(
    `SELECT s.id, s.kind, s.owner_user_id, sm.role_key, sr.permissions
       FROM spaces s
       LEFT JOIN space_members sm ON sm.space_id = s.id AND sm.user_id = $3
       LEFT JOIN space_roles sr ON sr.org_id = s.org_id AND sr.key = sm.role_key
      WHERE s.org_id = $1 AND s.id = $2`,
    [orgId, spaceId, caller.userId],
  );
  const row = rows[0];
  if (!row) return new Set();
  const { permissions, spaceMember } = computePermissions({
    orgId, orgRole: caller.orgRole, orgApiVersion: null, orgDeleting: false,
    spaceId: row.id, spaceKind: row.kind, spaceOwnerUserId: row.owner_user_id, spaceRoleKey: row.role_key,
    customRolePermissions: row.permissions,
  }, caller.userId);
  if (!spaceMember) return new Set();
  if (!caller.keyScopes) return permissions;
  return new Set([...permissions].filter((perm) => caller.keyScopes!.has(perm) && isPermission(perm)));
}

/** The caller's permissions in a space of the organization (empty when it holds no role there). */
export function permissionsIn(scope: PackageScope, spaceId: string): Promise<ReadonlySet<Permission>> {
  let found = scope.caller.known.get(spaceId);
  if (!found) {
    found = loadSpacePermissions(scope.pool, scope.orgId, scope.caller, spaceId);
    scope.caller.known.set(spaceId, found);
  }
  return found;
}

export async function holds(scope: PackageScope, spaceId: string, permission: Permission): Promise<boolean> {
  return (await permissionsIn(scope, spaceId)).has(permission);
}

/** What the access checks need of a package row. */
export interface AccessFacts {
  id: string;
  type: PackageType;
  homeSpaceId: string;
  /** placement in the scope's space: null when not placed there */
  placedActive: boolean | null;
}

export async function canRead(scope: PackageScope, pkg: AccessFacts): Promise<boolean> {
  const read = packagePermission(pkg.type, 'read');
  const here = pkg.homeSpaceId === scope.spaceId || pkg.placedActive !== null;
  if (here && (await holds(scope, scope.spaceId, read))) return true;
  return holds(scope, pkg.homeSpaceId, read);
}

export function notFound(id: string) {
  return problem('package_not_found', { detail: `No package ${id} is reachable.` });
}

/** The caller must hold <type>:<action> in the package's home space (it already can read it). */
export async function requireHomeAuthority(scope: PackageScope, pkg: AccessFacts, action: PackageAction): Promise<void> {
  const permission = packagePermission(pkg.type, action);
  if (!(await holds(scope, pkg.homeSpaceId, permission))) {
    throw problem('forbidden', { detail: `This operation needs ${permission} in the home space of ${pkg.id}.` });
  }
}
