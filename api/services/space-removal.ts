// Removing a space: refused while runs are active in it or while it is the home of packages;
// otherwise every row that belongs to it goes with it.
import type pg from 'pg';
import { problem, type ErrorCode } from '../../lib/problem.ts';
import { sweepTenantRows, tableHasColumn } from './tenant-sweep.ts';

/** Why the space cannot be removed now, or null. */
export async function spaceRemovalBlocker(client: pg.PoolClient, orgId: string, spaceId: string): Promise<ErrorCode | null> {
  const active = await client.query(
    `SELECT 1 FROM runs WHERE org_id = $1 AND space_id = $2 AND status IN ('pending', 'running') LIMIT 1`,
    [orgId, spaceId],
  );
  if (active.rowCount) return 'space_has_active_runs';
  // The packages feature may not be installed; look it up rather than depend on it.
  if (await tableHasColumn(client, 'packages', 'home_space_id')) {
    const homes = await client.query('SELECT 1 FROM packages WHERE home_space_id = $1 LIMIT 1', [spaceId]);
    if (homes.rowCount) return 'space_homes_packages';
  }
  return null;
}

export async function assertSpaceRemovable(client: pg.PoolClient, orgId: string, spaceId: string): Promise<void> {
  const blocker = await spaceRemovalBlocker(client, orgId, spaceId);
  if (blocker === 'space_has_active_runs') throw problem(blocker, { detail: 'Runs are pending or running in this space; cancel them or wait.' });
  if (blocker) throw problem(blocker, { detail: 'Packages have this space as their home; move or delete them first.' });
}

/** Deletes the space and every row carrying its id. The caller checked it may go. */
export async function removeSpace(client: pg.PoolClient, orgId: string, spaceId: string): Promise<void> {
  await sweepTenantRows(client, 'space_id', spaceId);
  await client.query('DELETE FROM spaces WHERE id = $1 AND org_id = $2', [spaceId, orgId]);
}

/**
 * A member leaving takes their personal space with them, unless it still has active runs or homes
 * packages: then it stays, orphaned (no owner), for an administrator to deal with.
 */
export async function offboardPersonalSpace(client: pg.PoolClient, orgId: string, userId: string): Promise<void> {
  const { rows } = await client.query(`SELECT id FROM spaces WHERE org_id = $1 AND owner_user_id = $2 AND kind = 'personal' FOR UPDATE`, [orgId, userId]);
  const spaceId = rows[0]?.id as string | undefined;
  if (!spaceId) return;
  if (await spaceRemovalBlocker(client, orgId, spaceId)) {
    await client.query('UPDATE spaces SET owner_user_id = NULL, updated_at = now() WHERE id = $1', [spaceId]);
    return;
  }
  await removeSpace(client, orgId, spaceId);
}
