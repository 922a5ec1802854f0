// Schedules of an agent in a space: create, read, list, change, enable/disable, delete. Each change
// to cron, zone or enabled bumps the generation and asks the engine to re-arm at once; the
// schedule's virtual object ignores fires armed for an older generation.
import type { Permission } from '../../../lib/permissions.ts';
import { newId } from '../../../lib/ids.ts';
import { problem } from '../../../lib/problem.ts';
import { CronError, TimeZoneError, nextFireAfter } from '../../../lib/schedule-cron.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { resolveRunnableAgent } from '../packages/dependencies.ts';
import { agentConfig, checkInput } from '../runs/launch.ts';
import { checkLaunchModelSettings, launchSettingsOf, type LaunchModelSettings, type RunModelSettings } from '../runs/model-settings.ts';
import { resolveRunModel } from '../../modules/core-providers/resolve-model.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import { creatorPermissions } from './actor.ts';
import { SCHEDULE_COLUMNS, getScheduleRow, scheduleEtag, scheduleNotFound, toScheduleWire, type ScheduleRow, type ScheduleWire } from './records.ts';

/** Hands a schedule's new generation to the engine without making the caller wait. */
export interface ScheduleArmer {
  arm(scheduleId: string, generation: number): void;
}

export interface ScheduleBody {
  name: string;
  cron_expression: string;
  timezone: string;
  input?: Record<string, unknown>;
  model_id?: string;
  model_settings?: LaunchModelSettings;
}

export interface SchedulePatch {
  name?: string;
  cron_expression?: string;
  timezone?: string;
  input?: Record<string, unknown>;
  /** null: back to the agent's configured model, else the organization's default */
  model_id?: string | null;
  /** null: the model's own settings */
  model_settings?: LaunchModelSettings | null;
  enabled?: boolean;
  version?: number;
}

/** The next tick after now; invalid_cron_expression or invalid_timezone when it cannot be read. */
export function nextRunAt(cron: string, zone: string, after = new Date()): Date {
  try {
    return nextFireAfter(cron, zone, after);
  } catch (err) {
    if (err instanceof TimeZoneError) throw problem('invalid_timezone', { detail: `${zone} is not an IANA time zone (for example Europe/Paris).` });
    if (err instanceof CronError) throw problem('invalid_cron_expression', { detail: `${cron}: ${err.message}.` });
    throw err;
  }
}

const actorInvalid = (detail: string) => problem('schedule_actor_invalid', { detail });

/** The agent is runnable in the space and the input satisfies its schema (with locked fields). */
async function checkAgentAndInput(scope: SpaceScope, agentId: string, input: Record<string, unknown>): Promise<void> {
  const [agent, config] = await Promise.all([resolveRunnableAgent(scope, agentId), agentConfig(scope, agentId)]);
  checkInput(agent.manifest, input, config.locked_input);
}

/**
 * The model and settings the schedule's runs will launch with, checked as a launch checks them
 * (the model named, else the agent's configured one, else the organization's default; the settings
 * against it with its defaults): what a fire would refuse is refused now. Answers the settings to
 * store (null: the model's own).
 */
async function checkModel(scope: SpaceScope, secrets: SecretBox, agentId: string, modelId: string | null, settings: LaunchModelSettings | undefined): Promise<RunModelSettings | null> {
  const model = await resolveRunModel(scope, secrets, modelId ?? (await agentConfig(scope, agentId)).model_id);
  return checkLaunchModelSettings(model, settings);
}

export async function createSchedule(
  scope: SpaceScope, permissions: ReadonlySet<Permission>, secrets: SecretBox, agentId: string, body: ScheduleBody, armer: ScheduleArmer | null,
): Promise<ScheduleWire> {
  if (scope.actor.endUserId) throw actorInvalid('A schedule runs as a member of the space; an end-user cannot own one.');
  if (!permissions.has('agents:run')) throw actorInvalid('A schedule runs as its creator, who must hold agents:run in this space.');
  const next = nextRunAt(body.cron_expression, body.timezone);
  await checkAgentAndInput(scope, agentId, body.input ?? {});
  const settings = body.model_id !== undefined || body.model_settings !== undefined
    ? await checkModel(scope, secrets, agentId, body.model_id ?? null, body.model_settings)
    : null;
  const { rows } = await scope.pool.query<ScheduleRow>(
    `INSERT INTO schedules (id, org_id, space_id, agent_id, name, cron_expression, timezone, input, model_id, model_settings, created_by, next_run_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING ${SCHEDULE_COLUMNS}`,
    [newId('sched'), scope.orgId, scope.spaceId, agentId, body.name, body.cron_expression.trim(), body.timezone, body.input ?? null,
      body.model_id ?? null, settings, scope.actor.userId, next],
  );
  armer?.arm(rows[0].id, rows[0].generation);
  return toScheduleWire(rows[0]);
}

export async function getSchedule(scope: SpaceScope, id: string): Promise<ScheduleWire> {
  return toScheduleWire(await getScheduleRow(scope, id));
}

