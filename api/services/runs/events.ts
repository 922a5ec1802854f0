// Ingestion of the events a run's sidecar (or a remote runner) posts: verified, replay-proof,
// recorded, then turned into the workflow's signals. The terminal event's output is checked
// against the agent's output schema here, so the workflow only hears a validated ending.
import type pg from 'pg';
import type { SecretBox } from '../../../lib/crypto.ts';
import { problem } from '../../../lib/problem.ts';
import { inTransaction } from '../../../db/transaction.ts';
import { verifyRunEventSignature } from '../../../lib/run-events.ts';
import type { RunWorkflowClient } from '../../../workflows/run-client.ts';
import type { TerminalSignal } from '../../../workflows/run-types.ts';
import { isTerminal } from './records.ts';
import { schemaErrors } from './schema-check.ts';

interface SinkRow {
  status: string;
  event_secret: string;
  sink_expires_at: Date;
  org_id: string;
  agent_id: string;
  agent_version: string;
  kind: string;
  inline_manifest: { output?: { schema?: object } } | null;
  pending_output: unknown;
}

interface EventBody {
  sequence: number;
  type: string;
  at?: string;
  data?: Record<string, unknown>;
}

export interface IngestDeps {
  pool: pg.Pool;
  secrets: SecretBox;
  runs?: RunWorkflowClient;
}

const LOG_LEVELS = new Set(['debug', 'info', 'warn', 'error']);

function parseEvent(raw: Buffer): EventBody {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw problem('invalid_request', { detail: 'The event body is not valid JSON.' });
  }
  const e = body as Partial<EventBody>;
  if (!e || typeof e !== 'object' || !Number.isInteger(e.sequence) || (e.sequence as number) < 1 || typeof e.type !== 'string') {
    throw problem('invalid_request', { detail: 'An event needs an integer sequence (from 1) and a type.' });
  }
  return e as EventBody;
}

/** Loads the run's sink and checks the signature; 404 for an unknown run. */
export async function openSink(deps: IngestDeps, runId: string, headers: Record<string, string | undefined>, raw: Buffer): Promise<{ sink: SinkRow; messageId: string }> {
  const { rows } = await deps.pool.query<SinkRow>(
    `SELECT status, event_secret, sink_expires_at, org_id, agent_id, agent_version, kind, inline_manifest, pending_output FROM runs WHERE id = $1`,
    [runId],
  );
  const sink = rows[0];
  if (!sink) throw problem('not_found', { detail: 'No such run.' });
  const { id } = verifyRunEventSignature(deps.secrets.open(sink.event_secret), headers, raw, Math.floor(Date.now() / 1000));
  return { sink, messageId: id };
}

async function outputSchemaOf(client: pg.PoolClient, sink: SinkRow): Promise<object | undefined> {
  if (sink.kind === 'inline') return sink.inline_manifest?.output?.schema;
  const { rows } = await client.query<{ schema: object | null }>(
    `SELECT manifest->'output'->'schema' AS schema FROM package_versions WHERE org_id = $1 AND package_id = $2 AND version = $3`,
    [sink.org_id, sink.agent_id, sink.agent_version],
  );
  return rows[0]?.schema ?? undefined;
}

/** The validated ending a completed/failed event stands for. */
async function terminalSignal(client: pg.PoolClient, sink: SinkRow, runId: string, event: EventBody): Promise<TerminalSignal> {
  const data = event.data ?? {};
  if (event.type === 'failed') {
    return { status: 'failed', error: { code: String(data.code ?? 'agent_error'), message: String(data.message ?? 'The agent failed.') } };
  }
  const { rows } = await client.query<{ pending_output: unknown }>('SELECT pending_output FROM runs WHERE id = $1', [runId]);
  const output = rows[0]?.pending_output ?? null;
  const schema = await outputSchemaOf(client, sink);
  if (!schema) return { status: 'success', output: output ?? (typeof data.text === 'string' ? data.text : null) };
  if (output === null) {
    return { status: 'failed', error: { code: 'no_output', message: 'The agent finished without reporting an output.' } };
  }
  const errors = schemaErrors(schema, output, 'output');
  if (errors.length) {
    return { status: 'failed', error: { code: 'output_invalid', message: 'The output does not match the output schema.', details: errors } };
  }
  return { status: 'success', output };
}

