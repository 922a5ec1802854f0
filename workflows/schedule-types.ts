// What the schedule object asks of its activities (side effects live in api/services/schedules,
// wired in bin/). Plain data in and out.

export const SCHEDULE_OBJECT_NAME = 'schedule';

/** What the object needs to know of a schedule, read from the database at each step. */
export interface ScheduleView {
  enabled: boolean;
  generation: number;
  cronExpression: string;
  timezone: string;
  nextRunAt: string | null;
}

export type FireResult =
  | { outcome: 'launched'; runId: string }
  | { outcome: 'refused'; code: string; retryAfterMs: number }
  | { outcome: 'skipped' | 'failed'; code: string }
  /** the schedule is gone, disabled or changed since this fire was armed */
  | { outcome: 'stale' };

export interface ScheduleActivities {
  view(id: string): Promise<ScheduleView | null>;
  markArmed(id: string, generation: number): Promise<void>;
  /** next_run_at becomes `next`, unless the schedule changed since `generation` */
  advance(id: string, generation: number, next: string): Promise<void>;
  fire(id: string, generation: number, fireAt: string, attempt: number, lastAttempt: boolean): Promise<FireResult>;
}

export interface ArmRequest {
  generation: number;
}

export interface FireRequest {
  generation: number;
  /** the tick, ISO UTC */
  fireAt: string;
  attempt: number;
  /** retries of a refused fire stop here (the next tick, or the end of the retry window) */
  until: string;
}
