// Invitations to an organization. Creating one returns its token once; with mail enabled
// (SMTP_URL) the accept link is also e-mailed to the invited address, and `delivery` records the
// outcome (sent, failed, or disabled when no mail is configured and the inviter passes the link on).
// Accepting needs a signed-in account with the invited address; the new member gets their personal
// space.
import { randomBytes } from 'node:crypto';
import type { OrgScope } from '../../db/tenant.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { newId } from '../../lib/ids.ts';
import type { Logger } from '../../lib/log.ts';
import { templated, type Mailer } from '../../lib/mail.ts';
import type { OrgRole } from '../../lib/permissions.ts';
import { problem } from '../../lib/problem.ts';
import { changeIdentity, isUniqueViolation, type IdentityOrgScope, type IdentityStore } from './identity-change.ts';
import { ensurePersonalSpace, joinOrganization } from './organizations.ts';
import type { SignedInSession } from './sessions.ts';

const INVITATION_TTL_MS = 7 * 24 * 60 * 60 * 1000;

export type InvitationStatus = 'pending' | 'accepted' | 'cancelled' | 'expired';
/** sending: the e-mail is on its way (or the process stopped while sending it) */
export type InvitationDelivery = 'sending' | 'sent' | 'failed' | 'disabled';

export interface Invitation {
  id: string;
  email: string;
  role: OrgRole;
  status: InvitationStatus;
  delivery: InvitationDelivery;
  invited_by: string | null;
  expiresAt: string;
  createdAt: string;
}

interface InvitationRow {
  id: string;
  email: string;
  role: OrgRole;
  status: InvitationStatus;
  delivery: InvitationDelivery;
  invited_by: string | null;
  expires_at: Date;
  created_at: Date;
}

const COLUMNS = 'id, email, role, status, delivery, invited_by, expires_at, created_at';

function effectiveStatus(row: { status: InvitationStatus; expires_at: Date }): InvitationStatus {
  return row.status === 'pending' && row.expires_at.getTime() <= Date.now() ? 'expired' : row.status;
}

function toInvitation(row: InvitationRow): Invitation {
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    status: effectiveStatus(row),
    delivery: row.delivery,
    invited_by: row.invited_by,
    expiresAt: row.expires_at.toISOString(),
    createdAt: row.created_at.toISOString(),
  };
}

export async function createInvitation(
  scope: IdentityOrgScope, actorRole: OrgRole, input: { email: string; role: OrgRole }, delivery: InvitationDelivery = 'disabled',
): Promise<Invitation & { token: string }> {
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
        `INSERT INTO invitations (id, org_id, email, role, token_hash, invited_by, expires_at, delivery) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
        [newId('inv'), scope.orgId, email, input.role, sha256Hex(token), scope.actor.userId, new Date(Date.now() + INVITATION_TTL_MS), delivery],
      );
      return { ...toInvitation(rows[0]), token };
    });
  } catch (err) {
    if (isUniqueViolation(err, 'invitations_pending_uq')) throw problem('invitation_already_pending', { detail: 'An invitation to this address is pending: cancel it first to send another.' });
    throw err;
  }
}

/** The path of the accept link: signed in with the invited address, POST to it. */
export const acceptPath = (token: string) => `/api/invitations/${encodeURIComponent(token)}/accept`;

function invitationMessage(mailer: Mailer, to: string, orgName: string, role: OrgRole, token: string, expiresAt: string) {
  return templated(
    to,
    `You are invited to join ${orgName}`,
    [
      `You have been invited to join the organization "${orgName}" as ${role} on ${mailer.baseUrl}.`,
      `Sign in (or sign up) with this address, ${to}, then accept the invitation with the link below. It can be used once and expires on ${expiresAt}.`,
    ],
    { url: `${mailer.baseUrl}${acceptPath(token)}`, label: 'Accept the invitation' },
    'If you did not expect this invitation, ignore this message.',
  );
}

/**
 * Creates the invitation and, with mail enabled, e-mails its link. The invitation is kept whatever
 * the delivery: a failed send is recorded (delivery: failed) and answered with invitation_failed.
 */
export async function inviteByEmail(
  scope: IdentityOrgScope, actorRole: OrgRole, input: { email: string; role: OrgRole }, mailer: Mailer, log: Logger,
): Promise<Invitation & { token: string }> {
  const invitation = await createInvitation(scope, actorRole, input, mailer.enabled ? 'sending' : 'disabled');
  if (!mailer.enabled) return invitation;
  const { rows } = await scope.pool.query('SELECT name FROM organizations WHERE id = $1', [scope.orgId]);
  try {
    await mailer.send(invitationMessage(mailer, invitation.email, rows[0]?.name ?? 'an organization', invitation.role, invitation.token, invitation.expiresAt));
  } catch (err) {
    const e = err as { code?: string; message?: string };
    await scope.pool.query(`UPDATE invitations SET delivery = 'failed' WHERE id = $1 AND org_id = $2`, [invitation.id, scope.orgId]);
    log.warn('invitation e-mail not sent', { invitationId: invitation.id, orgId: scope.orgId, code: e.code, reason: e.message });
    throw problem('invitation_failed', {
      detail: `The invitation ${invitation.id} was created but its e-mail could not be sent (${e.message ?? 'unknown error'}). It stays pending with delivery "failed": cancel it and invite again, or pass the link on another way.`,
    });
  }
  await scope.pool.query(`UPDATE invitations SET delivery = 'sent' WHERE id = $1 AND org_id = $2`, [invitation.id, scope.orgId]);
  return { ...invitation, delivery: 'sent' };
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
