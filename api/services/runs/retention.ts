// The sweeps that keep run data bounded, each in batches read through an index that holds only
// (or starts with) the rows it acts on, so a sweep costs the work it finds, not the table:
// - after INLINE_RUN_LIMITS.retention_days an inline run's manifest and prompt are emptied and its
//   logs deleted (the run record itself is kept);
// - replay records (run_event_ids) are deleted once the run's sink no longer accepts events
//   (the run ended or the sink expired): a replay is then refused as closed or expired anyway;
// - run logs older than RUN_LOG_RETENTION_DAYS are deleted, except facts pinned to memory.
import type pg from 'pg';

const BATCH = 1000;
/** a sweep stops after this many batches and resumes on its next tick, to leave the database to others */
const MAX_BATCHES = 50;

// Batches are deleted by the rows' physical ids (a TID scan): a join back on the key would let
// the planner scan the whole table for a thousand rows.
async function inBatches(step: () => Promise<number>): Promise<number> {
  let done = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const n = await step();
    done += n;
    if (n < BATCH) break;
  }
  return done;
}

export async function purgeExpiredInlineRuns(pool: pg.Pool, retentionDays: number): Promise<number> {
  return inBatches(async () => {
    // runs_inline_unpurged_idx holds only inline runs not purged yet, oldest first
    const { rows } = await pool.query<{ id: string }>(
      `WITH due AS (
         SELECT id FROM runs
          WHERE kind = 'inline' AND purged_at IS NULL AND status IN ('success', 'failed', 'timeout', 'cancelled')
            AND created_at < now() - make_interval(days => $1)
          ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
       UPDATE runs SET inline_manifest = NULL, inline_prompt = NULL, purged_at = now()
         FROM due WHERE runs.id = due.id RETURNING runs.id`,
      [retentionDays, BATCH],
    );
    if (rows.length) await pool.query('DELETE FROM run_logs WHERE run_id = ANY($1)', [rows.map((r) => r.id)]);
    return rows.length;
  });
}

/** Deletes the replay records of runs whose sink is closed (ended) or expired; answers how many. */
export async function sweepReplayRecords(pool: pg.Pool): Promise<number> {
  // Oldest records first: those of runs still open are few (the concurrency caps bound them).
  return inBatches(async () => {
    const { rowCount } = await pool.query(
      `DELETE FROM run_event_ids WHERE ctid = ANY(ARRAY(
         SELECT e.ctid FROM run_event_ids e JOIN runs r ON r.id = e.run_id
          WHERE r.status IN ('success', 'failed', 'timeout', 'cancelled') OR r.sink_expires_at <= now()
          ORDER BY e.created_at LIMIT $1))`,
      [BATCH],
    );
    return rowCount ?? 0;
  });
}

/** Deletes run logs older than `retentionDays` (0 keeps them), pinned facts excepted; answers how many. */
export async function sweepRunLogs(pool: pg.Pool, retentionDays: number): Promise<number> {
  if (retentionDays <= 0) return 0;
  return inBatches(async () => {
    const { rowCount } = await pool.query(
      `DELETE FROM run_logs WHERE ctid = ANY(ARRAY(
         SELECT ctid FROM run_logs
          WHERE created_at < now() - make_interval(days => $1) AND (data->>'kind') IS DISTINCT FROM 'pin'
          ORDER BY created_at LIMIT $2))`,
      [retentionDays, BATCH],
    );
    return rowCount ?? 0;
  });
}

/** Every run-data sweep, as the host runs them every ten minutes. */
export async function sweepRunData(pool: pg.Pool, settings: { inlineRetentionDays: number; logRetentionDays: number }): Promise<Record<string, number>> {
  return {
    inline_runs_purged: await purgeExpiredInlineRuns(pool, settings.inlineRetentionDays),
    replay_records_deleted: await sweepReplayRecords(pool),
    run_logs_deleted: await sweepRunLogs(pool, settings.logRetentionDays),
  };
}
