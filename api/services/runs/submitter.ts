// Hands admitted runs to the workflow engine without making the caller wait: the submission runs
// after the answer, and a sweeper resubmits any pending run the engine has not acknowledged (a
// crash between the insert and the submission, or the engine briefly unreachable). Submitting
// twice is harmless: the workflow is keyed by the run id. Remote runs are submitted too: their
// runner is elsewhere, but their deadlines (boot, timeout, heartbeats) are the workflow's.
import type pg from 'pg';
import type { Logger } from '../../../lib/log.ts';
import type { RunWorkflowClient } from '../../../workflows/run-client.ts';
import type { RunTraceInput } from '../../../workflows/run-types.ts';

export interface RunSubmitter {
  /** `trace`: the launch's trace; a resubmission by the sweeper has none (the workflow then starts its own) */
  submit(runId: string, trace?: RunTraceInput): void;
  /** resubmits pending runs left unacknowledged; returns how many it tried */
  sweep(): Promise<number>;
  stop(): Promise<void>;
}

const SWEEP_EVERY_MS = 2_000;
const UNACKNOWLEDGED_AFTER = '3 seconds';

export function createRunSubmitter(pool: pg.Pool, runs: RunWorkflowClient, log: Logger): RunSubmitter {
  const inFlight = new Set<Promise<void>>();

  const send = async (runId: string, trace?: RunTraceInput) => {
    try {
      await runs.submit(runId, trace ? { trace } : {});
      await pool.query('UPDATE runs SET submitted_at = now() WHERE id = $1 AND submitted_at IS NULL', [runId]);
    } catch (err) {
      log.warn('run submission failed; the sweeper will retry', { run_id: runId, error: String(err) });
    }
  };
  const track = (p: Promise<void>) => {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };

  const sweep = async () => {
    const { rows } = await pool.query<{ id: string }>(
      `SELECT id FROM runs WHERE submitted_at IS NULL AND status = 'pending'
         AND created_at < now() - interval '${UNACKNOWLEDGED_AFTER}' ORDER BY created_at LIMIT 100`,
    );
    await Promise.all(rows.map((r) => send(r.id)));
    return rows.length;
  };

  let stopped = false;
  const timer = setInterval(() => {
    if (!stopped) track(sweep().then(() => undefined, (err) => log.warn('run sweep failed', { error: String(err) })));
  }, SWEEP_EVERY_MS);
  timer.unref();

  return {
    submit(runId, trace) {
      track(send(runId, trace));
    },
    sweep,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.allSettled([...inFlight]);
    },
  };
}
