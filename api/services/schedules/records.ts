// The schedule record: its row, its wire shape and its ETag.
import type { SpaceScope } from '../../../db/tenant.ts';
import { problem } from '../../../lib/problem.ts';
import type { RunModelSettings } from '../runs/model-settings.ts';

export interface LastFire {
  fire_time: string;
  outcome: 'launched' | 'refused' | 'skipped' | 'failed';
  run_id: string | null;
  attempts: number;
  error: { code: string; message: string } | null;
}

export interface ScheduleRow {
  id: string;
  org_id: string;
  space_id: string;
  agent_id: string;
  name: string;
  cron_expression: string;
  timezone: string;
  input: Record<string, unknown> | null;
  model_id: string | null;
  model_settings: RunModelSettings | null;
  enabled: boolean;
  disabled_reason: string | null;
  created_by: string;
  version: number;
  generation: number;
  armed_generation: number;
  next_run_at: Date | null;
  last_fire: LastFire | null;
  created_at: Date;
  updated_at: Date;
}

export interface ScheduleWire {
  id: string;
  object: 'schedule';
  name: string;
  packageId: string;
  enabled: boolean;
  disabled_reason: string | null;
  cron_expression: string;
  timezone: string;
  input: Record<string, unknown> | null;
  model_id: string | null;
  model_settings: RunModelSettings | null;
  next_run_at: string | null;
  created_by: string;
  version: number;
  last_fire: LastFire | null;
  createdAt: string;
  updatedAt: string;
}

export const SCHEDULE_COLUMNS = `id, org_id, space_id, agent_id, name, cron_expression, timezone, input, model_id, model_settings, enabled, disabled_reason,
  created_by, version, generation, armed_generation, next_run_at, last_fire, created_at, updated_at`;

export function toScheduleWire(r: ScheduleRow): ScheduleWire {
  return {
    id: r.id,
    object: 'schedule',
    name: r.name,
    packageId: r.agent_id,
    enabled: r.enabled,
    disabled_reason: r.disabled_reason,
    cron_expression: r.cron_expression,
    timezone: r.timezone,
    input: r.input,
    model_id: r.model_id,
    model_settings: r.model_settings,
    next_run_at: r.enabled && r.next_run_at ? r.next_run_at.toISOString() : null,
    created_by: r.created_by,
    version: r.version,
    last_fire: r.last_fire,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

/** A strong ETag: the record's version. */
export function scheduleEtag(version: number): string {
  return `"v${version}"`;
}

export function scheduleNotFound(id: string) {
  return problem('not_found', { detail: `No schedule ${id} in this space.` });
}

export async function getScheduleRow(scope: SpaceScope, id: string): Promise<ScheduleRow> {
  const { rows } = await scope.pool.query<ScheduleRow>(
    `SELECT ${SCHEDULE_COLUMNS} FROM schedules WHERE org_id = $1 AND space_id = $2 AND id = $3`,
    [scope.orgId, scope.spaceId, id],
  );
  if (!rows[0]) throw scheduleNotFound(id);
  return rows[0];
}
