// Members of a team space and their space roles. Owners and admins already hold every team
// space through their organization role, so giving them a space role is refused; personal spaces
// take no members.
import type pg from 'pg';
import { orgRoleCoversSpaces, type OrgRole } from '../../lib/permissions.ts';
import { problem } from '../../lib/problem.ts';
import { changeIdentity, type IdentityOrgScope } from './identity-change.ts';
import { SPACE_COLUMNS, joinableBy, requireSpacePermission, type SpaceAccess, type SpaceVisibility } from './space-access.ts';
import { roleExists } from './space-roles.ts';

export interface SpaceMember {
  userId: string;
  email: string;
  name: string;
  orgRole: OrgRole;
  roleKey: string;
  createdAt: string;
}

function memberNotFound() {
  return problem('not_found', { detail: 'No such member in this space.' });
}

async function assertRole(client: pg.PoolClient, orgId: string, roleKey: string): Promise<void> {
  if (!(await roleExists(client, orgId, roleKey))) {
    throw problem('validation_failed', { detail: `No space role "${roleKey}".`, errors: [{ field: 'role_key', code: 'invalid_value', message: 'Not a preset or a role of this organization.' }] });
  }
}

export async function listSpaceMembers(scope: IdentityOrgScope, access: SpaceAccess): Promise<SpaceMember[]> {
  requireSpacePermission(access, 'space-members:read');
  const { rows } = await scope.pool.query(
    `SELECT sm.user_id, u.email, u.name, om.role AS org_role, sm.role_key, sm.created_at
       FROM space_members sm
       JOIN users u ON u.id = sm.user_id
       JOIN org_members om ON om.org_id = sm.org_id AND om.user_id = sm.user_id
      WHERE sm.space_id = $1 AND sm.org_id = $2
      ORDER BY sm.created_at, sm.user_id`,
    [access.space.id, scope.orgId],
  );
  return rows.map((r) => ({ userId: r.user_id, email: r.email, name: r.name, orgRole: r.org_role, roleKey: r.role_key, createdAt: r.created_at.toISOString() }));
}

export async function addSpaceMember(scope: IdentityOrgScope, access: SpaceAccess, input: { userId: string; roleKey: string }): Promise<SpaceMember> {
  requireSpacePermission(access, 'space-members:write');
  if (access.space.kind === 'personal') throw problem('personal_space_has_no_members', { detail: 'A personal space belongs to its owner alone.' });
  return changeIdentity(scope, async (client) => {
    const member = await client.query(
      'SELECT om.role, u.email, u.name FROM org_members om JOIN users u ON u.id = om.user_id WHERE om.org_id = $1 AND om.user_id = $2 FOR SHARE OF om',
      [scope.orgId, input.userId],
    );
    const m = member.rows[0];
    if (!m) throw problem('not_found', { detail: 'No such member in the organization.' });
    if (orgRoleCoversSpaces(m.role)) throw problem('redundant_space_role', { detail: `As an organization ${m.role}, this member already holds every team space.` });
    await assertRole(client, scope.orgId, input.roleKey);
    const { rows } = await client.query(
      `INSERT INTO space_members (space_id, user_id, org_id, role_key) VALUES ($1, $2, $3, $4)
       ON CONFLICT (space_id, user_id) DO NOTHING RETURNING created_at`,
      [access.space.id, input.userId, scope.orgId, input.roleKey],
    );
    if (!rows[0]) throw problem('space_member_exists', { detail: 'This person is already a member of the space: change their role with PATCH.' });
    return { userId: input.userId, email: m.email, name: m.name, orgRole: m.role, roleKey: input.roleKey, createdAt: rows[0].created_at.toISOString() };
  });
}

