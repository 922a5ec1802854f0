// The last resort behind the run workflow: a run still pending or running long after every
// deadline its workflow enforces (boot, the run's timeout, the finalization retries) has no
// workflow driving it any more (the engine lost it, or finalization gave up). It is failed
// `run_abandoned`, through the same compare-and-set as every ending, so a workflow that does come
// back later finds it finalized and changes nothing. Remote runs keep the same deadlines: their
// workflow enforces them too.
import type pg from 'pg';
import { finalizeRun } from '../../../db/run-finalization.ts';

/** Finalization retries last up to 10 minutes (workflows/run.ts); a minute more for clocks and queues. */
export const ABANDONED_MARGIN_SECONDS = 11 * 60;

/** Fails the abandoned runs found (at most 100 a call); answers their ids. */
export async function reconcileAbandonedRuns(pool: pg.Pool, bootSeconds: number): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `SELECT id FROM runs
      WHERE status IN ('pending', 'running')
        AND created_at < now() - make_interval(secs => timeout_seconds + $1::int)
      ORDER BY created_at LIMIT 100`,
    [bootSeconds + ABANDONED_MARGIN_SECONDS],
  );
  const failed: string[] = [];
  for (const { id } of rows) {
    const { finalized } = await finalizeRun(pool, id, {
      status: 'failed',
      error: { code: 'run_abandoned', message: 'No workflow finished this run within its deadlines; it was failed by the reconciler.' },
    });
    if (finalized) failed.push(id);
  }
  return failed;
}
