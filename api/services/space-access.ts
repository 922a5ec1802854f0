// Who can see a space and what they hold in it. Spaces routes carry the space in the path (the
// organization comes from X-Org-Id or the key's binding): a space the caller cannot see answers
// 404, like any resource out of reach. An API key reaches only the space it is pinned to, with
// its scopes intersected with what its creator holds there.
import type { OrgScope } from '../../db/tenant.ts';
import { ALL_PERMISSIONS, capForOrgRole, isPermission, orgRoleCoversSpaces, presetRole, type OrgRole, type Permission } from '../../lib/permissions.ts';
import { problem } from '../../lib/problem.ts';
import type { RequestContext } from '../context.ts';

export interface Space {
  id: string;
  name: string;
  kind: 'team' | 'personal';
  isDefault: boolean;
  /** personal spaces: their owner (null once orphaned) */
  ownerUserId: string | null;
  /** the caller's space role, when they hold one */
  roleKey: string | null;
  /** team spaces: private (members only) or org (organization members may see and join it); null for personal spaces */
  visibility: SpaceVisibility | null;
  /** team spaces: the role a member joining by themselves receives; null for personal spaces */
  default_role: string | null;
  /** who may fork a package out of this space: members (whoever reads it) or restricted (<type>:write here) */
  package_copy: PackageCopy;
  /** false: an organization-visible team space the caller does not reach yet and may join */
  is_member: boolean;
  createdAt: string;
  updatedAt: string;
}

export type SpaceVisibility = 'private' | 'org';
export type PackageCopy = 'members' | 'restricted';

export interface SpaceAccess {
  space: Space;
  /** what the caller holds in this space (space-level: organization-wide rights are not mixed in) */
  permissions: ReadonlySet<Permission>;
  orgRole: OrgRole;
  /** the caller sees the space only because it is visible to the organization: they may join it */
  joinable: boolean;
}

export interface SpaceRow {
  id: string;
  name: string;
  kind: 'team' | 'personal';
  is_default: boolean;
  owner_user_id: string | null;
  role_key: string | null;
  visibility: SpaceVisibility;
  default_role: string;
  package_copy: PackageCopy;
  /** computed by listings: false for a joinable organization-visible space */
  is_member?: boolean;
  created_at: Date;
  updated_at: Date;
}

/** The columns of a space row as toSpace reads them (s = spaces). */
export const SPACE_COLUMNS = 's.id, s.name, s.kind, s.is_default, s.owner_user_id, s.visibility, s.default_role, s.package_copy, s.created_at, s.updated_at';
export const SPACE_RETURNING = 'id, name, kind, is_default, owner_user_id, visibility, default_role, package_copy, created_at, updated_at';

export function toSpace(row: SpaceRow): Space {
  const team = row.kind === 'team';
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    isDefault: row.is_default,
    ownerUserId: row.kind === 'personal' ? row.owner_user_id : null,
    roleKey: row.role_key,
    visibility: team ? row.visibility : null,
    default_role: team ? row.default_role : null,
    package_copy: row.package_copy,
    is_member: row.is_member ?? true,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * Whether an organization-visible team space shows itself to this person (holding no role in it):
 * members of the organization see it; guests see only the spaces they are given, and a credential
 * pinned to one space sees no other.
 */
export function joinableBy(orgRole: OrgRole, space: { kind: string; visibility: string }, boundSpaceId?: string): boolean {
  return space.kind === 'team' && space.visibility === 'org' && orgRole === 'member' && boundSpaceId === undefined;
}

/**
 * The permissions a person holds in a space, or null when they cannot see it. Personal spaces
 * belong to their owner alone (owners and admins may see an orphaned one, to remove it); owners
 * and admins hold everything in every team space; others hold their space role, capped by their
 * organization role.
 */
export function spaceLevelPermissions(
  orgRole: OrgRole,
  space: { kind: string; owner_user_id: string | null },
  userId: string,
  roleKey: string | null,
  customPermissions: readonly string[] | null,
): Permission[] | null {
  if (space.kind === 'personal') {
    if (space.owner_user_id === userId) return [...ALL_PERMISSIONS];
    if (space.owner_user_id === null && orgRoleCoversSpaces(orgRole)) return [...ALL_PERMISSIONS];
    return null;
  }
  if (orgRoleCoversSpaces(orgRole)) return [...ALL_PERMISSIONS];
  if (!roleKey) return null;
  const preset = presetRole(roleKey);
  return capForOrgRole(orgRole, preset ? preset.permissions : (customPermissions ?? []).filter(isPermission));
}

/** The space role key a role preview asks for (X-View-As: member:viewer), if any. */
function previewedSpaceRole(ctx: RequestContext): string | undefined {
  const raw = ctx.viewAs;
  if (!raw) return undefined;
  const i = raw.indexOf(':');
  return i >= 0 ? raw.slice(i + 1) : undefined;
}

export async function reachSpace(scope: OrgScope, ctx: RequestContext, spaceId: string): Promise<SpaceAccess> {
  const principal = ctx.principal;
  const orgRole = ctx.org?.role;
  if (!principal || !orgRole) throw problem('unauthorized');
  const notFound = () => problem('not_found', { detail: 'No such space.' });
  if (principal.boundSpaceId !== undefined && principal.boundSpaceId !== spaceId) throw notFound();

  const preview = previewedSpaceRole(ctx);
  const { rows } = await scope.pool.query(
    `SELECT ${SPACE_COLUMNS},
            COALESCE($4, sm.role_key) AS role_key, sr.permissions AS custom_permissions
       FROM spaces s
       LEFT JOIN space_members sm ON sm.space_id = s.id AND sm.user_id = $3
       LEFT JOIN space_roles sr ON sr.org_id = s.org_id AND sr.key = COALESCE($4, sm.role_key)
      WHERE s.id = $1 AND s.org_id = $2`,
    [spaceId, scope.orgId, principal.userId, preview ?? null],
  );
  const row = rows[0];
  if (!row) throw notFound();
  let held = spaceLevelPermissions(orgRole, row, principal.userId, row.role_key, row.custom_permissions);
  // A key always reaches the space it is pinned to; its creator's lost role leaves it nothing there.
  if (!held && principal.boundSpaceId === spaceId) held = [];
  // An organization-visible space shows itself (and nothing in it) to a member who may join it.
  const joinable = !held && !preview && joinableBy(orgRole, row, principal.boundSpaceId);
  if (joinable) held = [];
  if (!held) throw notFound();
  let permissions = new Set<Permission>(held);
  if (principal.ceiling) {
    const granted = principal.ceiling;
    permissions = new Set(held.filter((p) => granted.has(p)));
  }
  return { space: toSpace({ ...row, is_member: !joinable }), permissions, orgRole, joinable };
}

export function requireSpacePermission(access: SpaceAccess, permission: Permission): void {
  if (!access.permissions.has(permission)) {
    throw problem('forbidden', { detail: `This operation needs the ${permission} permission in this space.` });
  }
}