/** Records one event in a transaction; returns the workflow signal it calls for, if any. */
async function recordEvent(client: pg.PoolClient, sink: SinkRow, runId: string, messageId: string, event: EventBody): Promise<{ started?: true; terminal?: TerminalSignal }> {
  const fresh = await client.query('INSERT INTO run_event_ids (run_id, message_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [runId, messageId]);
  if (!fresh.rowCount) throw problem('message_replayed', { detail: 'This webhook-id was already accepted for the run.' });
  await client.query('UPDATE runs SET last_event_at = now(), last_sequence = GREATEST(last_sequence, $2) WHERE id = $1', [runId, event.sequence]);
  const data = event.data ?? {};
  switch (event.type) {
    case 'started': {
      const { rows } = await client.query<{ org_id: string; space_id: string }>(
        `UPDATE runs SET status = 'running', started_at = COALESCE(started_at, now()) WHERE id = $1 AND status = 'pending' RETURNING org_id, space_id`,
        [runId],
      );
      if (rows[0]) await client.query(`SELECT pg_notify('run_status', $1)`, [JSON.stringify({ id: runId, org_id: rows[0].org_id, space_id: rows[0].space_id, status: 'running' })]);
      return { started: true };
    }
    case 'log': {
      const level = LOG_LEVELS.has(String(data.level)) ? String(data.level) : 'info';
      await client.query('INSERT INTO run_logs (run_id, sequence, level, message, data) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING', [
        runId, event.sequence, level, String(data.message ?? '').slice(0, 10_000), data.data === undefined ? null : JSON.stringify(data.data),
      ]);
      return {};
    }
    case 'metric': {
      const prompt = Number(data.prompt_tokens ?? 0) | 0;
      const completion = Number(data.completion_tokens ?? 0) | 0;
      const cost = Number(data.cost_usd ?? 0) || 0;
      const inserted = await client.query(
        'INSERT INTO run_usage (run_id, sequence, model, prompt_tokens, completion_tokens, cost_usd) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING',
        [runId, event.sequence, String(data.model ?? ''), prompt, completion, cost],
      );
      if (inserted.rowCount) {
        await client.query('UPDATE runs SET prompt_tokens = prompt_tokens + $2, completion_tokens = completion_tokens + $3, cost_usd = cost_usd + $4 WHERE id = $1', [runId, prompt, completion, cost]);
      }
      return {};
    }
    case 'output':
      await client.query('UPDATE runs SET pending_output = $2::jsonb WHERE id = $1', [runId, JSON.stringify(data.output ?? null)]);
      return {};
    case 'completed':
    case 'failed':
      return { terminal: await terminalSignal(client, sink, runId, event) };
    default:
      // heartbeat, and kinds a newer runner may send: liveness was recorded above.
      return {};
  }
}

export async function ingestRunEvent(deps: IngestDeps, runId: string, headers: Record<string, string | undefined>, raw: Buffer): Promise<void> {
  const { sink, messageId } = await openSink(deps, runId, headers, raw);
  if (isTerminal(sink.status)) throw problem('run_sink_closed', { detail: 'The run has ended; stop sending events.' });
  if (sink.sink_expires_at.getTime() <= Date.now()) throw problem('run_sink_expired', { detail: 'The run event sink has expired.' });
  const event = parseEvent(raw);

  const signal = await inTransaction(deps.pool, (client) => recordEvent(client, sink, runId, messageId, event));

  if (!deps.runs || (!signal.started && !signal.terminal)) return;
  try {
    if (signal.started) await deps.runs.started(runId);
    if (signal.terminal) await deps.runs.terminal(runId, signal.terminal);
  } catch {
    // The engine did not hear it: forget this delivery so the runner's retry applies it again
    // (recording is idempotent per sequence).
    await deps.pool.query('DELETE FROM run_event_ids WHERE run_id = $1 AND message_id = $2', [runId, messageId]);
    throw problem('bad_gateway', { detail: 'The workflow engine is unreachable; retry the event.', retryAfter: 1 });
  }
}
