// The approval requests of runs in the database: their wire, and what every change to one does in
// its transaction (the run announced, the webhook deliveries written, the run's `awaiting` cleared).
// Shared by the API (requests and decisions) and the run workflow's activities (expiry).
import type pg from 'pg';
import { inTransaction } from './transaction.ts';

export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired';

export interface Approval {
  id: string;
  object: 'approval';
  run_id: string;
  tool: string;
  arguments: unknown;
  status: ApprovalStatus;
  requested_at: string;
  decided_at: string | null;
  decided_by: { userId: string | null; api_key_id: string | null; end_user_id: string | null } | null;
  reason: string | null;
}

export const APPROVAL_WIRE = `json_build_object('id', a.id, 'object', 'approval', 'run_id', a.run_id, 'tool', a.tool, 'arguments', a.arguments,
  'status', a.status, 'requested_at', wire_time(a.requested_at), 'decided_at', wire_time(a.decided_at), 'decided_by', a.decided_by,
  'reason', a.reason)`;

/**
 * In the change's transaction: announces the run (run_update on the realtime streams, and long
 * polls of it) and writes one webhook delivery per matching webhook for the approval's event.
 */
export async function signalApproval(db: pg.PoolClient, runId: string, approvalId: string, event: 'run.approval_requested' | 'run.approval_decided'): Promise<void> {
  await db.query('SELECT announce_run_status(r) FROM runs r WHERE r.id = $1', [runId]);
  const { rowCount } = await db.query(
    `INSERT INTO webhook_deliveries (id, org_id, webhook_id, run_id, event, approval_id, payload)
       SELECT sorted_id('whd'), r.org_id, w.id, r.id, $3, a.id,
              jsonb_build_object('type', $3::text, 'timestamp', wire_time(now()), 'data',
                jsonb_build_object('run', run_wire(r)::jsonb, 'approval', ${APPROVAL_WIRE}::jsonb))
         FROM runs r JOIN run_approvals a ON a.run_id = r.id AND a.id = $2
         JOIN webhooks w ON w.org_id = r.org_id AND w.enabled
          AND (w.space_id IS NULL OR w.space_id = r.space_id)
          AND $3 = ANY (w.events)
          AND (w.package_id IS NULL OR w.package_id = r.agent_id)
        WHERE r.id = $1
       ON CONFLICT (webhook_id, approval_id, event) WHERE approval_id IS NOT NULL DO NOTHING`,
    [runId, approvalId, event],
  );
  if (rowCount) await db.query(`SELECT pg_notify('webhook_deliveries', '')`);
}

/** The run's `awaiting` goes with its approval once that is decided or expired. */
export async function stopAwaiting(db: pg.PoolClient, runId: string, approvalId: string): Promise<void> {
  await db.query(`UPDATE runs SET awaiting = NULL WHERE id = $1 AND awaiting->>'approval_id' = $2`, [runId, approvalId]);
}

/** The workflow's timer ran out: a request still pending expires. Answers whether it did. */
export async function expireApproval(pool: pg.Pool, runId: string, approvalId: string): Promise<boolean> {
  return inTransaction(pool, async (db) => {
    const { rowCount } = await db.query(
      `UPDATE run_approvals SET status = 'expired', decided_at = now(),
              reason = 'No decision was made within ' || timeout_seconds || ' seconds.'
        WHERE id = $1 AND run_id = $2 AND status = 'pending'`,
      [approvalId, runId],
    );
    if (!rowCount) return false;
    await stopAwaiting(db, runId, approvalId);
    await signalApproval(db, runId, approvalId, 'run.approval_decided');
    return true;
  });
}
