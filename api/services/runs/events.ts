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

/** The most events one signed message may carry (the sidecar sends far fewer). */
export const MAX_EVENTS_PER_MESSAGE = 500;
const TERMINAL_TYPES = new Set(['completed', 'failed']);

/** A posted message: one event, or a batch ({ events: [...] }) of several in sequence order. */
interface PostedEvents {
  events: EventBody[];
  spans?: unknown;
}

function checkedEvent(e: Partial<EventBody> | null | undefined): EventBody {
  if (!e || typeof e !== 'object' || !Number.isInteger(e.sequence) || (e.sequence as number) < 1 || typeof e.type !== 'string') {
    throw problem('invalid_request', { detail: 'An event needs an integer sequence (from 1) and a type.' });
  }
  return e as EventBody;
}

function parseEvents(raw: Buffer): PostedEvents {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw problem('invalid_request', { detail: 'The event body is not valid JSON.' });
  }
  // Text PostgreSQL cannot store is refused here as it is at the public edge, never met mid-query.
  refuseBadJson(body);
  const batch = body as { events?: unknown; spans?: unknown } | null;
  if (!batch || typeof batch !== 'object' || !('events' in batch)) {
    const event = checkedEvent(body as Partial<EventBody>);
    return { events: [event], spans: event.spans };
  }
  if (!Array.isArray(batch.events) || batch.events.length === 0 || batch.events.length > MAX_EVENTS_PER_MESSAGE) {
    throw problem('invalid_request', { detail: `A batch carries from 1 to ${MAX_EVENTS_PER_MESSAGE} events.` });
  }
  const events = batch.events.map((e) => checkedEvent(e as Partial<EventBody>));
  for (let i = 1; i < events.length; i++) {
    if (events[i].sequence <= events[i - 1].sequence) throw problem('invalid_request', { detail: "A batch's events are in increasing sequence order." });
  }
  if (events.slice(0, -1).some((e) => TERMINAL_TYPES.has(e.type))) {
    throw problem('invalid_request', { detail: "The run's end (completed or failed) can only be a batch's last event." });
  }
  return { events, spans: batch.spans };
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
const SINK_MOVED = 'The run is placed on another worker now; this sandbox no longer reports for it. Stop sending events.';

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

/** Records a message's events (one round trip, atomic); returns the workflow signals they call for. */
async function recordEvents(
  pool: pg.Pool, runId: string, messageId: string, events: EventBody[], data: Record<string, unknown>[], placement: string | null,
): Promise<{ started: boolean; terminal?: TerminalSignal }> {
  const { rows } = await pool.query<{ outcome: string; started: boolean; pending_output: unknown; output_schema: object | null }>(
    'SELECT outcome, started, pending_output, output_schema FROM record_run_events($1, $2, $3::jsonb, $4)',
    [runId, messageId, JSON.stringify(events.map((e, i) => ({ sequence: e.sequence, type: e.type, data: data[i] }))), placement],
  );
  const { outcome, started, pending_output: pendingOutput, output_schema: schema } = rows[0];
  // Stryker disable next-line all: a secret kept after the end only spares a read (see rememberSinkSecret)
  if (outcome === 'unknown' || outcome === 'closed' || outcome === 'expired') sinkSecrets.delete(runId);
  if (outcome === 'unknown') throw problem('not_found', { detail: 'No such run.' });
  if (outcome === 'closed') throw problem('run_sink_closed', { detail: SINK_CLOSED });
  if (outcome === 'expired') throw problem('run_sink_expired', { detail: SINK_EXPIRED });
  // the run goes on in another sandbox: this one stops posting (its secret stays known for that one)
  if (outcome === 'moved') throw problem('run_sink_closed', { detail: SINK_MOVED });
  if (outcome === 'replayed') throw problem('message_replayed', { detail: 'This webhook-id was already accepted for the run.' });
  if (outcome === 'terminal') {
    sinkSecrets.delete(runId);
    return { started, terminal: terminalSignal(events[events.length - 1], pendingOutput, schema) };
  }
  return { started };
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

/** A log entry or usage just recorded, for the realtime streams (in sequence order). */
export interface RecordedRunEvent {
  spaceId: string;
  type: 'log' | 'metric';
  sequence: number;
  data: Record<string, unknown>;
}

/**
 * Verifies, records and signals one posted message: one event, or a batch of several. Answers the
 * run's space when the message changed what the run's wire shows, so the caller can drop its cached
 * reads of that space, and the log entries and usage it recorded, in order, for the realtime streams.
 * A batch that carries the run's end signals only the end: the workflow needs no separate start.
 * `placement` is the worker whose sandbox posted (the sink URL's `placement`): a message from a
 * sandbox the run is no longer placed on (a lost worker's, the run booted again elsewhere) is refused
 * with run_sink_closed, so one run never has two sandboxes reporting for it.
 */
export async function ingestRunEvent(
  deps: IngestDeps, runId: string, headers: Record<string, string | undefined>, raw: Buffer, placement: string | null = null,
): Promise<{ changedSpaceId?: string; recorded?: RecordedRunEvent[] }> {
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
  const { events, spans } = parseEvents(raw);
  const last = events[events.length - 1];
  // the request's span (the sidecar sent the run's traceparent) is the events' ingestion
  setSpanTenant({ orgId, spaceId, runId });
  setSpanAttributes({
    'agent_platform.event.type': last.type, 'agent_platform.event.sequence': last.sequence,
    ...(events.length > 1 ? { 'agent_platform.event.count': events.length } : {}),
  });

  const data = events.map(normalizedData);
  const signal = await recordEvents(deps.pool, runId, messageId, events, data, placement);
  // recorded once (a replay was refused above): the sidecar's spans are exported with the run's ids
  if (tracingActive() && Array.isArray(spans) && spans.length) {
    const traceId = (spans[0] as { traceId?: unknown })?.traceId;
    if (typeof traceId === 'string') exportSpanRecords(acceptedSpanRecords(spans, traceId), { orgId, spaceId, runId });
  }
  const changed: { changedSpaceId?: string; recorded?: RecordedRunEvent[] } = events.some((e) => WIRE_EVENTS.has(e.type)) ? { changedSpaceId: spaceId } : {};
  const recorded: RecordedRunEvent[] = [];
  events.forEach((event, i) => {
    if (event.type === 'log' || event.type === 'metric') recorded.push({ spaceId, type: event.type, sequence: event.sequence, data: data[i] });
  });
  if (recorded.length) changed.recorded = recorded;
  if (metrics.enabled) {
    // off the events' path: a figure is not worth delaying the sandbox
    if (signal.started) void countForMetrics(deps.pool, runId, 'started', {}).catch(() => {});
    for (const r of recorded) if (r.type === 'metric') void countForMetrics(deps.pool, runId, 'metric', r.data).catch(() => {});
  }

  // The ending is recorded here, where it is known, so readers see it without waiting for the
  // engine's turn-around; the workflow then only tears down (its own finalize finds the run ended).
  // Should the signal below not get through, its liveness check finds the run ended all the same.
  if (signal.terminal) await finalizeRun(deps.pool, runId, signal.terminal);
  if (!deps.runs) return changed;
  try {
    // an ending in the same message stands for the start too: the workflow hears only the end
    if (signal.terminal) await deps.runs.terminal(runId, signal.terminal);
    else if (signal.started) await deps.runs.started(runId);
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
