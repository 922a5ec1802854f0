// Spaces of an organization: team spaces (shared, with members holding space roles) and personal
// spaces (one per member, created on joining; only their name can change; removed when their
// owner leaves the organization).
import type { OrgScope } from '../../db/tenant.ts';
import { orgRoleCoversSpaces, type OrgRole } from '../../lib/permissions.ts';
import { newId } from '../../lib/ids.ts';
import { problem } from '../../lib/problem.ts';
import type { Principal } from '../context.ts';
import { changeIdentity, type IdentityOrgScope } from './identity-change.ts';
import {
  SPACE_COLUMNS, SPACE_RETURNING as RETURNING, requireSpacePermission, toSpace, type PackageCopy, type Space, type SpaceAccess, type SpaceVisibility,
} from './space-access.ts';
import { assertJoinRole } from './space-roles.ts';
import { assertSpaceRemovable, removeSpace } from './space-removal.ts';

/**
 * The spaces the caller can see: every team space for owners and admins, the team spaces they
 * are a member of otherwise, plus their own personal space. Organization members (not guests)
 * also see the organization-visible team spaces they may join (is_member false). An API key sees
 * only its own space.
 */
export async function listSpaces(scope: OrgScope, principal: Principal, orgRole: OrgRole): Promise<Space[]> {
  const { rows } = await scope.pool.query(
    `SELECT ${SPACE_COLUMNS}, sm.role_key, (s.kind = 'personal' OR $3 OR sm.user_id IS NOT NULL) AS is_member
       FROM spaces s
       LEFT JOIN space_members sm ON sm.space_id = s.id AND sm.user_id = $2
      WHERE s.org_id = $1
        AND ($4::text IS NULL OR s.id = $4)
        AND CASE WHEN s.kind = 'personal' THEN s.owner_user_id = $2 OR (s.owner_user_id IS NULL AND $3)
                 ELSE $3 OR sm.user_id IS NOT NULL OR ($5 AND s.visibility = 'org') END
      ORDER BY s.is_default DESC, s.kind DESC, s.created_at, s.id`,
    [scope.orgId, principal.userId, orgRoleCoversSpaces(orgRole), principal.boundSpaceId ?? null, orgRole === 'member' && principal.boundSpaceId === undefined],
  );
  return rows.map(toSpace);
}

/** A new team space; a creator whose organization role does not cover every space becomes its space admin. */
export async function createSpace(scope: IdentityOrgScope, orgRole: OrgRole, input: { name: string }): Promise<Space> {
  return changeIdentity(scope, async (client) => {
    const id = newId('spc');
    const { rows } = await client.query(
      `INSERT INTO spaces (id, org_id, name, kind) VALUES ($1, $2, $3, 'team') RETURNING ${RETURNING}, NULL::text AS role_key`,
      [id, scope.orgId, input.name.trim()],
    );
    if (!orgRoleCoversSpaces(orgRole)) {
      await client.query('INSERT INTO space_members (space_id, user_id, org_id, role_key) VALUES ($1, $2, $3, $4)', [id, scope.actor.userId, scope.orgId, 'space_admin']);
      rows[0].role_key = 'space_admin';
    }
    return toSpace(rows[0]);
  });
}

export interface SpacePatch {
  name?: string;
  isDefault?: true;
  visibility?: SpaceVisibility;
  default_role?: string;
  package_copy?: PackageCopy;
}

