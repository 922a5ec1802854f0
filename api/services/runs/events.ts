// Ingestion of the events a run's sidecar (or a remote runner) posts: verified, replay-proof,
// recorded, then turned into the workflow's signals. The terminal event's output is checked
// against the agent's output schema here, so the workflow only hears a validated ending.
import type pg from 'pg';
import type { SecretBox } from '../../../lib/crypto.ts';
import { problem } from '../../../lib/problem.ts';
import { refuseBadJson } from '../../middleware/clean-input.ts';
import { verifyRunEventSignature } from '../../../lib/run-events.ts';
import { finalizeRun } from '../../../db/run-finalization.ts';
import type { RunWorkflowClient } from '../../../workflows/run-client.ts';
import type { TerminalSignal } from '../../../workflows/run-types.ts';
import { metrics } from '../../../lib/metrics/index.ts';
import { isTerminal } from './records.ts';
import { acceptedSpanRecords, exportSpanRecords, setSpanAttributes, setSpanTenant, tracingActive } from '../../../lib/tracing/index.ts';
import { schemaErrors, UnusableSchemaError } from './schema-check.ts';

interface SinkRow {
  status: string;
  event_secret: string;
  sink_expires_at: Date;
  org_id: string;
  space_id: string;
}

interface EventBody {
  sequence: number;
  type: string;
  at?: string;
  data?: Record<string, unknown>;
  /** spans the sidecar recorded (lib/tracing/records.ts), exported by the platform when tracing is on */
  spans?: unknown;
}

export interface IngestDeps {
  pool: pg.Pool;
  secrets: SecretBox;
  runs?: RunWorkflowClient;
}

// Stryker disable next-line StringLiteral: without 'info' here a log at info is stored at info all the same (the default)
const LOG_LEVELS = new Set(['debug', 'info', 'warn', 'error']);

function parseEvent(raw: Buffer): EventBody {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw problem('invalid_request', { detail: 'The event body is not valid JSON.' });
  }
  // Text PostgreSQL cannot store is refused here as it is at the public edge, never met mid-query.
  refuseBadJson(body);
  const e = body as Partial<EventBody>;
  if (!e || !Number.isInteger(e.sequence) || (e.sequence as number) < 1 || typeof e.type !== 'string') {
    throw problem('invalid_request', { detail: 'An event needs an integer sequence (from 1) and a type.' });
  }
  return e as EventBody;
}

/** Loads the run's sink and checks the signature; 404 for an unknown run. */
export async function openSink(deps: IngestDeps, runId: string, headers: Record<string, string | undefined>, raw: Buffer): Promise<{ sink: SinkRow; secret: string; messageId: string }> {
  const { rows } = await deps.pool.query<SinkRow>(
    `SELECT status, event_secret, sink_expires_at, org_id, space_id FROM runs WHERE id = $1`,
    [runId],
  );
  const sink = rows[0];
  if (!sink) throw problem('not_found', { detail: 'No such run.' });
  const secret = deps.secrets.open(sink.event_secret);
  const { id } = verifyRunEventSignature(secret, headers, raw, Math.floor(Date.now() / 1000));
  return { sink, secret, messageId: id };
}

const SINK_CLOSED = 'The run has ended; stop sending events.';
const SINK_EXPIRED = 'The run event sink has expired.';

/**
 * The signing secrets of runs whose sidecars are posting, opened once per run instead of once per
 * event: a run's secret never changes, and what does (its status, its sink's expiry) is checked
 * by record_run_event in the same round trip as the recording. Dropped at the run's end.
 */
const sinkSecrets = new Map<string, { secret: string; orgId: string; spaceId: string }>();
const MAX_SINK_SECRETS = 10_000;

// Stryker disable all: the kept secrets only spare a read; every answer is the same without them
// (record_run_event re-checks the run's status and sink in the recording's round trip)
function rememberSinkSecret(runId: string, sink: { secret: string; orgId: string; spaceId: string }): void {
  if (sinkSecrets.size >= MAX_SINK_SECRETS) sinkSecrets.delete(sinkSecrets.keys().next().value!);
  sinkSecrets.set(runId, sink);
}
// Stryker restore all

/** Event kinds that change what the run's wire shows (status, usage, the ending). */
const WIRE_EVENTS = new Set(['started', 'metric', 'completed', 'failed']);

