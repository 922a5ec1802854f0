// The schedule object's side effects, over this process's database and engine.
import type { AppDeps } from '../../deps.ts';
import type { ScheduleActivities } from '../../../workflows/schedule-types.ts';
import type { RunSubmitter } from '../runs/submitter.ts';
import { advanceSchedule, fireSchedule, markArmed, viewSchedule } from './fire.ts';

export function scheduleActivitiesFor(deps: AppDeps): ScheduleActivities {
  const { pool, db } = deps.database;
  // A worker without the API's submitter hands the run to the engine itself.
  const submitter = (): RunSubmitter | null =>
    deps.submitter ?? (deps.runs ? { submit: (id) => void deps.runs!.submit(id).catch(() => {}), sweep: async () => 0, stop: async () => {} } : null);
  return {
    view: (id) => viewSchedule(pool, id),
    markArmed: (id, generation) => markArmed(pool, id, generation),
    advance: (id, generation, next) => advanceSchedule(pool, id, generation, next),
    fire: (id, generation, fireAt, attempt, lastAttempt) =>
      fireSchedule({ pool, db, config: deps.config, secrets: deps.secrets, submitter }, id, generation, fireAt, attempt, lastAttempt),
  };
}
