// Members of a team space and their space roles. Owners and admins already hold every team
// space through their organization role, so giving them a space role is refused; personal spaces
// take no members.
import type pg from 'pg';
import { orgRoleCoversSpaces, type OrgRole } from '../../lib/permissions.ts';
import { problem } from '../../lib/problem.ts';
import { changeIdentity, type IdentityOrgScope } from './identity-change.ts';
import { requireSpacePermission, type SpaceAccess } from './space-access.ts';
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
    throw problem('validation_failed', { detail: `No space role "${roleKey}".`, errors: [{ field: 'roleKey', code: 'invalid_value', message: 'Not a preset or a role of this organization.' }] });
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
