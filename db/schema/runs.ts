// Runs, their logs, the model-usage ledger, and the ids of events already ingested.
import { sql } from 'drizzle-orm';
import { bigint, boolean, doublePrecision, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const runs = pgTable('runs', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull(),
  spaceId: text('space_id').notNull(),
  /** @scope/name of the agent package */
  agentId: text('agent_id').notNull(),
  agentVersion: text('agent_version').notNull(),
  status: text('status').notNull().default('pending'),
  input: jsonb('input'),
  output: jsonb('output'),
  error: jsonb('error'),
  /** member, end_user, schedule or api_key */
  triggerKind: text('trigger_kind').notNull(),
  actorUserId: text('actor_user_id'),
  apiKeyId: text('api_key_id'),
  endUserId: text('end_user_id'),
  scheduleId: text('schedule_id'),
  /** the schedule tick that launched the run: one run per (schedule, tick) */
  scheduleFireAt: ts('schedule_fire_at'),
  rerunOf: text('rerun_of'),
  /** the failed or timed-out run whose last checkpoint this run starts from */
  resumedFrom: text('resumed_from'),
  kind: text('kind').notNull().default('agent'),
  modelId: text('model_id'),
  /** the run's own model settings ({ temperature, reasoning_effort }), checked at launch; null: the model's defaults */
  modelSettings: jsonb('model_settings'),
  /** what the running run waits for ({ kind: 'approval', approval_id, since, parked }); null: nothing */
  awaiting: jsonb('awaiting'),
  /** when the run last parked while it waited for an approval: a sandbox booted after starts from the run's own checkpoint */
  parkedAt: ts('parked_at'),
  timeoutSeconds: integer('timeout_seconds').notNull(),
  /** the run's sealed event-signing secret */
  eventSecret: text('event_secret').notNull(),
  sinkExpiresAt: ts('sink_expires_at').notNull(),
  lastSequence: integer('last_sequence').notNull().default(0),
  lastEventAt: ts('last_event_at'),
  promptTokens: bigint('prompt_tokens', { mode: 'number' }).notNull().default(0),
  completionTokens: bigint('completion_tokens', { mode: 'number' }).notNull().default(0),
  costUsd: doublePrecision('cost_usd').notNull().default(0),
  /** the latest output the agent reported, validated when the agent completes */
  pendingOutput: jsonb('pending_output'),
  /** an inline run carries its own manifest and prompt (emptied after the retention period) */
  inlineManifest: jsonb('inline_manifest'),
  inlinePrompt: text('inline_prompt'),
  /** a run of an agent's draft: the draft's tree integrity at launch (null for published versions) */
  draftIntegrity: text('draft_integrity'),
  /** what that draft run executes: its manifest, file tree (content-addressed) and pinned skills */
  draftSnapshot: jsonb('draft_snapshot'),
  /** set once the durable workflow has accepted the run */
  submittedAt: ts('submitted_at'),
  /** the worker (sandbox host) the run's sandbox was placed on; null: not placed yet */
  workerId: text('worker_id'),
  createdAt: ts('created_at').notNull().defaultNow(),
  startedAt: ts('started_at'),
  finishedAt: ts('finished_at'),
  purgedAt: ts('purged_at'),
}, (t) => [
  index('runs_space_created_idx').on(t.orgId, t.spaceId, t.createdAt, t.id),
  index('runs_agent_idx').on(t.orgId, t.spaceId, t.agentId, t.createdAt, t.id),
  // the run lists filtered by status, and the lists a member without runs:read-all or an end-user sees
  index('runs_status_idx').on(t.orgId, t.spaceId, t.status, t.createdAt, t.id),
  index('runs_actor_idx').on(t.orgId, t.spaceId, t.actorUserId, t.createdAt, t.id).where(sql`end_user_id IS NULL`),
  index('runs_end_user_idx').on(t.orgId, t.spaceId, t.endUserId, t.createdAt, t.id).where(sql`end_user_id IS NOT NULL`),
  index('runs_active_idx').on(t.orgId, t.status),
  // the sweeps read only the rows they act on: unsubmitted runs, open runs, unpurged inline runs
  index('runs_unsubmitted_idx').on(t.createdAt).where(sql`submitted_at IS NULL AND status = 'pending'`),
  index('runs_open_idx').on(t.createdAt).where(sql`status IN ('pending', 'running')`),
  index('runs_worker_open_idx').on(t.workerId).where(sql`status IN ('pending', 'running')`),
  index('runs_inline_unpurged_idx').on(t.createdAt).where(sql`kind = 'inline' AND purged_at IS NULL`),
  index('runs_schedule_idx').on(t.orgId, t.spaceId, t.scheduleId, t.createdAt, t.id).where(sql`schedule_id IS NOT NULL`),
  uniqueIndex('runs_schedule_fire_idx').on(t.scheduleId, t.scheduleFireAt).where(sql`schedule_id IS NOT NULL`),
]);

