// End-users: the integrator's own users, one list per space; externalId is unique in the space.
import { newId } from '../../lib/ids.ts';
import { problem } from '../../lib/problem.ts';
import type { SpaceScope } from '../../db/tenant.ts';
import { cursorCondition, type CursorPage } from '../lists.ts';

export interface EndUser {
  id: string;
  object: 'end_user';
  externalId: string;
  name: string;
  metadata: Record<string, unknown> | null;
  spaceId: string;
  createdAt: string;
  updatedAt: string;
}

interface Row {
  id: string;
  external_id: string;
  name: string;
  metadata: Record<string, unknown> | null;
  space_id: string;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, external_id, name, metadata, space_id, created_at, updated_at';

function toWire(r: Row): EndUser {
  return {
    id: r.id,
    object: 'end_user',
    externalId: r.external_id,
    name: r.name,
    metadata: r.metadata,
    spaceId: r.space_id,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

function externalIdTaken(externalId: string) {
  return problem('external_id_taken', {
    detail: `An end-user with externalId "${externalId}" already exists in this space.`,
    errors: [{ field: 'externalId', code: 'invalid_value', message: 'Already used in this space.' }],
  });
}

const isUniqueViolation = (err: unknown) => (err as { code?: string }).code === '23505';

export async function createEndUser(scope: SpaceScope, input: { externalId: string; name: string; metadata?: Record<string, unknown> }): Promise<EndUser> {
  const { rows: kinds } = await scope.pool.query('SELECT kind FROM spaces WHERE id = $1 AND org_id = $2', [scope.spaceId, scope.orgId]);
  if (kinds[0]?.kind === 'personal') throw problem('personal_space_takes_no_end_users', { detail: 'Create end-users in a team space.' });
  try {
    const { rows } = await scope.pool.query<Row>(
      `INSERT INTO end_users (id, org_id, space_id, external_id, name, metadata) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
      [newId('eu'), scope.orgId, scope.spaceId, input.externalId, input.name, input.metadata ?? null],
    );
    return toWire(rows[0]);
  } catch (err) {
    if (isUniqueViolation(err)) throw externalIdTaken(input.externalId);
    throw err;
  }
}

export async function getEndUser(scope: SpaceScope, id: string): Promise<EndUser> {
  const { rows } = await scope.pool.query<Row>(`SELECT ${COLUMNS} FROM end_users WHERE id = $1 AND org_id = $2 AND space_id = $3`, [id, scope.orgId, scope.spaceId]);
  if (!rows[0]) throw problem('not_found', { detail: 'No such end-user in this space.' });
  return toWire(rows[0]);
}

/** Ids sort in creation order (see lib/ids.ts); byte order, so COLLATE "C". */
export async function listEndUsers(scope: SpaceScope, page: CursorPage, filter: { externalId?: string } = {}): Promise<EndUser[]> {
  const params: unknown[] = [scope.orgId, scope.spaceId, page.limit + 1];
  let where = 'org_id = $1 AND space_id = $2';
  if (filter.externalId !== undefined) {
    params.push(filter.externalId);
    where += ` AND external_id = $${params.length}`;
  }
  const { condition, order } = cursorCondition(page, params);
  where += condition;
  const { rows } = await scope.pool.query<Row>(`SELECT ${COLUMNS} FROM end_users WHERE ${where} ORDER BY id COLLATE "C" ${order} LIMIT $3`, params);
  return rows.map(toWire);
}

export async function updateEndUser(scope: SpaceScope, id: string, patch: { externalId?: string; name?: string; metadata?: Record<string, unknown> | null }): Promise<EndUser> {
  try {
    const { rows } = await scope.pool.query<Row>(
      `UPDATE end_users SET
         external_id = COALESCE($4, external_id),
         name = COALESCE($5, name),
         metadata = CASE WHEN $6::boolean THEN $7::jsonb ELSE metadata END,
         updated_at = now()
       WHERE id = $1 AND org_id = $2 AND space_id = $3 RETURNING ${COLUMNS}`,
      [id, scope.orgId, scope.spaceId, patch.externalId ?? null, patch.name ?? null, patch.metadata !== undefined, patch.metadata === undefined ? null : JSON.stringify(patch.metadata)],
    );
    if (!rows[0]) throw problem('not_found', { detail: 'No such end-user in this space.' });
    return toWire(rows[0]);
  } catch (err) {
    if (isUniqueViolation(err)) throw externalIdTaken(patch.externalId ?? '');
    throw err;
  }
}

export async function deleteEndUser(scope: SpaceScope, id: string): Promise<void> {
  const { rowCount } = await scope.pool.query('DELETE FROM end_users WHERE id = $1 AND org_id = $2 AND space_id = $3', [id, scope.orgId, scope.spaceId]);
  if (!rowCount) throw problem('not_found', { detail: 'No such end-user in this space.' });
}