export async function listSchedules(scope: SpaceScope, page: { limit: number; offset: number }, agentId?: string): Promise<{ items: ScheduleWire[]; total: number }> {
  const params: unknown[] = [scope.orgId, scope.spaceId];
  let where = 'org_id = $1 AND space_id = $2';
  if (agentId) {
    params.push(agentId);
    where += ` AND agent_id = $${params.length}`;
  }
  const [page_, count] = await Promise.all([
    scope.pool.query<ScheduleRow>(
      `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, page.limit + 1, page.offset],
    ),
    scope.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM schedules WHERE ${where}`, params),
  ]);
  return { items: page_.rows.map(toScheduleWire), total: count.rows[0].n };
}

/** The creator can still launch here, or schedule_actor_invalid. */
async function requireCreatorCanLaunch(scope: SpaceScope, row: ScheduleRow): Promise<void> {
  const held = await creatorPermissions(scope.pool, scope.orgId, scope.spaceId, row.created_by);
  if (!held.has('agents:run')) throw actorInvalid("The schedule's creator no longer holds agents:run in this space; create a new schedule instead.");
}

/** What a change was based on: the If-Match ETags (null: none sent) and the body's version. */
export interface Expectation {
  tags: string[] | null;
  version?: number;
}

/**
 * A change based on another version than the stored one is 412 precondition_failed carrying the
 * current ETag (the client saw an older state: reload and retry). If-Match compares strongly: a
 * weak tag or one this schedule never had does not match; `*` matches any existing schedule.
 */
function checkExpectation(row: ScheduleRow, expected: Expectation): void {
  const current = scheduleEtag(row.version);
  const headers = { ETag: current };
  if (expected.tags !== null && !expected.tags.some((t) => t === '*' || t === current)) {
    throw problem('precondition_failed', { param: 'If-Match', headers, detail: `Schedule ${row.id} is at ${current}; read it again and retry.` });
  }
  if (expected.version !== undefined && expected.version !== row.version) {
    throw problem('precondition_failed', { headers, detail: `Schedule ${row.id} is at version ${row.version}, not ${expected.version}; read it again and retry.` });
  }
}

/**
 * Applies a change. A stale If-Match or body version is 412 (checkExpectation); a change that
 * lands between this read and the write (a race no client could have seen) is 409
 * schedule_modified_concurrently.
 */
export async function updateSchedule(
  scope: SpaceScope, secrets: SecretBox, id: string, patch: SchedulePatch, expected: Expectation, armer: ScheduleArmer | null,
): Promise<ScheduleWire> {
  const row = await getScheduleRow(scope, id);
  checkExpectation(row, expected);
  const stale = () => problem('schedule_modified_concurrently', { detail: `Schedule ${id} changed while this change was applied; read it again and retry.` });
  const cron = patch.cron_expression?.trim() ?? row.cron_expression;
  const zone = patch.timezone ?? row.timezone;
  const enabled = patch.enabled ?? row.enabled;
  const rearm = cron !== row.cron_expression || zone !== row.timezone || enabled !== row.enabled;
  const next = nextRunAt(cron, zone);
  if (enabled) await requireCreatorCanLaunch(scope, row);
  if (patch.input !== undefined || (enabled && !row.enabled)) await checkAgentAndInput(scope, row.agent_id, patch.input ?? row.input ?? {});
  const modelId = patch.model_id !== undefined ? patch.model_id : row.model_id;
  const asked = patch.model_settings !== undefined ? patch.model_settings ?? undefined : launchSettingsOf(row.model_settings);
  const modelChanged = patch.model_id !== undefined || patch.model_settings !== undefined;
  // checked when changed, and again when switched on (the model may have changed meanwhile)
  const settings = (modelChanged || (enabled && !row.enabled)) && (modelId !== null || asked !== undefined)
    ? await checkModel(scope, secrets, row.agent_id, modelId, asked)
    : modelChanged ? null : row.model_settings;
  const { rows } = await scope.pool.query<ScheduleRow>(
    `UPDATE schedules SET name = $5, cron_expression = $6, timezone = $7, input = $8, enabled = $9,
            disabled_reason = CASE WHEN $9 THEN NULL WHEN enabled THEN 'Disabled by a member.' ELSE disabled_reason END,
            next_run_at = CASE WHEN $10 THEN $11 ELSE next_run_at END,
            model_id = $12, model_settings = $13,
            generation = generation + CASE WHEN $10 THEN 1 ELSE 0 END, version = version + 1, updated_at = now()
      WHERE org_id = $1 AND space_id = $2 AND id = $3 AND version = $4
      RETURNING ${SCHEDULE_COLUMNS}`,
    [scope.orgId, scope.spaceId, id, row.version, patch.name ?? row.name, cron, zone, patch.input ?? row.input, enabled, rearm, next, modelId, settings],
  );
  if (!rows[0]) throw stale();
  if (rearm) armer?.arm(id, rows[0].generation);
  return toScheduleWire(rows[0]);
}

export async function deleteSchedule(scope: SpaceScope, id: string, armer: ScheduleArmer | null): Promise<void> {
  const { rows } = await scope.pool.query<{ generation: number }>(
    'DELETE FROM schedules WHERE org_id = $1 AND space_id = $2 AND id = $3 RETURNING generation',
    [scope.orgId, scope.spaceId, id],
  );
  if (!rows[0]) throw scheduleNotFound(id);
  await scope.pool.query('DELETE FROM schedule_fires WHERE org_id = $1 AND schedule_id = $2', [scope.orgId, id]);
  // The object finds the row gone and cancels its pending fire.
  armer?.arm(id, rows[0].generation + 1);
}