export const runLogs = pgTable('run_logs', {
  runId: text('run_id').notNull().references(() => runs.id, { onDelete: 'cascade' }),
  sequence: integer('sequence').notNull(),
  level: text('level').notNull(),
  message: text('message').notNull(),
  data: jsonb('data'),
  createdAt: ts('created_at').notNull().defaultNow(),
}, (t) => [primaryKey({ columns: [t.runId, t.sequence] }), index('run_logs_created_idx').on(t.createdAt)]);

export const runUsage = pgTable('run_usage', {
  runId: text('run_id').notNull().references(() => runs.id, { onDelete: 'cascade' }),
  sequence: integer('sequence').notNull(),
  model: text('model').notNull(),
  promptTokens: integer('prompt_tokens').notNull(),
  completionTokens: integer('completion_tokens').notNull(),
  costUsd: doublePrecision('cost_usd').notNull().default(0),
  createdAt: ts('created_at').notNull().defaultNow(),
}, (t) => [primaryKey({ columns: [t.runId, t.sequence] })]);

/**
 * A run's latest checkpoint (one per run): the step it completed and its state (the conversation
 * and the workspace files changed since the start, sealed with the secret box), for a resume.
 */
export const runCheckpoints = pgTable('run_checkpoints', {
  runId: text('run_id').primaryKey().references(() => runs.id, { onDelete: 'cascade' }),
  orgId: uuid('org_id').notNull(),
  spaceId: text('space_id').notNull(),
  step: integer('step').notNull(),
  state: text('state').notNull(),
  bytes: integer('bytes').notNull(),
  /** tool calls the checkpoint holds pending (a parked run's calls awaiting a decision); 0 after a completed step */
  pendingCalls: integer('pending_calls').notNull().default(0),
  createdAt: ts('created_at').notNull().defaultNow(),
});

/**
 * webhook-ids already accepted for a run: a second delivery is 409 message_replayed. Kept only
 * while the run's sink accepts events (swept in batches after, oldest first).
 */
export const runEventIds = pgTable('run_event_ids', {
  runId: text('run_id').notNull().references(() => runs.id, { onDelete: 'cascade' }),
  messageId: text('message_id').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
}, (t) => [primaryKey({ columns: [t.runId, t.messageId] }), index('run_event_ids_created_idx').on(t.createdAt)]);

/** Launch counts per organization and minute, for the org-wide launch rate shared by replicas. */
export const orgRunLaunches = pgTable('org_run_launches', {
  orgId: uuid('org_id').notNull(),
  minute: bigint('minute', { mode: 'number' }).notNull(),
  count: integer('count').notNull(),
  closed: boolean('closed').notNull().default(false),
}, (t) => [primaryKey({ columns: [t.orgId, t.minute] })]);

/** Per-space configuration of an agent: input fields locked to a value, the model to use. */
export const agentConfigs = pgTable('agent_configs', {
  orgId: uuid('org_id').notNull(),
  spaceId: text('space_id').notNull(),
  agentId: text('agent_id').notNull(),
  lockedInput: jsonb('locked_input').notNull().default({}),
  modelId: text('model_id'),
  updatedAt: ts('updated_at').notNull().defaultNow(),
}, (t) => [primaryKey({ columns: [t.orgId, t.spaceId, t.agentId] })]);

/** A request for a person's approval of one tool call of a run (apr_...). */
export const runApprovals = pgTable('run_approvals', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull(),
  spaceId: text('space_id').notNull(),
  runId: text('run_id').notNull().references(() => runs.id, { onDelete: 'cascade' }),
  /** 1, 2, ... within the run: names the workflow's durable promise that hears of the request */
  sequence: integer('sequence').notNull(),
  tool: text('tool').notNull(),
  arguments: jsonb('arguments').notNull(),
  /** pending, approved, rejected or expired */
  status: text('status').notNull().default('pending'),
  timeoutSeconds: integer('timeout_seconds').notNull(),
  requestedAt: ts('requested_at').notNull().defaultNow(),
  decidedAt: ts('decided_at'),
  /** who decided: { kind, userId, api_key_id, end_user_id }; null while pending or when it expired */
  decidedBy: jsonb('decided_by'),
  reason: text('reason'),
  /** the platform asked the run's sidecar for its pending state to park the run on this request */
  parkRequestedAt: ts('park_requested_at'),
  /** the run, woken from its park, took this request's decision (at most once) */
  resumedAt: ts('resumed_at'),
}, (t) => [
  uniqueIndex('run_approvals_run_sequence_uq').on(t.runId, t.sequence),
  index('run_approvals_tenant_idx').on(t.orgId, t.spaceId, t.runId),
]);

/** The fleet's sandbox hosts (workers): each beats while it lives; a draining one takes no new runs. */
export const workers = pgTable('workers', {
  id: text('id').primaryKey(),
  /** the address Restate reaches its sandbox host service at */
  endpointUrl: text('endpoint_url').notNull(),
  startedAt: ts('started_at').notNull().defaultNow(),
  heartbeatAt: ts('heartbeat_at').notNull().defaultNow(),
  draining: boolean('draining').notNull().default(false),
});
