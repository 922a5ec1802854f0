// Finalization happens once: one compare-and-set UPDATE; zero rows means someone else finalized.
// The committed change is announced on run_status, which drives long polls and streams.
import { setSpanAttributes, withSpan } from '../lib/tracing/index.ts';
import type pg from 'pg';
import { recordProblemCode } from '../lib/problem-log.ts';
import { metrics } from '../lib/metrics/index.ts';

export type RunEndingRecord =
  | { status: 'success'; output: unknown }
  | { status: 'failed' | 'timeout' | 'cancelled'; error: { code: string; message: string; details?: unknown } };

/**
 * `from` names the open statuses the ending may replace: a boot deadline ends only a run that is
 * still pending, never one whose first event was accepted meanwhile.
 */
const OPEN = ['pending', 'running'] as const;

export async function finalizeRun(pool: pg.Pool, runId: string, ending: RunEndingRecord, from: ReadonlyArray<'pending' | 'running'> = OPEN): Promise<{ finalized: boolean }> {
  const output = ending.status === 'success' ? JSON.stringify(ending.output ?? null) : null;
  const error = ending.status === 'success' ? null : JSON.stringify(ending.error);
  if (ending.status !== 'success') recordProblemCode(ending.error.code);
  const attributes = { 'agent_platform.run.status': ending.status, ...(ending.status === 'success' ? {} : { 'error.type': ending.error.code }) };
  return withSpan('run finalization', attributes, async () => {
    // The trigger runs_status_announced (db/functions.sql) announces the change in this transaction.
    const { rows } = await pool.query<{ seconds: number }>(
      `UPDATE runs SET status = $2, output = $3::jsonb, error = $4::jsonb, finished_at = now()
        WHERE id = $1 AND status = ANY($5::text[])
        RETURNING EXTRACT(EPOCH FROM finished_at - created_at)::float8 AS seconds`,
      [runId, ending.status, output, error, from],
    );
    const finalized = rows[0] !== undefined;
    setSpanAttributes({ 'agent_platform.run.finalized': finalized });
    // counted here, after the one update that ends the run, so each ending counts once whoever finalized it
    if (finalized) metrics.runEnded(ending.status, ending.status === 'success' ? undefined : ending.error.code, rows[0]!.seconds);
    return { finalized };
  }, { tenant: { runId } });
}
