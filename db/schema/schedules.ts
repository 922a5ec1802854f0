// Schedules (a cron expression in an IANA zone launching an agent as its creator) and the record of
// each fire, keyed by (schedule, fire time) so a tick is launched at most once.
import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const schedules = pgTable('schedules', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull(),
  spaceId: text('space_id').notNull(),
  /** @scope/name of the agent package */
  agentId: text('agent_id').notNull(),
  name: text('name').notNull(),
  cronExpression: text('cron_expression').notNull(),
  timezone: text('timezone').notNull(),
  input: jsonb('input'),
  /** the model its runs use (null: the agent's configured one, else the organization's default) */
  modelId: text('model_id'),
  /** its runs' model settings, checked like a launch's (null: the model's own) */
  modelSettings: jsonb('model_settings'),
  enabled: boolean('enabled').notNull().default(true),
  /** why the platform (or a person) disabled it, readable */
  disabledReason: text('disabled_reason'),
  /** the person the runs execute as */
  createdBy: text('created_by').notNull(),
  /** bumped on every change: If-Match and the body's version compare against it */
  version: integer('version').notNull().default(1),
  /** bumped when cron, zone or enabled change: fires armed for an older generation are ignored */
  generation: integer('generation').notNull().default(1),
  /** the generation the engine last armed; the sweeper re-arms rows where it lags */
  armedGeneration: integer('armed_generation').notNull().default(0),
  nextRunAt: ts('next_run_at'),
  /** the latest fire: its time, outcome, run and error */
  lastFire: jsonb('last_fire'),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
}, (t) => [
  index('schedules_space_idx').on(t.orgId, t.spaceId, t.createdAt, t.id),
  index('schedules_agent_idx').on(t.orgId, t.agentId),
  index('schedules_creator_idx').on(t.orgId, t.createdBy).where(sql`enabled`),
  index('schedules_unarmed_idx').on(t.updatedAt).where(sql`armed_generation <> generation`),
]);

export const scheduleFires = pgTable('schedule_fires', {
  scheduleId: text('schedule_id').notNull(),
  fireAt: ts('fire_at').notNull(),
  orgId: uuid('org_id').notNull(),
  spaceId: text('space_id').notNull(),
  /** launched, refused (admission said no; retried within the tick), skipped (given up), failed */
  outcome: text('outcome').notNull(),
  runId: text('run_id'),
  attempts: integer('attempts').notNull().default(1),
  error: jsonb('error'),
  updatedAt: ts('updated_at').notNull().defaultNow(),
}, (t) => [primaryKey({ columns: [t.scheduleId, t.fireAt] })]);