export async function updateSpace(scope: IdentityOrgScope, access: SpaceAccess, patch: SpacePatch): Promise<Space> {
  requireSpacePermission(access, 'spaces:write');
  const { space } = access;
  const teamOnly = (['isDefault', 'visibility', 'default_role', 'package_copy'] as const).filter((k) => patch[k] !== undefined);
  if (space.kind === 'personal' && teamOnly.length) {
    throw problem('personal_space_immutable', { detail: `Only the name of a personal space can change (not ${teamOnly.map((k) => (k === 'isDefault' ? 'is_default' : k)).join(', ')}).` });
  }
  if (patch.isDefault && !orgRoleCoversSpaces(access.orgRole)) {
    throw problem('forbidden', { detail: 'Only organization owners and admins choose the default space.' });
  }
  return changeIdentity(scope, async (client) => {
    // the role stays what it is (FOR SHARE) until this commits; joiners wait on the space row
    if (patch.default_role !== undefined) await assertJoinRole(client, scope.orgId, patch.default_role, 'default_role');
    if (patch.isDefault) await client.query('UPDATE spaces SET is_default = false, updated_at = now() WHERE org_id = $1 AND is_default AND id <> $2', [scope.orgId, space.id]);
    const { rows } = await client.query(
      `UPDATE spaces SET name = COALESCE($3, name), is_default = is_default OR $4, visibility = COALESCE($6, visibility),
              default_role = COALESCE($7, default_role), package_copy = COALESCE($8, package_copy), updated_at = now()
        WHERE id = $1 AND org_id = $2
        RETURNING ${RETURNING}, $5::text AS role_key, $9::boolean AS is_member`,
      [space.id, scope.orgId, patch.name?.trim() ?? null, patch.isDefault === true, space.roleKey,
        patch.visibility ?? null, patch.default_role ?? null, patch.package_copy ?? null, space.is_member],
    );
    if (!rows[0]) throw problem('not_found', { detail: 'No such space.' });
    return toSpace(rows[0]);
  });
}

export async function deleteSpace(scope: IdentityOrgScope, access: SpaceAccess): Promise<void> {
  requireSpacePermission(access, 'spaces:delete');
  const { space } = access;
  if (space.isDefault) throw problem('default_space_not_deletable', { detail: 'Choose another default space first.' });
  if (space.kind === 'personal' && space.ownerUserId !== null) {
    throw problem('personal_space_not_deletable', { detail: 'A personal space is removed when its owner leaves the organization.' });
  }
  await changeIdentity(scope, async (client) => {
    const locked = await client.query('SELECT is_default FROM spaces WHERE id = $1 AND org_id = $2 FOR UPDATE', [space.id, scope.orgId]);
    if (!locked.rows[0]) throw problem('not_found', { detail: 'No such space.' });
    if (locked.rows[0].is_default) throw problem('default_space_not_deletable', { detail: 'Choose another default space first.' });
    await assertSpaceRemovable(client, scope.orgId, space.id);
    await removeSpace(client, scope.orgId, space.id);
  });
}

/**
 * An orphaned personal space (its owner left while it still held active runs or homed packages)
 * becomes a team space that owners and admins hold and can give members, keys and end-users.
 * Only for personal spaces (space_not_personal) that have lost their owner
 * (personal_space_not_orphaned); organization owners and admins only.
 */
export async function convertOrphanedSpace(scope: IdentityOrgScope, access: SpaceAccess): Promise<Space> {
  requireSpacePermission(access, 'spaces:write');
  if (!orgRoleCoversSpaces(access.orgRole)) throw problem('forbidden', { detail: 'Only organization owners and admins convert a space.' });
  const refuse = (row: { kind: string; owner_user_id: string | null }) => {
    if (row.kind !== 'personal') throw problem('space_not_personal', { detail: 'This is a team space already: only an orphaned personal space is converted.' });
    if (row.owner_user_id !== null) throw problem('personal_space_not_orphaned', { detail: 'This personal space still has its owner: it is converted only once they have left the organization.' });
  };
  refuse({ kind: access.space.kind, owner_user_id: access.space.ownerUserId });
  return changeIdentity(scope, async (client) => {
    const locked = await client.query('SELECT kind, owner_user_id FROM spaces WHERE id = $1 AND org_id = $2 FOR UPDATE', [access.space.id, scope.orgId]);
    if (!locked.rows[0]) throw problem('not_found', { detail: 'No such space.' });
    refuse(locked.rows[0]);
    const { rows } = await client.query(
      `UPDATE spaces SET kind = 'team', updated_at = now() WHERE id = $1 AND org_id = $2 RETURNING ${RETURNING}, NULL::text AS role_key`,
      [access.space.id, scope.orgId],
    );
    return toSpace(rows[0]);
  });
}
