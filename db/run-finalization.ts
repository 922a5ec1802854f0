// Finalization happens once: one compare-and-set UPDATE; zero rows means someone else finalized.
// The committed change is announced on run_status, which drives long polls and streams.
import type pg from 'pg';

export type RunEndingRecord =
  | { status: 'success'; output: unknown }
  | { status: 'failed' | 'timeout' | 'cancelled'; error: { code: string; message: string; details?: unknown } };

export async function finalizeRun(pool: pg.Pool, runId: string, ending: RunEndingRecord): Promise<{ finalized: boolean }> {
  const output = ending.status === 'success' ? JSON.stringify(ending.output ?? null) : null;
  const error = ending.status === 'success' ? null : JSON.stringify(ending.error);
  const { rows } = await pool.query<{ org_id: string; space_id: string }>(
    `WITH done AS (
       UPDATE runs SET status = $2, output = $3::jsonb, error = $4::jsonb, finished_at = now()
        WHERE id = $1 AND status IN ('pending', 'running')
        RETURNING org_id, space_id)
     SELECT org_id, space_id, pg_notify('run_status', json_build_object('id', $1::text, 'org_id', org_id, 'space_id', space_id, 'status', $2::text)::text)
       FROM done`,
    [runId, ending.status, output, error],
  );
  return { finalized: rows.length > 0 };
}
