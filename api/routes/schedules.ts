// Schedules (spec: Resources "Schedule", Agents and runs): created under an agent, then read,
// changed, switched on and off and deleted by id; the runs a schedule launched are offset-paged.
import { z } from 'zod';
import { spaceScopeOf } from '../../db/tenant.ts';
import type { Request } from '../http.ts';
import { OffsetQuery, listText, offsetList, offsetPage } from '../lists.ts';
import { created, noContent, ok, route, type Reply } from '../route.ts';
import { listRunWire } from '../services/runs/records.ts';
import { scheduleEtag, getScheduleRow, type ScheduleWire } from '../services/schedules/records.ts';
import { createSchedule, deleteSchedule, getSchedule, listSchedules, updateSchedule, type Expectation } from '../services/schedules/service.ts';
import { AgentParams, LaunchModelSettingsBody, RunListSchema, agentIdOf } from './run-schemas.ts';
import { requireAgentInSpace } from './runs.ts';

const TAG = 'Schedules';
const IdParams = z.object({ id: z.string() });
const InputObject = z.record(z.string(), z.unknown());

const LastFireSchema = z.object({
  fire_time: z.string().describe('the tick, ISO 8601 UTC'),
  outcome: z.enum(['launched', 'refused', 'skipped', 'failed']).describe('refused: admission said no and the fire is being retried within its tick; skipped: given up, see error'),
  run_id: z.string().nullable(),
  attempts: z.number().int(),
  error: z.object({ code: z.string(), message: z.string() }).nullable(),
});

export const ScheduleSchema = z.object({
  id: z.string(),
  object: z.literal('schedule'),
  name: z.string(),
  packageId: z.string().describe('the agent the schedule launches'),
  enabled: z.boolean(),
  disabled_reason: z.string().nullable().describe('why the schedule was disabled, readable; null while enabled'),
  cron_expression: z.string(),
  timezone: z.string(),
  input: InputObject.nullable(),
  model_id: z.string().nullable().describe("the model its runs use; null: the agent's configured one, else the organization's default"),
  model_settings: z.object({ temperature: z.number().nullable(), reasoning_effort: z.string().nullable() }).nullable()
    .describe("its runs' model settings, as a run shows them; null: the model's own"),
  next_run_at: z.string().nullable().describe('the next tick, ISO 8601 UTC; null while disabled'),
  created_by: z.string().describe('the member the runs execute as'),
  version: z.number().int().describe('bumped by every change; send it back (or the ETag in If-Match) to update safely'),
  last_fire: LastFireSchema.nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
}).meta({ id: 'Schedule' });

const ScheduleListSchema = z.object({
  object: z.literal('list'), data: z.array(ScheduleSchema), hasMore: z.boolean(), total: z.number().int().optional(), limit: z.number().int().optional(),
});

const CreateBody = z.object({
  name: z.string().trim().min(1).max(200),
  cron_expression: z.string().min(1).max(200).describe('5 fields: minute hour day-of-month month day-of-week'),
  timezone: z.string().min(1).max(100).describe('IANA time zone, for example Europe/Paris'),
  input: InputObject.optional().describe("the run's input; must satisfy the agent's input schema"),
  model_id: z.string().optional().describe("the model the runs use (default: the agent's configured one, else the organization's default)"),
  model_settings: LaunchModelSettingsBody.optional(),
}).strict();

const UpdateBody = z.object({
  name: z.string().trim().min(1).max(200).optional(),
  cron_expression: z.string().min(1).max(200).optional(),
  timezone: z.string().min(1).max(100).optional(),
  input: InputObject.optional(),
  model_id: z.string().nullable().optional().describe("null: back to the agent's configured model, else the organization's default"),
  model_settings: LaunchModelSettingsBody.nullable().optional().describe("the runs' model settings, checked like a launch's; null: the model's own"),
  enabled: z.boolean().optional(),
  version: z.number().int().min(1).optional().describe('the version this change is based on (412 precondition_failed with the current ETag when stale)'),
}).strict();

const IF_MATCH = { name: 'If-Match', description: 'ETag of the schedule this change is based on (412 precondition_failed with the current ETag when stale; omitted: last write wins)' };

function withEtag(status: 200 | 201, s: ScheduleWire): Reply {
  const headers = { ETag: scheduleEtag(s.version) };
  return status === 201 ? created(s, headers) : ok(s, headers);
}

/**
 * What the caller based its change on: the If-Match header (a list of ETags, `*` for any) and the
 * body's version. Either naming another version than the stored one is answered 412
 * precondition_failed with the current ETag, before anything changes (spec: Conditional requests).
 */
function expectation(req: Request, bodyVersion: number | undefined): Expectation {
  const header = req.headers['if-match'];
  const tags = typeof header === 'string' ? header.split(',').map((t) => t.trim()).filter((t) => t !== '') : null;
  return { tags, version: bodyVersion };
}

const ScheduleResponse = { description: 'The schedule; ETag header', schema: ScheduleSchema, headers: ['ETag'] };
/** the answers of a conditional change: the stale case, and the race no client could have seen */
const CONDITIONAL_RESPONSES = {
  200: ScheduleResponse,
  409: { description: 'schedule_modified_concurrently: another change landed while this one was applied; read the schedule again and retry' },
  412: { description: 'precondition_failed: If-Match or version names another version than the stored one; ETag header: the current one', headers: ['ETag'] },
};

