// Finalization happens once: one compare-and-set UPDATE; zero rows means someone else finalized.
import type { AppDeps } from '../api/deps.ts';
import type { RunEnding } from '../workflows/run-types.ts';

export async function finalizeRun(deps: AppDeps, runId: string, ending: RunEnding): Promise<{ finalized: boolean }> {
  const output = ending.status === 'success' ? JSON.stringify(ending.output ?? null) : null;
  const error = ending.status === 'success' ? null : JSON.stringify(ending.error);
  const { rows } = await deps.database.pool.query(
    `UPDATE runs SET status = $2, output = $3::jsonb, error = $4::jsonb, finished_at = now()
      WHERE id = $1 AND status IN ('pending', 'running')
      RETURNING org_id, space_id, status`,
    [runId, ending.status, output, error],
  );
  if (!rows[0]) return { finalized: false };
  await deps.database.pool.query(`SELECT pg_notify('run_status', $1)`, [JSON.stringify({ id: runId, org_id: rows[0].org_id, space_id: rows[0].space_id, status: ending.status })]);
  return { finalized: true };
}
