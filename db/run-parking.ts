// Parking a run that waits for a person's approval, in the database: the request to hand over the
// pending state, the wait for the checkpoint that holds it, the run marked parked, and the woken
// run's claim of a decision taken while it was parked (each request at most once).
import type pg from 'pg';
import { inTransaction } from './transaction.ts';
import { APPROVAL_WIRE, type Approval } from './run-approvals.ts';

/** Asks the run's sidecar (through its reads of the request) for its pending state; false when the request is no longer pending. */
export async function requestPark(pool: pg.Pool, runId: string, approvalId: string): Promise<boolean> {
  const { rowCount } = await pool.query(
    `UPDATE run_approvals SET park_requested_at = COALESCE(park_requested_at, now()) WHERE id = $1 AND run_id = $2 AND status = 'pending'`,
    [approvalId, runId],
  );
  return (rowCount ?? 0) > 0;
}

/** Whether the run's checkpoint holding its pending calls was stored since the park was requested. */
export async function parkHandedOver(pool: pg.Pool, runId: string, approvalId: string): Promise<boolean> {
  const { rows } = await pool.query<{ ok: boolean }>(
    `SELECT c.pending_calls > 0 AND c.created_at >= a.park_requested_at AS ok
       FROM run_approvals a JOIN run_checkpoints c ON c.run_id = a.run_id
      WHERE a.id = $1 AND a.run_id = $2 AND a.park_requested_at IS NOT NULL`,
    [approvalId, runId],
  );
  return rows[0]?.ok === true;
}

/**
 * The handover did not come in time: the request is withdrawn, unless the checkpoint arrived
 * meanwhile (then true: the sidecar holds the call and the run parks all the same).
 */
export async function withdrawPark(pool: pg.Pool, runId: string, approvalId: string): Promise<boolean> {
  return inTransaction(pool, async (db) => {
    await db.query('SELECT 1 FROM run_approvals WHERE id = $1 AND run_id = $2 FOR UPDATE', [approvalId, runId]);
    const { rows } = await db.query<{ ok: boolean }>(
      `SELECT c.pending_calls > 0 AND c.created_at >= a.park_requested_at AS ok
         FROM run_approvals a JOIN run_checkpoints c ON c.run_id = a.run_id WHERE a.id = $1`, [approvalId]);
    if (rows[0]?.ok === true) return true;
    await db.query('UPDATE run_approvals SET park_requested_at = NULL WHERE id = $1', [approvalId]);
    return false;
  });
}

/** A checkpoint with pending calls is kept only while a park was asked of the run (in the store's statement). */
export const PARK_ASKED = `EXISTS (SELECT 1 FROM run_approvals pa WHERE pa.run_id = runs.id AND pa.park_requested_at IS NOT NULL)`;

/** The sandbox is gone: the run is parked (its `awaiting` says so) and a sandbox booted next starts from its own checkpoint. */
export async function markParked(pool: pg.Pool, runId: string): Promise<void> {
  await inTransaction(pool, async (db) => {
    await db.query(
      `UPDATE runs SET parked_at = now(),
              awaiting = CASE WHEN awaiting IS NULL THEN NULL ELSE jsonb_set(awaiting, '{parked}', 'true'::jsonb) END
        WHERE id = $1 AND status = 'running'`,
      [runId],
    );
    await db.query('SELECT announce_run_status(r) FROM runs r WHERE r.id = $1', [runId]);
  });
}

/** A fresh sandbox holds the run again: `awaiting` (a request still pending) is no longer parked. */
export async function markWoken(pool: pg.Pool, runId: string): Promise<void> {
  await inTransaction(pool, async (db) => {
    await db.query(
      `UPDATE runs SET awaiting = CASE WHEN awaiting IS NULL THEN NULL ELSE jsonb_set(awaiting, '{parked}', 'false'::jsonb) END WHERE id = $1`,
      [runId],
    );
    await db.query('SELECT announce_run_status(r) FROM runs r WHERE r.id = $1', [runId]);
  });
}

/**
 * A woken run's sidecar asks again for a call it asked before the park: the request it made then
 * (same tool, same arguments, requested before the park, not taken since) is taken and answered, so
 * the decision is used once per wake and no second request is made. null when there is none.
 */
export async function claimParkedRequest(db: pg.PoolClient, runId: string, tool: string, args: Record<string, unknown>): Promise<Approval | null> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT a.id FROM run_approvals a JOIN runs r ON r.id = a.run_id
      WHERE a.run_id = $1 AND a.tool = $2 AND a.arguments = $3::jsonb
        AND r.parked_at IS NOT NULL AND a.requested_at <= r.parked_at AND (a.resumed_at IS NULL OR a.resumed_at < r.parked_at)
      ORDER BY a.sequence LIMIT 1 FOR UPDATE OF a`,
    [runId, tool, JSON.stringify(args)],
  );
  if (!rows[0]) return null;
  const updated = await db.query<{ a: Approval }>(
    `UPDATE run_approvals a SET resumed_at = now(), park_requested_at = NULL WHERE a.id = $1 RETURNING ${APPROVAL_WIRE} AS a`, [rows[0].id]);
  return updated.rows[0].a;
}
