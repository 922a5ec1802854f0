// Resolving a credential to who is calling and what they may do: one query per credential,
// joining the credential, the organization role and the space role.
import type pg from 'pg';
import {
  ORG_ROLE_PERMISSIONS,
  capForOrgRole,
  isPermission,
  orgRoleCoversSpaces,
  presetRole,
  ALL_PERMISSIONS,
  type OrgRole,
  type Permission,
} from '../../lib/permissions.ts';

export interface MembershipFacts {
  orgId: string | null;
  orgRole: OrgRole | null;
  orgApiVersion: string | null;
  orgDeleting: boolean;
  spaceId: string | null;
  spaceKind: 'team' | 'personal' | null;
  spaceOwnerUserId: string | null;
  spaceRoleKey: string | null;
  customRolePermissions: string[] | null;
}

export interface ApiKeyFacts extends MembershipFacts {
  keyId: string;
  createdBy: string;
  scopes: string[];
  expiresAt: Date | null;
  revokedAt: Date | null;
}

export interface SessionFacts extends MembershipFacts {
  sessionId: string;
  userId: string;
  email: string;
  realm: string;
  expiresAt: Date;
  extendedAt: Date;
}

export const MEMBERSHIP_COLUMNS = `
  om.role AS org_role, o.id AS org_id, o.api_version AS org_api_version, (o.deleting_at IS NOT NULL) AS org_deleting,
  s.id AS space_id, s.kind AS space_kind, s.owner_user_id AS space_owner, sm.role_key AS space_role_key,
  sr.permissions AS custom_permissions`;

export function membership(row: Record<string, unknown>): MembershipFacts {
  return {
    orgId: (row.org_id as string) ?? null,
    orgRole: (row.org_role as OrgRole) ?? null,
    orgApiVersion: (row.org_api_version as string) ?? null,
    orgDeleting: Boolean(row.org_deleting),
    spaceId: (row.space_id as string) ?? null,
    spaceKind: (row.space_kind as 'team' | 'personal') ?? null,
    spaceOwnerUserId: (row.space_owner as string) ?? null,
    spaceRoleKey: (row.space_role_key as string) ?? null,
    customRolePermissions: (row.custom_permissions as string[]) ?? null,
  };
}

export async function loadApiKeyFacts(pool: pg.Pool, keyHash: string): Promise<ApiKeyFacts | null> {
  const { rows } = await pool.query(
    `SELECT k.id, k.created_by, k.scopes, k.expires_at, k.revoked_at, ${MEMBERSHIP_COLUMNS}
       FROM api_keys k
       JOIN organizations o ON o.id = k.org_id
       JOIN spaces s ON s.id = k.space_id AND s.org_id = k.org_id
       LEFT JOIN org_members om ON om.org_id = k.org_id AND om.user_id = k.created_by
       LEFT JOIN space_members sm ON sm.space_id = k.space_id AND sm.user_id = k.created_by
       LEFT JOIN space_roles sr ON sr.org_id = k.org_id AND sr.key = sm.role_key
      WHERE k.key_hash = $1`,
    [keyHash],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    ...membership(row),
    keyId: row.id,
    createdBy: row.created_by,
    scopes: row.scopes,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  };
}

/** orgId and spaceId come from the context headers; either may be absent. */
export async function loadSessionFacts(pool: pg.Pool, tokenHash: string, orgId: string | null, spaceId: string | null): Promise<SessionFacts | null> {
  const { rows } = await pool.query(
    `SELECT ses.id AS session_id, ses.user_id, ses.realm, ses.expires_at, ses.extended_at, u.email, ${MEMBERSHIP_COLUMNS}
       FROM sessions ses
       JOIN users u ON u.id = ses.user_id
       LEFT JOIN org_members om ON om.user_id = ses.user_id AND om.org_id = $2::uuid
       LEFT JOIN organizations o ON o.id = om.org_id
       LEFT JOIN spaces s ON s.id = $3 AND s.org_id = om.org_id
       LEFT JOIN space_members sm ON sm.space_id = s.id AND sm.user_id = ses.user_id
       LEFT JOIN space_roles sr ON sr.org_id = om.org_id AND sr.key = sm.role_key
      WHERE ses.token_hash = $1`,
    [tokenHash, orgId, spaceId],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    ...membership(row),
    sessionId: row.session_id,
    userId: row.user_id,
    email: row.email,
    realm: row.realm,
    expiresAt: row.expires_at,
    extendedAt: row.extended_at,
  };
}

/** A person's roles in an organization and one of its spaces (an OAuth token's stream re-checks with it). */
export async function loadPersonMembership(pool: pg.Pool, userId: string, orgId: string, spaceId: string): Promise<MembershipFacts | null> {
  const { rows } = await pool.query(
    `SELECT ${MEMBERSHIP_COLUMNS}
       FROM org_members om
       JOIN organizations o ON o.id = om.org_id
       LEFT JOIN spaces s ON s.id = $3 AND s.org_id = om.org_id
       LEFT JOIN space_members sm ON sm.space_id = s.id AND sm.user_id = om.user_id
       LEFT JOIN space_roles sr ON sr.org_id = om.org_id AND sr.key = sm.role_key
      WHERE om.user_id = $1 AND om.org_id = $2::uuid`,
    [userId, orgId, spaceId],
  );
  return rows[0] ? membership(rows[0]) : null;
}

export interface ViewAs {
  orgRole: OrgRole;
  spaceRoleKey?: string;
  /** the permissions of the previewed space role when the organization defines it (not a preset) */
  customPermissions?: string[] | null;
}

/**
 * Permissions of a person in the organization and, when a space is named, in that space.
 * `spaceMember` is false when the space was named but the person holds no role in it.
 */
export function computePermissions(facts: MembershipFacts, userId: string, viewAs?: ViewAs): { permissions: Set<Permission>; spaceMember: boolean } {
  const orgRole = viewAs?.orgRole ?? facts.orgRole;
  if (!orgRole) return { permissions: new Set(), spaceMember: false };
  const perms = new Set<Permission>(ORG_ROLE_PERMISSIONS[orgRole]);
  if (!facts.spaceId) return { permissions: perms, spaceMember: false };

  let spacePerms: readonly Permission[] | null = null;
  if (facts.spaceKind === 'personal') {
    // A personal space belongs to its owner alone.
    if (facts.spaceOwnerUserId === userId) spacePerms = ALL_PERMISSIONS;
  } else if (orgRoleCoversSpaces(orgRole)) {
    spacePerms = ALL_PERMISSIONS;
  } else {
    const previewed = viewAs?.spaceRoleKey !== undefined;
    const roleKey = previewed ? viewAs!.spaceRoleKey : facts.spaceRoleKey;
    if (roleKey) {
      const preset = presetRole(roleKey);
      const custom = (previewed ? viewAs!.customPermissions : facts.customRolePermissions)?.filter(isPermission) ?? [];
      spacePerms = capForOrgRole(orgRole, preset ? preset.permissions : custom);
    }
  }
  if (!spacePerms) return { permissions: perms, spaceMember: false };
  for (const p of spacePerms) {
    if (orgRole === 'owner' || orgRole === 'admin' || !p.startsWith('org') ) perms.add(p);
  }
  if (orgRole !== 'owner') perms.delete('org:delete');
  return { permissions: perms, spaceMember: true };
}
