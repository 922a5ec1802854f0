// Members of an organization and their roles. The organization always keeps one owner; only
// owners grant, change or remove the owner role. A member who leaves loses their space roles,
// their API keys in the organization are revoked and their personal space goes with them.
import type pg from 'pg';
import type { OrgScope } from '../../db/tenant.ts';
import type { OrgRole } from '../../lib/permissions.ts';
import { problem } from '../../lib/problem.ts';
import { changeIdentity, type IdentityOrgScope } from './identity-change.ts';
import { offboardPersonalSpace } from './space-removal.ts';

export interface OrgMember {
  userId: string;
  email: string;
  name: string;
  role: OrgRole;
  createdAt: string;
}

function toMember(r: { user_id: string; email: string; name: string; role: OrgRole; created_at: Date }): OrgMember {
  return { userId: r.user_id, email: r.email, name: r.name, role: r.role, createdAt: r.created_at.toISOString() };
}

export async function listMembers(scope: OrgScope): Promise<OrgMember[]> {
  const { rows } = await scope.pool.query(
    `SELECT om.user_id, u.email, u.name, om.role, om.created_at
       FROM org_members om JOIN users u ON u.id = om.user_id
      WHERE om.org_id = $1 ORDER BY om.created_at, om.user_id`,
    [scope.orgId],
  );
  return rows.map(toMember);
}

/** Locks the organization's memberships and returns the target's role and how many owners remain. */
async function lockMemberships(client: pg.PoolClient, orgId: string, userId: string): Promise<{ role: OrgRole; owners: number }> {
  const { rows } = await client.query('SELECT user_id, role FROM org_members WHERE org_id = $1 FOR UPDATE', [orgId]);
  const target = rows.find((r) => r.user_id === userId);
  if (!target) throw problem('not_found', { detail: 'No such member in the organization.' });
  return { role: target.role, owners: rows.filter((r) => r.role === 'owner').length };
}

function assertMayTouchOwners(actorRole: OrgRole, targetRole: OrgRole, newRole?: OrgRole): void {
  if (actorRole !== 'owner' && (targetRole === 'owner' || newRole === 'owner')) {
    throw problem('forbidden', { detail: 'Only owners grant, change or remove the owner role.' });
  }
}

export async function changeMemberRole(scope: IdentityOrgScope, actorRole: OrgRole, userId: string, role: OrgRole): Promise<OrgMember> {
  return changeIdentity(scope, async (client) => {
    const target = await lockMemberships(client, scope.orgId, userId);
    assertMayTouchOwners(actorRole, target.role, role);
    if (target.role === 'owner' && role !== 'owner' && target.owners <= 1) {
      throw problem('last_owner', { detail: 'The organization must keep an owner: make someone else owner first.' });
    }
    const { rows } = await client.query(
      `UPDATE org_members om SET role = $3 FROM users u
        WHERE om.org_id = $1 AND om.user_id = $2 AND u.id = om.user_id
        RETURNING om.user_id, u.email, u.name, om.role, om.created_at`,
      [scope.orgId, userId, role],
    );
    return toMember(rows[0]);
  });
}

/** Removes a member (or lets one leave: `actorRole` is then their own). */
export async function removeMember(scope: IdentityOrgScope, actorRole: OrgRole, userId: string): Promise<void> {
  await changeIdentity(scope, async (client) => {
    const target = await lockMemberships(client, scope.orgId, userId);
    if (userId !== scope.actor.userId) assertMayTouchOwners(actorRole, target.role);
    if (target.role === 'owner' && target.owners <= 1) {
      throw problem('last_owner', { detail: 'The organization must keep an owner: make someone else owner first.' });
    }
    await client.query('DELETE FROM space_members WHERE org_id = $1 AND user_id = $2', [scope.orgId, userId]);
    await client.query('UPDATE api_keys SET revoked_at = now() WHERE org_id = $1 AND created_by = $2 AND revoked_at IS NULL', [scope.orgId, userId]);
    await offboardPersonalSpace(client, scope.orgId, userId);
    await client.query('DELETE FROM org_members WHERE org_id = $1 AND user_id = $2', [scope.orgId, userId]);
  });
}
