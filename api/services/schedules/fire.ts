// One fire of a schedule: launch its agent as the creator, through the same admission as any
// launch, at most once per (schedule, tick): runs(schedule_id, schedule_fire_at) is unique, so a
// retried or duplicated fire finds the run the first one made. Every outcome is recorded in
// schedule_fires and on the schedule (last_fire).
import { setSpanAttributes, setSpanTenant, tracingActive, withSpan } from '../../../lib/tracing/index.ts';
import type pg from 'pg';
import type { Config } from '../../../lib/config.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import { isProblem } from '../../../lib/problem.ts';
import type { Db } from '../../../db/client.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { launchAgentRun } from '../runs/launch.ts';
import { launchSettingsOf } from '../runs/model-settings.ts';
import type { RunSubmitter } from '../runs/submitter.ts';
import { ACTOR_LOST_REASON, creatorPermissions, disableSchedules } from './actor.ts';
import { SCHEDULE_COLUMNS, type LastFire, type ScheduleRow } from './records.ts';
import type { FireResult, ScheduleView } from '../../../workflows/schedule-types.ts';

export const AGENT_GONE_REASON = 'The agent was deleted or is no longer available in this space.';

export interface FireDeps {
  pool: pg.Pool;
  db: Db;
  config: Config;
  secrets: SecretBox;
  /** hands the launched run to the engine (absent: the submitter's sweep picks it up) */
  submitter(): RunSubmitter | null;
}


const REFUSALS = new Set(['org_run_rate_limited', 'org_run_concurrency_exceeded']);
const AGENT_GONE = new Set(['agent_not_found', 'not_an_agent', 'no_published_version']);

export async function viewSchedule(pool: pg.Pool, id: string): Promise<ScheduleView | null> {
  const { rows } = await pool.query<ScheduleRow>(`SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE id = $1`, [id]);
  const r = rows[0];
  if (!r) return null;
  return { enabled: r.enabled, generation: r.generation, cronExpression: r.cron_expression, timezone: r.timezone, nextRunAt: r.next_run_at?.toISOString() ?? null };
}

/** The engine armed this generation (the sweeper re-arms rows where this lags). */
export async function markArmed(pool: pg.Pool, id: string, generation: number): Promise<void> {
  await pool.query('UPDATE schedules SET armed_generation = $2 WHERE id = $1 AND armed_generation < $2', [id, generation]);
}

/** The tick after `fireAt` becomes next_run_at, unless the schedule changed meanwhile. */
export async function advanceSchedule(pool: pg.Pool, id: string, generation: number, next: string): Promise<void> {
  await pool.query('UPDATE schedules SET next_run_at = $3 WHERE id = $1 AND generation = $2 AND enabled', [id, generation, next]);
}

async function record(pool: pg.Pool, row: ScheduleRow, fireAt: string, fire: LastFire): Promise<void> {
  await pool.query(
    `INSERT INTO schedule_fires (schedule_id, fire_at, org_id, space_id, outcome, run_id, attempts, error)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (schedule_id, fire_at) DO UPDATE SET outcome = EXCLUDED.outcome, run_id = EXCLUDED.run_id,
       attempts = EXCLUDED.attempts, error = EXCLUDED.error, updated_at = now()`,
    [row.id, fireAt, row.org_id, row.space_id, fire.outcome, fire.run_id, fire.attempts, fire.error],
  );
  await pool.query(
    `UPDATE schedules SET last_fire = $2 WHERE id = $1 AND (last_fire IS NULL OR (last_fire->>'fire_time')::timestamptz <= $3::timestamptz)`,
    [row.id, fire, fireAt],
  );
}

async function runOfTick(pool: pg.Pool, id: string, fireAt: string): Promise<string | null> {
  const { rows } = await pool.query<{ id: string }>('SELECT id FROM runs WHERE schedule_id = $1 AND schedule_fire_at = $2', [id, fireAt]);
  return rows[0]?.id ?? null;
}

/**
 * Fires tick `fireAt` (attempt counts from 1). A refusal by admission is retried by the caller
 * within the tick; `lastAttempt` turns it into a recorded skip.
 */
