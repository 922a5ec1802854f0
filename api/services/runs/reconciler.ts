// The last resort behind the run workflow: a run still pending or running long after every
// deadline its workflow enforces (boot, the run's timeout, the finalization retries) has no
// workflow driving it any more (the engine lost it, or finalization gave up). It is failed
// `run_abandoned`, through the same compare-and-set as every ending, so a workflow that does come
// back later finds it finalized and changes nothing. Remote runs keep the same deadlines: their
// workflow enforces them too. Before that far deadline, a second sweep asks the engine about open
// runs and fails `workflow_lost` those whose workflow was killed or is gone.
import type pg from 'pg';
import type { Logger } from '../../../lib/log.ts';
import { finalizeRun } from '../../../db/run-finalization.ts';
import { workflowInvocationStates, type WorkflowInvocationState } from '../../../restate/admin.ts';
import { RUN_WORKFLOW_NAME } from '../../../workflows/run-types.ts';
import { runEvery, type Periodic } from '../../../lib/periodic.ts';

/** Finalization retries last up to 10 minutes (workflows/run.ts); a minute more for clocks and queues. */
export const ABANDONED_MARGIN_SECONDS = 11 * 60;

/**
 * Fails the abandoned runs found (at most 100 a call); answers their ids. Time a run spent waiting
 * for approvals does not count towards its timeout (the workflow pauses it), so it moves the
 * deadline too; a pending request counts up to its own timeout.
 */
export async function reconcileAbandonedRuns(pool: pg.Pool, bootSeconds: number): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `SELECT id FROM runs
      WHERE status IN ('pending', 'running')
        AND created_at < now() - make_interval(secs => timeout_seconds + $1::int)
        AND created_at < now() - make_interval(secs => timeout_seconds + $1::int) - COALESCE((
          SELECT sum(LEAST(COALESCE(a.decided_at, now()), a.requested_at + make_interval(secs => a.timeout_seconds)) - a.requested_at)
            FROM run_approvals a WHERE a.run_id = runs.id), interval '0')
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

/**
 * Runs whose workflow was killed, or is gone from the engine, would otherwise wait for the far
 * deadline above. Open runs submitted more than `graceSeconds` ago are checked against the engine;
 * those whose workflow completed or is unknown are failed `workflow_lost` through the same
 * compare-and-set (a workflow that finalized meanwhile wins). An engine that cannot be asked
 * changes nothing. Answers the ids failed (at most 100 a call).
 */
export async function reconcileLostWorkflows(pool: pg.Pool, adminUrl: string, graceSeconds: number): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `SELECT id FROM runs
      WHERE status IN ('pending', 'running') AND submitted_at IS NOT NULL
        AND submitted_at < now() - make_interval(secs => $1::int)
      ORDER BY created_at LIMIT 100`,
    [graceSeconds],
  );
  if (rows.length === 0) return [];
  const states = await workflowInvocationStates(adminUrl, RUN_WORKFLOW_NAME, rows.map((r) => r.id));
  const failed: string[] = [];
  for (const { id } of rows) {
    const state = states.get(id);
    if (state && state.status !== 'completed') continue;
    const { finalized } = await finalizeRun(pool, id, { status: 'failed', error: lostWorkflowError(state) });
    if (finalized) failed.push(id);
  }
  return failed;
}

function lostWorkflowError(state: WorkflowInvocationState | undefined): { code: string; message: string } {
  const code = 'workflow_lost';
  if (!state) return { code, message: 'The run\'s workflow is gone from the workflow engine; the run was failed by the reconciler.' };
  if (state.completion_failure === '[409] killed') {
    return { code, message: `The run's workflow (${state.id}) was killed in the workflow engine; the run was failed by the reconciler.` };
  }
  const how = state.completion_failure ? ` with ${state.completion_failure}` : '';
  return { code, message: `The run's workflow (${state.id}) ended${how} without recording the run's end; the run was failed by the reconciler.` };
}

/**
 * Both sweeps every `everySeconds`, one pass at a time. The lost-workflow sweep's grace is the
 * same interval: a workflow the engine has acknowledged is visible to its query at once.
 */
export function startRunReconciler(pool: pg.Pool, adminUrl: string, bootSeconds: number, everySeconds: number, log: Logger): Periodic {
  return runEvery(everySeconds * 1000, async () => {
    const abandoned = await reconcileAbandonedRuns(pool, bootSeconds).catch((err) => {
      log.warn('run reconciliation failed', { error: String(err) });
      return [];
    });
    if (abandoned.length) log.warn('abandoned runs failed by the reconciler', { run_ids: abandoned });
    const lost = await reconcileLostWorkflows(pool, adminUrl, everySeconds).catch((err) => {
      log.warn('lost-workflow reconciliation failed', { error: String(err) });
      return [];
    });
    if (lost.length) log.warn('runs whose workflow is gone failed by the reconciler', { run_ids: lost });
  }, (err) => log.warn('run reconciliation failed', { error: String(err) }));
}
