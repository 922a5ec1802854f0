// Webhooks (webhooks module): the organization's or a space's signed run-event subscriptions, one
// delivery row per (webhook, run, event) written with the run's status change, and every attempt.
// Notifications: what a person is told about their runs, schedules and connections.
import { sql } from 'drizzle-orm';
import { boolean, index, integer, json, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { organizations, spaces } from './identity.ts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const webhooks = pgTable('webhooks', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  /** null for organization-level webhooks */
  spaceId: text('space_id').references(() => spaces.id, { onDelete: 'cascade' }),
  /** org or space */
  level: text('level').notNull(),
  url: text('url').notNull(),
  events: text('events').array().notNull(),
  packageId: text('package_id'),
  /** summary or full */
  payloadMode: text('payload_mode').notNull(),
  enabled: boolean('enabled').notNull().default(true),
  disabledReason: text('disabled_reason'),
  /** the whsec_ signing secret, sealed with the instance key */
  secretSealed: text('secret_sealed').notNull(),
  /** the secret before the last rotation: it signs too until previous_secret_expires_at */
  previousSecretSealed: text('previous_secret_sealed'),
  previousSecretExpiresAt: ts('previous_secret_expires_at'),
  createdBy: text('created_by').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
}, (t) => [
  index('webhooks_org_idx').on(t.orgId, t.spaceId, sql`${t.id} COLLATE "C"`),
]);

export const webhookDeliveries = pgTable('webhook_deliveries', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull(),
  webhookId: text('webhook_id').notNull().references(() => webhooks.id, { onDelete: 'cascade' }),
  runId: text('run_id').notNull(),
  event: text('event').notNull(),
  /** the message body, fixed when the status change committed; json keeps its key order (migration 0031) */
  payload: json('payload').notNull(),
  /** pending, succeeded, failed or cancelled */
  status: text('status').notNull().default('pending'),
  attemptCount: integer('attempt_count').notNull().default(0),
  nextAttemptAt: ts('next_attempt_at'),
  /** when an invocation was last asked of the engine for it */
  dispatchedAt: ts('dispatched_at'),
  createdAt: ts('created_at').notNull().defaultNow(),
  finishedAt: ts('finished_at'),
  /** the approval request a run.approval_* delivery reports (a run may ask more than once) */
  approvalId: text('approval_id'),
}, (t) => [
  uniqueIndex('webhook_deliveries_once_uq').on(t.webhookId, t.runId, t.event).where(sql`approval_id IS NULL`),
  uniqueIndex('webhook_deliveries_approval_once_uq').on(t.webhookId, t.approvalId, t.event).where(sql`approval_id IS NOT NULL`),
  index('webhook_deliveries_webhook_idx').on(t.webhookId, sql`${t.id} COLLATE "C"`),
  index('webhook_deliveries_undispatched_idx').on(sql`${t.id} COLLATE "C"`).where(sql`status = 'pending' AND dispatched_at IS NULL`),
  index('webhook_deliveries_open_idx').on(t.dispatchedAt).where(sql`status = 'pending' AND next_attempt_at IS NULL`),
  index('webhook_deliveries_retry_idx').on(t.nextAttemptAt).where(sql`status = 'pending' AND attempt_count > 0`),
]);

export const webhookDeliveryAttempts = pgTable('webhook_delivery_attempts', {
  deliveryId: text('delivery_id').notNull().references(() => webhookDeliveries.id, { onDelete: 'cascade' }),
  attempt: integer('attempt').notNull(),
  startedAt: ts('started_at').notNull(),
  statusCode: integer('status_code'),
  /** null while the attempt is under way (it is recorded before it is sent), or if its sender died */
  durationMs: integer('duration_ms'),
  error: text('error'),
  nextAttemptAt: ts('next_attempt_at'),
}, (t) => [primaryKey({ name: 'webhook_delivery_attempts_pk', columns: [t.deliveryId, t.attempt] })]);

export const notifications = pgTable('notifications', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  spaceId: text('space_id').notNull().references(() => spaces.id, { onDelete: 'cascade' }),
  /** the person told */
  userId: text('user_id').notNull(),
  kind: text('kind').notNull(),
  title: text('title').notNull(),
  body: text('body').notNull(),
  /** ids of what it is about: run_id, schedule_id, connection_id, package_id */
  subject: jsonb('subject').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  readAt: ts('read_at'),
}, (t) => [
  index('notifications_user_idx').on(t.orgId, t.spaceId, t.userId, sql`${t.id} COLLATE "C"`),
  index('notifications_unread_idx').on(t.orgId, t.spaceId, t.userId).where(sql`read_at IS NULL`),
]);