export function fireSchedule(deps: FireDeps, id: string, generation: number, fireAt: string, attempt: number, lastAttempt: boolean): Promise<FireResult> {
  if (!tracingActive()) return fire(deps, id, generation, fireAt, attempt, lastAttempt);
  // a fire starts the trace of the run it launches
  return withSpan('schedule fire', { 'agent_platform.schedule_id': id, 'agent_platform.schedule.fire_time': fireAt, 'agent_platform.schedule.attempt': attempt }, async () => {
    const result = await fire(deps, id, generation, fireAt, attempt, lastAttempt);
    setSpanAttributes({ 'agent_platform.schedule.outcome': result.outcome });
    return result;
  }, { parent: null });
}

async function fire(deps: FireDeps, id: string, generation: number, fireAt: string, attempt: number, lastAttempt: boolean): Promise<FireResult> {
  const { rows } = await deps.pool.query<ScheduleRow>(`SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE id = $1`, [id]);
  const row = rows[0];
  if (!row || !row.enabled || row.generation !== generation) return { outcome: 'stale' };
  setSpanTenant({ orgId: row.org_id, spaceId: row.space_id });
  const fire = (outcome: LastFire['outcome'], runId: string | null, error: LastFire['error'] = null): LastFire =>
    ({ fire_time: fireAt, outcome, run_id: runId, attempts: attempt, error });
  const launchedBefore = async (runId: string): Promise<FireResult> => {
    await record(deps.pool, row, fireAt, fire('launched', runId));
    return { outcome: 'launched', runId };
  };

  // A retry after the launch committed but before it was recorded (a crash between) records it now.
  const already = await runOfTick(deps.pool, id, fireAt);
  if (already) return launchedBefore(already);

  const permissions = await creatorPermissions(deps.pool, row.org_id, row.space_id, row.created_by);
  if (!permissions.has('agents:run')) {
    await disableSchedules(deps.pool, row.org_id, [id], ACTOR_LOST_REASON);
    await record(deps.pool, row, fireAt, fire('skipped', null, { code: 'schedule_actor_invalid', message: ACTOR_LOST_REASON }));
    return { outcome: 'skipped', code: 'schedule_actor_invalid' };
  }

  const scope: SpaceScope = { pool: deps.pool, db: deps.db, orgId: row.org_id, spaceId: row.space_id, actor: { userId: row.created_by } };
  try {
    const run = await launchAgentRun(scope, {
      config: deps.config, secrets: deps.secrets, permissions, submitter: deps.submitter(), scheduleId: id, scheduleFireAt: fireAt,
    }, row.agent_id, { input: row.input ?? {}, model_id: row.model_id ?? undefined, model_settings: launchSettingsOf(row.model_settings) });
    await record(deps.pool, row, fireAt, fire('launched', run.id));
    return { outcome: 'launched', runId: run.id };
  } catch (err) {
    if ((err as { code?: string; constraint?: string }).code === '23505' && (err as { constraint?: string }).constraint === 'runs_schedule_fire_idx') {
      return launchedBefore((await runOfTick(deps.pool, id, fireAt))!);
    }
    if (!isProblem(err)) throw err;
    const error = { code: err.code, message: err.detail ?? err.code };
    if (REFUSALS.has(err.code)) {
      await record(deps.pool, row, fireAt, fire(lastAttempt ? 'skipped' : 'refused', null, error));
      if (lastAttempt) return { outcome: 'skipped', code: err.code };
      return { outcome: 'refused', code: err.code, retryAfterMs: Math.max(1, err.retryAfter ?? 5) * 1000 };
    }
    if (AGENT_GONE.has(err.code)) await disableSchedules(deps.pool, row.org_id, [id], AGENT_GONE_REASON);
    await record(deps.pool, row, fireAt, fire(AGENT_GONE.has(err.code) ? 'skipped' : 'failed', null, error));
    return { outcome: AGENT_GONE.has(err.code) ? 'skipped' : 'failed', code: err.code };
  }
}