export const scheduleRoutes = [
  route({
    method: 'post', path: '/api/agents/{scope}/{name}/schedules', summary: 'Schedule an agent (cron in a time zone)', tag: TAG,
    permission: 'schedules:write', rateLimit: { perMinute: 10 }, params: AgentParams, body: CreateBody,
    location: (b) => `/api/schedules/${b.id}`,
    responses: { 201: { ...ScheduleResponse, description: 'The schedule, armed; ETag header' } },
    handler: async ({ ctx, params, body, deps }) =>
      withEtag(201, await createSchedule(spaceScopeOf(ctx, deps.database), ctx.permissions, deps.secrets, agentIdOf(params), body, deps.schedules ?? null)),
  }),
  route({
    method: 'get', path: '/api/agents/{scope}/{name}/schedules', summary: "List an agent's schedules (offset-paged)", tag: TAG,
    permission: 'schedules:read', params: AgentParams, query: OffsetQuery,
    responses: { 200: { description: 'A page of schedules', schema: ScheduleListSchema } },
    handler: async ({ ctx, params, query, req, deps }) => {
      const page = offsetPage(query);
      const scope = spaceScopeOf(ctx, deps.database);
      const agentId = agentIdOf(params);
      await requireAgentInSpace(scope, agentId);
      const { items, total } = await listSchedules(scope, page, agentId);
      const { body, headers } = offsetList(req, page, items, total);
      return ok(body, headers);
    },
  }),
  route({
    method: 'get', path: '/api/schedules', summary: 'List the schedules of the space (offset-paged)', tag: TAG,
    permission: 'schedules:read', query: OffsetQuery,
    responses: { 200: { description: 'A page of schedules', schema: ScheduleListSchema } },
    handler: async ({ ctx, query, req, deps }) => {
      const page = offsetPage(query);
      const { items, total } = await listSchedules(spaceScopeOf(ctx, deps.database), page);
      const { body, headers } = offsetList(req, page, items, total);
      return ok(body, headers);
    },
  }),
  route({
    method: 'get', path: '/api/schedules/{id}', summary: 'Read a schedule', tag: TAG,
    permission: 'schedules:read', params: IdParams,
    responses: { 200: ScheduleResponse },
    handler: async ({ ctx, params, deps }) => withEtag(200, await getSchedule(spaceScopeOf(ctx, deps.database), params.id)),
  }),
  route({
    method: 'patch', path: '/api/schedules/{id}', summary: 'Change a schedule (a new cron, zone or enabled re-arms it at once)', tag: TAG,
    permission: 'schedules:write', params: IdParams, body: UpdateBody, headers: [IF_MATCH],
    responses: CONDITIONAL_RESPONSES,
    handler: async ({ ctx, params, body, req, deps }) => {
      const { version, ...patch } = body;
      return withEtag(200, await updateSchedule(spaceScopeOf(ctx, deps.database), deps.secrets, params.id, patch, expectation(req, version), deps.schedules ?? null));
    },
  }),
  route({
    method: 'post', path: '/api/schedules/{id}/enable', summary: 'Enable a schedule (armed from now)', tag: TAG,
    permission: 'schedules:write', params: IdParams, body: z.object({}).strict(), headers: [IF_MATCH],
    responses: CONDITIONAL_RESPONSES,
    handler: async ({ ctx, params, req, deps }) =>
      withEtag(200, await updateSchedule(spaceScopeOf(ctx, deps.database), deps.secrets, params.id, { enabled: true }, expectation(req, undefined), deps.schedules ?? null)),
  }),
  route({
    method: 'post', path: '/api/schedules/{id}/disable', summary: 'Disable a schedule (its armed fire is cancelled)', tag: TAG,
    permission: 'schedules:write', params: IdParams, body: z.object({}).strict(), headers: [IF_MATCH],
    responses: CONDITIONAL_RESPONSES,
    handler: async ({ ctx, params, req, deps }) =>
      withEtag(200, await updateSchedule(spaceScopeOf(ctx, deps.database), deps.secrets, params.id, { enabled: false }, expectation(req, undefined), deps.schedules ?? null)),
  }),
  route({
    method: 'delete', path: '/api/schedules/{id}', summary: 'Delete a schedule (its armed fire is cancelled; its runs stay)', tag: TAG,
    permission: 'schedules:delete', params: IdParams,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ ctx, params, deps }) => {
      await deleteSchedule(spaceScopeOf(ctx, deps.database), params.id, deps.schedules ?? null);
      return noContent();
    },
  }),
  route({
    method: 'get', path: '/api/schedules/{id}/runs', summary: 'List the runs a schedule launched (offset-paged)', tag: TAG,
    permission: 'runs:read', params: IdParams, query: OffsetQuery,
    responses: { 200: { description: 'A page of runs, newest first', schema: RunListSchema } },
    handler: async ({ ctx, params, query, req, deps }) => {
      const page = offsetPage(query);
      const scope = spaceScopeOf(ctx, deps.database);
      await getScheduleRow(scope, params.id);
      const { items, total } = await listRunWire(scope, ctx.permissions, page, { scheduleId: params.id }, deps.runReads);
      const { body, headers } = offsetList(req, page, items, total);
      return ok(listText(body), headers);
    },
  }),
];