/** The event's data as record_run_event (db/functions.sql) stores it. */
function normalizedData(event: EventBody): Record<string, unknown> {
  const data = event.data ?? {};
  switch (event.type) {
    case 'log':
      return {
        level: LOG_LEVELS.has(String(data.level)) ? String(data.level) : 'info',
        message: String(data.message ?? '').slice(0, 10_000),
        ...(data.data === undefined ? {} : { data: data.data }),
      };
    case 'metric':
      return {
        model: String(data.model ?? ''),
        prompt_tokens: Number(data.prompt_tokens ?? 0) | 0,
        completion_tokens: Number(data.completion_tokens ?? 0) | 0,
        cost_usd: Number.isFinite(Number(data.cost_usd)) ? Number(data.cost_usd) : 0,
      };
    case 'output':
      return { output: data.output ?? null };
    default:
      return {};
  }
}

/** The validated ending a completed/failed event stands for. */
function terminalSignal(event: EventBody, pendingOutput: unknown, schema: object | null): TerminalSignal {
  const data = event.data ?? {};
  if (event.type === 'failed') {
    return { status: 'failed', error: { code: String(data.code ?? 'agent_error'), message: String(data.message ?? 'The agent failed.') } };
  }
  const output = pendingOutput ?? null;
  if (!schema) return { status: 'success', output: output ?? (typeof data.text === 'string' ? data.text : null) };
  if (output === null) {
    return { status: 'failed', error: { code: 'no_output', message: 'The agent finished without reporting an output.' } };
  }
  let errors;
  try {
    errors = schemaErrors(schema, output, 'output');
  } catch (err) {
    if (!(err instanceof UnusableSchemaError)) throw err;
    return { status: 'failed', error: { code: 'output_invalid', message: `${err.message}; the output cannot be checked.` } };
  }
  if (errors.length) {
    return { status: 'failed', error: { code: 'output_invalid', message: 'The output does not match the output schema.', details: errors } };
  }
  return { status: 'success', output };
}

/** Records one event (one round trip, atomic); returns the workflow signal it calls for, if any. */
async function recordEvent(pool: pg.Pool, runId: string, messageId: string, event: EventBody, data: Record<string, unknown>): Promise<{ started?: true; terminal?: TerminalSignal; recorded?: true }> {
  const { rows } = await pool.query<{ outcome: string; pending_output: unknown; output_schema: object | null }>(
    'SELECT outcome, pending_output, output_schema FROM record_run_event($1, $2, $3, $4, $5::jsonb)',
    [runId, messageId, event.sequence, event.type, JSON.stringify(data)],
  );
  const { outcome, pending_output: pendingOutput, output_schema: schema } = rows[0];
  // Stryker disable next-line all: a secret kept after the end only spares a read (see rememberSinkSecret)
  if (outcome === 'unknown' || outcome === 'closed' || outcome === 'expired') sinkSecrets.delete(runId);
  if (outcome === 'unknown') throw problem('not_found', { detail: 'No such run.' });
  if (outcome === 'closed') throw problem('run_sink_closed', { detail: SINK_CLOSED });
  if (outcome === 'expired') throw problem('run_sink_expired', { detail: SINK_EXPIRED });
  if (outcome === 'replayed') throw problem('message_replayed', { detail: 'This webhook-id was already accepted for the run.' });
  if (outcome === 'started') return { started: true };
  if (outcome === 'terminal') {
    sinkSecrets.delete(runId);
    return { terminal: terminalSignal(event, pendingOutput, schema) };
  }
  return { recorded: true };
}

const providerOfRun = new Map<string, string | null>();

/** The figures an event moves (metrics on only): queue and boot time at 'started', model usage at 'metric'. */
async function countForMetrics(pool: pg.Pool, runId: string, type: string, data: Record<string, unknown>): Promise<void> {
  if (type === 'started') {
    const { rows } = await pool.query<{ seconds: number }>(
      'SELECT EXTRACT(EPOCH FROM started_at - created_at)::float8 AS seconds FROM runs WHERE id = $1 AND started_at IS NOT NULL',
      [runId],
    );
    if (rows[0]) metrics.runStarted(rows[0].seconds);
    return;
  }
  let provider = providerOfRun.get(runId);
  if (provider === undefined) {
    const { rows } = await pool.query<{ provider: string }>(
      `SELECT c.provider FROM runs r JOIN models m ON m.id = r.model_id JOIN model_provider_credentials c ON c.id = m.credential_id WHERE r.id = $1`,
      [runId],
    );
    provider = rows[0]?.provider ?? null;
    if (providerOfRun.size >= 1000) providerOfRun.delete(providerOfRun.keys().next().value!);
    providerOfRun.set(runId, provider);
  }
  metrics.modelUsage(provider, Number(data.prompt_tokens), Number(data.completion_tokens), Number(data.cost_usd));
}