export async function updateSpaceMember(scope: IdentityOrgScope, access: SpaceAccess, userId: string, roleKey: string): Promise<SpaceMember> {
  requireSpacePermission(access, 'space-members:write');
  return changeIdentity(scope, async (client) => {
    await assertRole(client, scope.orgId, roleKey);
    const { rows } = await client.query(
      `UPDATE space_members sm SET role_key = $4 FROM org_members om, users u
        WHERE sm.space_id = $1 AND sm.org_id = $2 AND sm.user_id = $3
          AND om.org_id = sm.org_id AND om.user_id = sm.user_id AND u.id = sm.user_id
        RETURNING sm.created_at, om.role AS org_role, u.email, u.name`,
      [access.space.id, scope.orgId, userId, roleKey],
    );
    const r = rows[0];
    if (!r) throw memberNotFound();
    return { userId, email: r.email, name: r.name, orgRole: r.org_role, roleKey, createdAt: r.created_at.toISOString() };
  });
}

export async function removeSpaceMember(scope: IdentityOrgScope, access: SpaceAccess, userId: string): Promise<void> {
  requireSpacePermission(access, 'space-members:write');
  await changeIdentity(scope, async (client) => {
    const { rowCount } = await client.query('DELETE FROM space_members WHERE space_id = $1 AND org_id = $2 AND user_id = $3', [access.space.id, scope.orgId, userId]);
    if (!rowCount) throw memberNotFound();
  });
}

/** What the joiner was shown of the space: the join happens only if both still hold. */
export interface ShownAccess {
  visibility: SpaceVisibility;
  default_role: string;
}

/**
 * A member of the organization joins an organization-visible team space by themselves, with its
 * default role. The space row is read FOR SHARE in the transaction that inserts the membership, so
 * a concurrent change of its visibility or default role (an UPDATE of that row) waits for this
 * join or is seen by it: what the joiner was shown is compared with what they receive, and a
 * difference answers 409 space_access_changed with nothing changed. A space the caller cannot
 * see (another organization's, a private one, any space for a guest) is 404.
 */
export async function joinSpace(scope: IdentityOrgScope, caller: { userId: string; boundSpaceId?: string }, spaceId: string, shown: ShownAccess): Promise<SpaceMember> {
  const notFound = () => problem('not_found', { detail: 'No such space.' });
  return changeIdentity(scope, async (client) => {
    const { rows } = await client.query(
      `SELECT ${SPACE_COLUMNS}, sm.role_key, om.role AS org_role, u.email, u.name AS user_name
         FROM spaces s
         JOIN org_members om ON om.org_id = s.org_id AND om.user_id = $3
         JOIN users u ON u.id = om.user_id
         LEFT JOIN space_members sm ON sm.space_id = s.id AND sm.user_id = $3
        WHERE s.id = $1 AND s.org_id = $2
        FOR SHARE OF s, om`,
      [spaceId, scope.orgId, caller.userId],
    );
    const row = rows[0];
    if (!row) throw notFound();
    if (row.kind === 'personal') {
      if (row.owner_user_id === caller.userId) throw problem('personal_space_has_no_members', { detail: 'Your personal space is yours alone; nobody joins it.' });
      throw notFound();
    }
    if (orgRoleCoversSpaces(row.org_role)) throw problem('redundant_space_role', { detail: `As an organization ${row.org_role}, you already hold every team space.` });
    if (row.role_key !== null) throw problem('space_member_exists', { detail: 'You are already a member of this space.' });
    if (!joinableBy(row.org_role, row, caller.boundSpaceId)) throw notFound();
    if (row.visibility !== shown.visibility || row.default_role !== shown.default_role) {
      throw problem('space_access_changed', {
        detail: `The space's access changed since it was shown to you: it is now ${row.visibility}-visible with default role "${row.default_role}". Read it again and join if you still want to.`,
      });
    }
    const inserted = await client.query(
      `INSERT INTO space_members (space_id, user_id, org_id, role_key) VALUES ($1, $2, $3, $4)
       ON CONFLICT (space_id, user_id) DO NOTHING RETURNING created_at`,
      [spaceId, caller.userId, scope.orgId, row.default_role],
    );
    if (!inserted.rows[0]) throw problem('space_member_exists', { detail: 'You are already a member of this space.' });
    return { userId: caller.userId, email: row.email, name: row.user_name, orgRole: row.org_role, roleKey: row.default_role, createdAt: inserted.rows[0].created_at.toISOString() };
  });
}
