// The side effects of the run workflow: sandbox start and stop, liveness facts, finalization.
import type { AppDeps } from '../api/deps.ts';
import { activityFailure, type RunActivities, type RunEnding } from '../workflows/run-types.ts';
import { finalizeRun } from './finalize.ts';

export interface RunActivityHost {
  workflow: RunActivities;
  start(): void;
  stop(): Promise<void>;
}

export function createRunActivities(deps: AppDeps): RunActivityHost {
  const pool = deps.database.pool;
  const workflow: RunActivities = {
    async boot(runId) {
      throw activityFailure('sandbox_unavailable', `No sandbox adapter is available for run ${runId}.`);
    },
    async lastHeartbeatAt(runId) {
      const { rows } = await pool.query('SELECT last_event_at FROM runs WHERE id = $1', [runId]);
      return rows[0]?.last_event_at ? (rows[0].last_event_at as Date).getTime() : null;
    },
    async sandboxAlive() {
      return false;
    },
    finalize: (runId: string, ending: RunEnding) => finalizeRun(deps, runId, ending),
    async teardown() {},
  };
  return { workflow, start() {}, async stop() {} };
}