/** A log entry or usage just recorded, for the realtime streams. */
export interface RecordedRunEvent {
  spaceId: string;
  type: 'log' | 'metric';
  sequence: number;
  data: Record<string, unknown>;
}

/**
 * Verifies, records and signals one event. Answers the run's space when the event changed what
 * the run's wire shows, so the caller can drop its cached reads of that space.
 */
export async function ingestRunEvent(
  deps: IngestDeps, runId: string, headers: Record<string, string | undefined>, raw: Buffer,
): Promise<{ changedSpaceId?: string; recorded?: RecordedRunEvent }> {
  let messageId: string;
  let spaceId: string;
  let orgId: string;
  const known = sinkSecrets.get(runId);
  if (known) {
    ({ id: messageId } = verifyRunEventSignature(known.secret, headers, raw, Math.floor(Date.now() / 1000)));
    spaceId = known.spaceId;
    orgId = known.orgId;
  } else {
    const opened = await openSink(deps, runId, headers, raw);
    if (isTerminal(opened.sink.status)) throw problem('run_sink_closed', { detail: SINK_CLOSED });
    // Stryker disable next-line EqualityOperator: expiring at this very millisecond or the next cannot be told apart from outside
    if (opened.sink.sink_expires_at.getTime() <= Date.now()) throw problem('run_sink_expired', { detail: SINK_EXPIRED });
    rememberSinkSecret(runId, { secret: opened.secret, orgId: opened.sink.org_id, spaceId: opened.sink.space_id });
    messageId = opened.messageId;
    spaceId = opened.sink.space_id;
    orgId = opened.sink.org_id;
  }
  const event = parseEvent(raw);
  // the request's span (the sidecar sent the run's traceparent) is the event's ingestion
  setSpanTenant({ orgId, spaceId, runId });
  setSpanAttributes({ 'agent_platform.event.type': event.type, 'agent_platform.event.sequence': event.sequence });

  const data = normalizedData(event);
  const signal = await recordEvent(deps.pool, runId, messageId, event, data);
  // recorded once (a replay was refused above): the sidecar's spans are exported with the run's ids
  if (tracingActive() && Array.isArray(event.spans) && event.spans.length) {
    const traceId = (event.spans[0] as { traceId?: unknown })?.traceId;
    if (typeof traceId === 'string') exportSpanRecords(acceptedSpanRecords(event.spans, traceId), { orgId, spaceId, runId });
  }
  const changed: { changedSpaceId?: string; recorded?: RecordedRunEvent } = WIRE_EVENTS.has(event.type) ? { changedSpaceId: spaceId } : {};
  if (signal.recorded && (event.type === 'log' || event.type === 'metric')) changed.recorded = { spaceId, type: event.type, sequence: event.sequence, data };
  if (metrics.enabled && (signal.started || (signal.recorded && event.type === 'metric'))) {
    // off the event's path: a figure is not worth delaying the sandbox
    void countForMetrics(deps.pool, runId, event.type, data).catch(() => {});
  }

  // The ending is recorded here, where it is known, so readers see it without waiting for the
  // engine's turn-around; the workflow then only tears down (its own finalize finds the run ended).
  // Should the signal below not get through, its liveness check finds the run ended all the same.
  if (signal.terminal) await finalizeRun(deps.pool, runId, signal.terminal);
  if (!deps.runs) return changed;
  try {
    if (signal.started) await deps.runs.started(runId);
    if (signal.terminal) await deps.runs.terminal(runId, signal.terminal);
  } catch {
    // The engine did not hear it. A run already ended needs nothing more (see above); otherwise
    // forget this delivery so the runner's retry applies it again (recording is idempotent per
    // sequence).
    if (signal.terminal) return changed;
    await deps.pool.query('DELETE FROM run_event_ids WHERE run_id = $1 AND message_id = $2', [runId, messageId]);
    throw problem('bad_gateway', { detail: 'The workflow engine is unreachable; retry the event.', retryAfter: 1 });
  }
  return changed;
}
