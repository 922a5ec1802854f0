// Connections: one account's credential for one auth of an integration, in a space. The record
// the spec names (id, integration_package_id, auth_key, account_id, needs_reconnection, label)
// plus who owns it and whether it is shared with the organization. Credentials and login outputs
// are sealed with the instance key; no function here returns them except openCredentials.
import type { SecretBox } from '../../../lib/crypto.ts';
import { problem } from '../../../lib/problem.ts';
import type { Actor, SpaceScope } from '../../../db/tenant.ts';
import type { Queryable } from '../packages/store.ts';
import type { CursorPage } from '../../lists.ts';

export const DEFAULT_ACCOUNT_ID = 'default';
export const DEFAULT_LABEL = 'Connection';

export interface ConnectionRow {
  id: string;
  org_id: string;
  space_id: string;
  integration_package_id: string;
  auth_key: string;
  owner_user_id: string;
  owner_end_user_id: string | null;
  account_id: string;
  label: string;
  credentials: string;
  granted_scopes: string[];
  token_expires_at: Date | null;
  needs_reconnection: boolean;
  shared_with_org: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface ConnectionWire {
  id: string;
  object: 'connection';
  integration_package_id: string;
  auth_key: string;
  account_id: string;
  label: string;
  needs_reconnection: boolean;
  shared_with_org: boolean;
  owned_by_actor: boolean;
  owner_kind: 'member' | 'end_user';
  scopes: string[];
  createdAt: string;
  updatedAt: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (v: unknown): v is string => typeof v === 'string' && UUID.test(v);

export function ownedBy(row: Pick<ConnectionRow, 'owner_user_id' | 'owner_end_user_id'>, actor: Actor): boolean {
  if (actor.endUserId) return row.owner_end_user_id === actor.endUserId;
  return row.owner_end_user_id === null && row.owner_user_id === actor.userId;
}

export function toConnectionWire(row: ConnectionRow, actor: Actor): ConnectionWire {
  return {
    id: row.id,
    object: 'connection',
    integration_package_id: row.integration_package_id,
    auth_key: row.auth_key,
    account_id: row.account_id,
    label: row.label,
    needs_reconnection: row.needs_reconnection,
    shared_with_org: row.shared_with_org,
    owned_by_actor: ownedBy(row, actor),
    owner_kind: row.owner_end_user_id ? 'end_user' : 'member',
    scopes: row.granted_scopes,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * SQL condition (with $1 org, $2 space, $3 user, $4 end-user) for the connections an actor sees:
 * an end-user its own; a member its own and those shared with the organization.
 */
const VISIBLE = `org_id = $1 AND space_id = $2 AND (
  CASE WHEN $4::text IS NOT NULL THEN owner_end_user_id = $4
       ELSE (owner_end_user_id IS NULL AND owner_user_id = $3) OR (shared_with_org AND owner_end_user_id IS NULL) END)`;

function visibleArgs(scope: SpaceScope): unknown[] {
  return [scope.orgId, scope.spaceId, scope.actor.userId, scope.actor.endUserId ?? null];
}

export async function listVisibleConnections(scope: SpaceScope, filter: { integrationId?: string } = {}, q: Queryable = scope.pool): Promise<ConnectionRow[]> {
  const args = visibleArgs(scope);
  let sql = `SELECT * FROM integration_connections WHERE ${VISIBLE}`;
  if (filter.integrationId) {
    args.push(filter.integrationId);
    sql += ` AND integration_package_id = $${args.length}`;
  }
  const { rows } = await q.query<ConnectionRow>(`${sql} ORDER BY created_at, id LIMIT 500`, args);
  return rows;
}

/**
 * A page of the connections the actor sees, oldest first, keyed on (created_at, id): the cursor is
 * the id of the last (startingAfter) or first (endingBefore) connection received. Answers limit + 1
 * rows in the page's direction (cursorList trims and orders them); a cursor naming no connection
 * the actor sees is 400 invalid_request.
 */
export async function pageVisibleConnections(scope: SpaceScope, filter: { integrationId?: string }, page: CursorPage): Promise<ConnectionRow[]> {
  const args = visibleArgs(scope);
  let sql = `SELECT * FROM integration_connections WHERE ${VISIBLE}`;
  if (filter.integrationId) {
    args.push(filter.integrationId);
    sql += ` AND integration_package_id = $${args.length}`;
  }
  const cursor = page.startingAfter ?? page.endingBefore;
  const backwards = page.startingAfter === undefined && page.endingBefore !== undefined;
  if (cursor !== undefined) {
    const param = page.startingAfter !== undefined ? 'startingAfter' : 'endingBefore';
    if (!isUuid(cursor)) throw problem('invalid_request', { param, detail: `Query parameter "${param}" must be the id of a connection you received.` });
    const { rowCount } = await scope.pool.query(`SELECT 1 FROM integration_connections WHERE ${VISIBLE} AND id = $5`, [...visibleArgs(scope), cursor]);
    if (!rowCount) throw problem('invalid_request', { param, detail: `Query parameter "${param}" names no connection of yours (deleted meanwhile?); start again from the first page.` });
    args.push(cursor);
    // compared in SQL: created_at keeps its microseconds there
    sql += ` AND (created_at, id) ${backwards ? '<' : '>'} (SELECT c.created_at, c.id FROM integration_connections c WHERE c.org_id = $1 AND c.id = $${args.length}::uuid)`;
  }
  args.push(page.limit + 1);
  const order = backwards ? 'DESC' : 'ASC';
  const { rows } = await scope.pool.query<ConnectionRow>(`${sql} ORDER BY created_at ${order}, id ${order} LIMIT $${args.length}`, args);
  return rows;
}

/** A connection the actor sees; 404 not_found otherwise (out of reach and missing look the same). */
export async function visibleConnection(scope: SpaceScope, id: string, q: Queryable = scope.pool, lock = false): Promise<ConnectionRow> {
  if (!isUuid(id)) throw problem('not_found', { detail: `No connection ${id}.` });
  const { rows } = await q.query<ConnectionRow>(`SELECT * FROM integration_connections WHERE ${VISIBLE} AND id = $5${lock ? ' FOR UPDATE' : ''}`, [...visibleArgs(scope), id]);
  if (!rows[0]) throw problem('not_found', { detail: `No connection ${id}.` });
  return rows[0];
}

/** The actor's own connection (writes need ownership; a shared one is still only read by others). */
export async function ownConnection(scope: SpaceScope, id: string, q: Queryable = scope.pool, lock = false): Promise<ConnectionRow> {
  const row = await visibleConnection(scope, id, q, lock);
  if (!ownedBy(row, scope.actor)) throw problem('forbidden', { detail: `Connection ${id} belongs to someone else.` });
  return row;
}

export function openCredentials(secrets: SecretBox, row: Pick<ConnectionRow, 'credentials'>): Record<string, string> {
  return JSON.parse(secrets.open(row.credentials)) as Record<string, string>;
}

export function sealCredentials(secrets: SecretBox, credentials: Record<string, string>): string {
  return secrets.seal(JSON.stringify(credentials));
}

function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string }).code === '23505';
}

/** The first free default label of the owner's connections to this integration: Connection, Connection 2 ... */
async function freeLabel(q: Queryable, scope: SpaceScope, integrationId: string, base: string): Promise<string> {
  const { rows } = await q.query<{ label: string }>(
    `SELECT label FROM integration_connections
      WHERE org_id = $1 AND space_id = $2 AND integration_package_id = $3 AND owner_user_id = $4 AND COALESCE(owner_end_user_id, '') = COALESCE($5, '')`,
    [scope.orgId, scope.spaceId, integrationId, scope.actor.userId, scope.actor.endUserId ?? null],
  );
  const taken = new Set(rows.map((r) => r.label));
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) if (!taken.has(`${base} ${n}`)) return `${base} ${n}`;
}

