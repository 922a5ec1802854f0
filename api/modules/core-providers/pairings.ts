// Model-provider pairing. A member holding models:write starts a pairing and receives a one-time
// token (shown once; only its SHA-256 is stored). A tool on the member's own machine that holds the
// provider key redeems it, with no other credential, and the credential is created in the
// organization on the member's behalf. A token is consumed by one conditional UPDATE inside the
// transaction that inserts the credential, so two redemptions racing create one credential.
import type pg from 'pg';
import { inTransaction } from '../../../db/transaction.ts';
import type { OrgScope } from '../../../db/tenant.ts';
import { sha256Hex } from '../../../lib/crypto.ts';
import { newId, randomBase62 } from '../../../lib/ids.ts';
import { ORG_ROLE_PERMISSIONS, type OrgRole } from '../../../lib/permissions.ts';
import { problem } from '../../../lib/problem.ts';
import { inlineTarget, insertCredential, type Credential, type CredentialInput } from './credentials.ts';
import type { ProvidersDeps } from './module-deps.ts';

/** The token's prefix names what it is when it turns up in a shell history or a log. */
export const PAIRING_TOKEN_PREFIX = 'mpp_';
/** 43 base62 characters: about 256 bits. */
const TOKEN_CHARS = 43;
/** Spent pairings stay readable (a UI polling them) this long, then go when the next one starts. */
const KEEP_SPENT = '1 day';

export type PairingStatus = 'pending' | 'consumed' | 'expired';

export interface Pairing {
  id: string;
  object: 'model_provider_pairing';
  status: PairingStatus;
  expires_at: string;
  consumed_at: string | null;
  credential_id: string | null;
  created_at: string;
}

interface Row {
  id: string;
  status: PairingStatus;
  expires_at: Date;
  consumed_at: Date | null;
  credential_id: string | null;
  created_at: Date;
}

const COLUMNS = `p.id, p.expires_at, p.consumed_at, p.credential_id, p.created_at,
  CASE WHEN p.consumed_at IS NOT NULL THEN 'consumed' WHEN p.expires_at <= now() THEN 'expired' ELSE 'pending' END AS status`;

function toWire(r: Row): Pairing {
  return {
    id: r.id,
    object: 'model_provider_pairing',
    status: r.status,
    expires_at: r.expires_at.toISOString(),
    consumed_at: r.consumed_at?.toISOString() ?? null,
    credential_id: r.credential_id,
    created_at: r.created_at.toISOString(),
  };
}

// An unknown token is refused like any invalid credential: the answer says nothing about which
// tokens exist. Only the holder of a real token can learn that it is spent.
const invalidToken = () => problem('unauthorized', { detail: 'The pairing token is not valid.' });
const spent = () => problem('pairing_expired_or_consumed', { detail: 'This pairing token has expired or was already used; start a new pairing.' });

export async function startPairing(scope: OrgScope, ttlSeconds: number): Promise<Pairing & { token: string }> {
  const token = `${PAIRING_TOKEN_PREFIX}${randomBase62(TOKEN_CHARS)}`;
  await scope.pool.query(
    `DELETE FROM model_provider_pairings WHERE org_id = $1 AND COALESCE(consumed_at, expires_at) < now() - interval '${KEEP_SPENT}'`,
    [scope.orgId],
  );
  const { rows } = await scope.pool.query<Row>(
    `INSERT INTO model_provider_pairings AS p (id, org_id, token_hash, created_by, api_key_id, expires_at)
     VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6)) RETURNING ${COLUMNS}`,
    [newId('mpair'), scope.orgId, sha256Hex(token), scope.actor.userId, scope.actor.apiKeyId ?? null, ttlSeconds],
  );
  const { id, object, status, expires_at, consumed_at, credential_id, created_at } = toWire(rows[0]);
  return { id, object, status, token, expires_at, consumed_at, credential_id, created_at };
}

export async function getPairing(scope: OrgScope, id: string): Promise<Pairing> {
  const { rows } = await scope.pool.query<Row>(`SELECT ${COLUMNS} FROM model_provider_pairings p WHERE p.id = $1 AND p.org_id = $2`, [id, scope.orgId]);
  if (!rows[0]) throw problem('not_found', { detail: 'No such model-provider pairing in this organization.' });
  return toWire(rows[0]);
}

/**
 * Redeems a token: creates the credential it was issued for and consumes it. The body is vetted
 * before the token is spent, so a tool that sent a bad base URL may correct it and try again.
 */
export async function redeemPairing(pool: pg.Pool, pdeps: ProvidersDeps, input: CredentialInput & { name: string; token: string }): Promise<Credential> {
  const tokenHash = sha256Hex(input.token);
  const { rows } = await pool.query<{ id: string; spent: boolean }>(
    'SELECT id, (consumed_at IS NOT NULL OR expires_at <= now()) AS spent FROM model_provider_pairings WHERE token_hash = $1',
    [tokenHash],
  );
  if (!rows[0]) throw invalidToken();
  if (rows[0].spent) throw spent();
  const target = await inlineTarget(pdeps, input);

  return inTransaction(pool, async (client) => {
    // the row lock this UPDATE takes makes a racing redemption wait, then find the token consumed
    const claimed = await client.query<{ org_id: string; created_by: string }>(
      `UPDATE model_provider_pairings SET consumed_at = now()
        WHERE id = $1 AND consumed_at IS NULL AND expires_at > now() RETURNING org_id, created_by`,
      [rows[0]!.id],
    );
    const pairing = claimed.rows[0];
    if (!pairing) throw spent();
    // the credential is created on the member's authority as it stands now, not as it stood at the start
    const member = await client.query<{ role: OrgRole; deleting: boolean }>(
      `SELECT om.role, (o.deleting_at IS NOT NULL) AS deleting FROM org_members om JOIN organizations o ON o.id = om.org_id
        WHERE om.org_id = $1 AND om.user_id = $2`,
      [pairing.org_id, pairing.created_by],
    );
    if (member.rows[0]?.deleting) throw problem('org_deleting', { detail: 'The organization is being deleted.' });
    const role = member.rows[0]?.role;
    if (!role || !ORG_ROLE_PERMISSIONS[role]?.includes('models:write')) {
      throw problem('forbidden', { detail: 'The member who started this pairing can no longer add model provider credentials.' });
    }
    const credential = await insertCredential(client, { orgId: pairing.org_id, userId: pairing.created_by }, pdeps, target, input.name);
    await client.query('UPDATE model_provider_pairings SET credential_id = $2 WHERE id = $1', [rows[0]!.id, credential.id]);
    return credential;
  });
}
