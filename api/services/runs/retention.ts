// After INLINE_RUN_LIMITS.retention_days an inline run's manifest and prompt are emptied and its
// logs deleted; the run record itself is kept.
import type pg from 'pg';

export async function purgeExpiredInlineRuns(pool: pg.Pool, retentionDays: number): Promise<number> {
  const { rows } = await pool.query<{ id: string }>(
    `UPDATE runs SET inline_manifest = NULL, inline_prompt = NULL, purged_at = now()
      WHERE kind = 'inline' AND purged_at IS NULL AND status IN ('success', 'failed', 'timeout', 'cancelled')
        AND created_at < now() - make_interval(days => $1)
      RETURNING id`,
    [retentionDays],
  );
  if (rows.length) await pool.query('DELETE FROM run_logs WHERE run_id = ANY($1)', [rows.map((r) => r.id)]);
  return rows.length;
}