export interface StoredCredential {
  integrationId: string;
  authKey: string;
  accountId: string | null;
  /** the label identity_claims named; the account id (or the generic label) otherwise */
  label?: string | null;
  credentials: Record<string, string>;
  scopes?: string[];
  tokenExpiresAt?: Date | null;
}

/**
 * Creates the actor's connection, or refreshes `reconnect` (same id; a different account is 409
 * identity_mismatch). Answers the stored row.
 */
export async function storeConnection(scope: SpaceScope, secrets: SecretBox, stored: StoredCredential, reconnect?: ConnectionRow): Promise<ConnectionRow> {
  const sealed = sealCredentials(secrets, stored.credentials);
  if (reconnect) {
    const known = reconnect.account_id !== DEFAULT_ACCOUNT_ID && stored.accountId !== null;
    if (known && reconnect.account_id !== stored.accountId) {
      throw problem('identity_mismatch', { detail: `Connection ${reconnect.id} is linked to another account; connect a new one instead.` });
    }
    const { rows } = await scope.pool.query<ConnectionRow>(
      `UPDATE integration_connections SET credentials = $3, account_id = $4, granted_scopes = $5, token_expires_at = $6,
              needs_reconnection = false, updated_at = now()
        WHERE org_id = $1 AND id = $2 RETURNING *`,
      [scope.orgId, reconnect.id, sealed, stored.accountId ?? reconnect.account_id, stored.scopes ?? reconnect.granted_scopes, stored.tokenExpiresAt ?? null],
    );
    return rows[0];
  }
  for (let attempt = 0; ; attempt++) {
    const label = await freeLabel(scope.pool, scope, stored.integrationId, stored.label ?? stored.accountId ?? DEFAULT_LABEL);
    try {
      const { rows } = await scope.pool.query<ConnectionRow>(
        `INSERT INTO integration_connections (org_id, space_id, integration_package_id, auth_key, owner_user_id, owner_end_user_id,
                account_id, label, credentials, granted_scopes, token_expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
        [scope.orgId, scope.spaceId, stored.integrationId, stored.authKey, scope.actor.userId, scope.actor.endUserId ?? null,
          stored.accountId ?? DEFAULT_ACCOUNT_ID, label, sealed, stored.scopes ?? [], stored.tokenExpiresAt ?? null],
      );
      return rows[0];
    } catch (err) {
      // two connects raced for the same default label: take the next one
      if (!isUniqueViolation(err) || attempt >= 3) throw err;
    }
  }
}

export async function renameConnection(q: Queryable, row: ConnectionRow, label: string): Promise<ConnectionRow> {
  try {
    const { rows } = await q.query<ConnectionRow>(
      'UPDATE integration_connections SET label = $3, updated_at = now() WHERE org_id = $1 AND id = $2 RETURNING *',
      [row.org_id, row.id, label],
    );
    return rows[0];
  } catch (err) {
    if (isUniqueViolation(err)) throw problem('connection_label_taken', { detail: `Another of your ${row.integration_package_id} connections is labelled ${JSON.stringify(label)}.` });
    throw err;
  }
}

/** Flags a connection whose credential stopped working (a revoked refresh token). */
export async function flagNeedsReconnection(q: Queryable, orgId: string, id: string): Promise<void> {
  // its owner (a member; end-users have no notifications) hears of it once, when the flag turns on
  await q.query(
    `WITH flagged AS (
       UPDATE integration_connections SET needs_reconnection = true, updated_at = now()
        WHERE org_id = $1 AND id = $2 AND NOT needs_reconnection
       RETURNING id, org_id, space_id, owner_user_id, owner_end_user_id, integration_package_id, label)
     INSERT INTO notifications (id, org_id, space_id, user_id, kind, title, body, subject)
     SELECT sorted_id('ntf'), f.org_id, f.space_id, f.owner_user_id, 'connection_needs_reconnection',
            'Connection ' || f.label || ' needs reconnecting',
            'The credential of connection ' || f.label || ' to ' || f.integration_package_id
              || ' stopped working; connect it again to keep runs using it.',
            jsonb_build_object('connection_id', f.id, 'package_id', f.integration_package_id)
       FROM flagged f WHERE f.owner_end_user_id IS NULL`,
    [orgId, id],
  );
}
