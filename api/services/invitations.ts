// Invitations to an organization. No mail is sent by the platform: creating an invitation returns
// its token once, and the inviter passes the accept link on. Accepting needs a signed-in account
// with the invited address; the new member gets their personal space.
import { randomBytes } from 'node:crypto';
import type { OrgScope } from '../../db/tenant.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { newId } from '../../lib/ids.ts';
import type { OrgRole } from '../../lib/permissions.ts';
import { problem } from '../../lib/problem.ts';
import { changeIdentity, isUniqueViolation, type IdentityOrgScope, type IdentityStore } from './identity-change.ts';
import { ensurePersonalSpace, joinOrganization } from './organizations.ts';
import type { SignedInSession } from './sessions.ts';

const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;

export type InvitationStatus = 'pending' | 'accepted' | 'cancelled' | 'expired';

export interface Invitation {
  id: string;
  email: string;
  role: OrgRole;
  status: InvitationStatus;
  invitedBy: string | null;
  expiresAt: string;
  createdAt: string;
}

interface InvitationRow {
  id: string;
  email: string;
  role: OrgRole;
  status: InvitationStatus;
  invited_by: string | null;
  expires_at: Date;
  created_at: Date;
}

const COLUMNS = 'id, email, role, status, invited_by, expires_at, created_at';

function effectiveStatus(row: { status: InvitationStatus; expires_at: Date }): InvitationStatus {
  return row.status === 'pending' && row.expires_at.getTime() <= Date.now() ? 'expired' : row.status;
}

function toInvitation(row: InvitationRow): Invitation {
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    status: effectiveStatus(row),
    invitedBy: row.invited_by,
    expiresAt: row.expires_at.toISOString(),
    createdAt: row.created_at.toISOString(),
  };
}

export async function createInvitation(scope: IdentityOrgScope, actorRole: OrgRole, input: { email: string; role: OrgRole }): Promise<Invitation & { token: string }> {
  if (input.role === 'owner' && actorRole !== 'owner') throw problem('forbidden', { detail: 'Only owners can invite owners.' });
  const email = input.email.trim();
  const member = await scope.pool.query(
    'SELECT 1 FROM org_members om JOIN users u ON u.id = om.user_id WHERE om.org_id = $1 AND lower(u.email) = lower($2)',
    [scope.orgId, email],
  );
  if (member.rowCount) {
    throw problem('validation_failed', { detail: 'This person is already a member.', errors: [{ field: 'email', code: 'invalid_value', message: 'Already a member of the organization.' }] });
  }
  const token = randomBytes(32).toString('base64url');
  try {
    return await changeIdentity(scope, async (client) => {
      // A pending invitation past its expiry no longer blocks a new one.
      await client.query(
        `UPDATE invitations SET status = 'expired' WHERE org_id = $1 AND lower(email) = lower($2) AND status = 'pending' AND expires_at <= now()`,
        [scope.orgId, email],
      );
      const { rows } = await client.query(
        `INSERT INTO invitations (id, org_id, email, role, token_hash, invited_by, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${COLUMNS}`,
        [newId('inv'), scope.orgId, email, input.role, sha256Hex(token), scope.actor.userId, new Date(Date.now() + INVITATION_TTL_MS)],
      );
      return { ...toInvitation(rows[0]), token };
    });
  } catch (err) {
    if (isUniqueViolation(err, 'invitations_pending_uq')) throw problem('invitation_already_pending', { detail: 'An invitation to this address is pending: cancel it first to send another.' });
    throw err;
  }
}

export async function listInvitations(scope: OrgScope): Promise<Invitation[]> {
  const { rows } = await scope.pool.query(`SELECT ${COLUMNS} FROM invitations WHERE org_id = $1 ORDER BY created_at DESC, id`, [scope.orgId]);
  return rows.map(toInvitation);
}

/** Cancels a pending invitation; cancelling again, or an expired one, changes nothing. */
export async function cancelInvitation(scope: IdentityOrgScope, invitationId: string): Promise<void> {
  await changeIdentity(scope, async (client) => {
    const { rows } = await client.query('SELECT status FROM invitations WHERE id = $1 AND org_id = $2 FOR UPDATE', [invitationId, scope.orgId]);
    if (!rows[0]) throw problem('not_found', { detail: 'No such invitation.' });
    if (rows[0].status === 'accepted') throw problem('invitation_accepted', { detail: 'The invitation was accepted: remove the member instead.' });
    await client.query(`UPDATE invitations SET status = 'cancelled' WHERE id = $1 AND status = 'pending'`, [invitationId]);
  });
}

export interface Acceptance {
  orgId: string;
  role: OrgRole;
  personalSpaceId: string;
}

export async function acceptInvitation(store: IdentityStore, session: SignedInSession, token: string): Promise<Acceptance> {
  return changeIdentity(store, async (client) => {
    const { rows } = await client.query(
      `SELECT i.id, i.org_id, i.email, i.role, i.status, i.expires_at, o.id AS live_org, o.deleting_at
         FROM invitations i LEFT JOIN organizations o ON o.id = i.org_id
        WHERE i.token_hash = $1 FOR UPDATE OF i`,
      [sha256Hex(token)],
    );
    const inv = rows[0];
    if (!inv) throw problem('invitation_not_found', { detail: 'No invitation has this token.' });
    if (!inv.live_org || inv.deleting_at) throw problem('org_not_found', { detail: 'The organization of this invitation no longer exists.' });
    const status = effectiveStatus(inv);
    if (status === 'cancelled') throw problem('invitation_cancelled', { detail: 'This invitation was cancelled.' });
    if (status === 'accepted') throw problem('invitation_accepted', { detail: 'This invitation was already accepted.' });
    if (status === 'expired') throw problem('invitation_expired', { detail: 'This invitation has expired: ask for a new one.' });
    if (inv.email.toLowerCase() !== session.email.toLowerCase()) {
      throw problem('email_mismatch', { detail: 'This invitation was issued to another email address: sign in with that address.' });
    }
    await client.query(`UPDATE invitations SET status = 'accepted' WHERE id = $1`, [inv.id]);
    const existing = await client.query('SELECT role FROM org_members WHERE org_id = $1 AND user_id = $2', [inv.org_id, session.userId]);
    if (existing.rows[0]) {
      return { orgId: inv.org_id, role: existing.rows[0].role, personalSpaceId: await ensurePersonalSpace(client, inv.org_id, session.userId) };
    }
    const { personalSpaceId } = await joinOrganization(client, inv.org_id, session.userId, inv.role);
    return { orgId: inv.org_id, role: inv.role, personalSpaceId };
  });
}
