// One webhook delivery. Its first attempt is sent by the dispatcher (dispatcher.ts); what needs
// another try continues in a durable workflow keyed by the delivery row's id (one row per webhook,
// run and event), so a delivery is retried by one invocation whoever starts it. Each attempt in
// the workflow is a journaled step that records the attempt as begun, signs, posts through the
// egress guard and records the outcome; the pause before the next is a durable timer. An attempt
// is recorded before it is sent, so one under way when its sender died still shows (interrupted)
// in the delivery's attempts and attempt_count. 2xx succeeds; 410 disables the webhook; other 4xx
// except 408 and 429 fail at once; everything else is retried on the backoff schedule.
import { metrics } from '../../../lib/metrics/index.ts';
import { failActiveSpan, setSpanAttributes, tracingActive, withSpan } from '../../../lib/tracing/index.ts';
import * as restate from '@restatedev/restate-sdk';
import type { WorkflowContext } from '@restatedev/restate-sdk';
import type pg from 'pg';
import type { SecretBox } from '../../../lib/crypto.ts';
import { EgressRefusal, guardedRequest, type EgressOptions } from '../../../lib/egress.ts';
import { webhookHeaders } from './signing.ts';

export const DELIVERY_WORKFLOW = 'webhookDelivery';

/** What is read of a receiver's answer; the rest is dropped with the connection. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

/** Each retry's pause is drawn within this share of the scheduled one, either way. */
const JITTER = 0.2;

export type AttemptOutcome = { done: true; status: 'succeeded' | 'failed' | 'cancelled' | 'gone' | 'settled' } | { done: false; delayMs: number };

export interface DeliveryDeps {
  pool: pg.Pool;
  secrets: SecretBox;
  egress: EgressOptions;
  /** seconds before each retry (WEBHOOK_RETRY_SCHEDULE_SECONDS) */
  retrySchedule: number[];
  timeoutMs: number;
}

interface Answer {
  statusCode: number | null;
  error: string | null;
}

/** 2xx, 410, a permanent 4xx, or something worth another try. */
function classify(answer: Answer): 'succeeded' | 'gone' | 'permanent' | 'retry' {
  const s = answer.statusCode;
  if (s === null) return answer.error?.startsWith('blocked_url') ? 'permanent' : 'retry';
  if (s >= 200 && s < 300) return 'succeeded';
  if (s === 410) return 'gone';
  if (s >= 400 && s < 500 && s !== 408 && s !== 429) return 'permanent';
  return 'retry';
}

async function post(dd: DeliveryDeps, url: string, headers: Record<string, string>, body: string): Promise<Answer> {
  try {
    const res = await guardedRequest(url, {
      method: 'POST', body, timeoutMs: dd.timeoutMs, signal: AbortSignal.timeout(dd.timeoutMs),
      headers: { 'content-type': 'application/json', 'user-agent': 'agent-platform-webhooks/1', ...headers },
    }, dd.egress);
    let read = 0;
    try {
      for await (const chunk of res) {
        read += (chunk as Buffer).length;
        if (read > MAX_RESPONSE_BYTES) {
          res.destroy();
          break;
        }
      }
    } catch {
      // an answer cut short still has its status
    }
    return { statusCode: res.statusCode ?? null, error: null };
  } catch (err) {
    if (err instanceof EgressRefusal) return { statusCode: null, error: `blocked_url: ${err.message}` };
    const e = err as Error;
    if (e.name === 'TimeoutError' || e.name === 'AbortError' || /timed out/.test(e.message)) return { statusCode: null, error: `timeout: no answer within ${dd.timeoutMs} ms` };
    return { statusCode: null, error: `network: ${e.message}` };
  }
}

/** A delivery as it is sent: its row and its webhook's target, read in one statement. */
export interface Target {
  id: string;
  status: string;
  body: string;
  webhook_id: string;
  url: string;
  enabled: boolean;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_valid: boolean | null;
}

/** The columns of a Target, for a query joining webhook_deliveries `d` and webhooks `w`. */
export const TARGET_COLUMNS = `d.id, d.status, d.payload::text AS body, d.webhook_id, w.url, w.enabled, w.secret_sealed, w.previous_secret_sealed,
            w.previous_secret_expires_at > now() AS previous_valid`;

/** One attempt as it is recorded. */
export interface AttemptRecord {
  deliveryId: string;
  attempt: number;
  startedAt: Date;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  nextAt: Date | null;
  status: 'pending' | 'succeeded' | 'failed';
  webhookId: string;
}

/** Signs and posts one attempt and judges the answer; records nothing. */
export async function sendAttempt(dd: DeliveryDeps, t: Target, attempt: number, open: (sealed: string) => string = (s) => dd.secrets.open(s)): Promise<{ record: AttemptRecord; outcome: AttemptOutcome }> {
  const secrets = [open(t.secret_sealed)];
  if (t.previous_secret_sealed && t.previous_valid) secrets.push(open(t.previous_secret_sealed));
  const startedAt = new Date();
  const t0 = performance.now();
  // PostgreSQL's json text spaces its tokens (`"id" : ...`): sent as JSON.stringify writes it, as
  // every API answer is (a full payload's data is byte for byte the run GET /api/runs/{id} sends)
  const body = JSON.stringify(JSON.parse(t.body));
  const headers = webhookHeaders(secrets, t.id, Math.floor(Date.now() / 1000), body);
  const answer = !tracingActive() ? await post(dd, t.url, headers, body) : await withSpan('webhook delivery', {
    'agent_platform.webhook_id': t.webhook_id, 'agent_platform.delivery_id': t.id, 'agent_platform.delivery.attempt': attempt,
  }, async () => {
    const a = await post(dd, t.url, headers, body);
    if (a.statusCode) setSpanAttributes({ 'http.response.status_code': a.statusCode });
    if (a.error || !a.statusCode || a.statusCode >= 300) failActiveSpan(a.statusCode ? `http_${a.statusCode}` : 'unreachable');
    return a;
  }, { kind: 'client', parent: null, tenant: deliveryTenant(t.body) });
  const durationMs = Math.round(performance.now() - t0);
  const verdict = classify(answer);
  const error = answer.error ?? (verdict === 'succeeded' ? null : `the receiver answered ${answer.statusCode}`);

  let outcome: AttemptOutcome;
  let nextAt: Date | null = null;
  if (verdict === 'succeeded') outcome = { done: true, status: 'succeeded' };
  else if (verdict === 'retry' && attempt <= dd.retrySchedule.length) {
    const delayMs = Math.round(dd.retrySchedule[attempt - 1] * 1000 * (1 - JITTER + 2 * JITTER * Math.random()));
    nextAt = new Date(Date.now() + delayMs);
    outcome = { done: false, delayMs };
  } else outcome = { done: true, status: 'failed' };
  const status = outcome.done ? (outcome.status as 'succeeded' | 'failed') : 'pending';
  metrics.webhookAttempt(status === 'pending' ? 'retrying' : status);
  return { record: { deliveryId: t.id, attempt, startedAt, statusCode: answer.statusCode, durationMs, error, nextAt, status, webhookId: t.webhook_id }, outcome };
}

/** The run a delivery's payload is about, for its span's attributes. */
function deliveryTenant(body: string): { orgId?: string; spaceId?: string; runId?: string } {
  try {
    const data = (JSON.parse(body) as { data?: Record<string, unknown> }).data ?? {};
    const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
    return { orgId: text(data.orgId) ?? text(data.org_id), spaceId: text(data.spaceId) ?? text(data.space_id), runId: text(data.id) };
  } catch {
    return {};
  }
}

/** 410 Gone: the receiver asks to be sent nothing more. */
const goneAnswer = (r: AttemptRecord) => r.statusCode === 410;

/** What an attempt left without its outcome shows once a later one begins. */
export const INTERRUPTED = 'interrupted: no answer was recorded (its sender stopped during the attempt)';

/**
 * Records attempts' outcomes, any number in one statement: each attempt's row and, from the
 * delivery's latest attempt, its state; a 410 disables its webhook. Safe to run again (an attempt
 * recorded twice keeps the last).
 */
export async function recordAttempts(pool: pg.Pool, records: AttemptRecord[]): Promise<void> {
  if (!records.length) return;
  const col = <K extends keyof AttemptRecord>(k: K) => records.map((r) => r[k]);
  await pool.query(
    `WITH a AS (
       SELECT * FROM unnest($1::text[], $2::int[], $3::timestamptz[], $4::int[], $5::int[], $6::text[], $7::timestamptz[], $8::text[])
         AS a(delivery_id, attempt, started_at, status_code, duration_ms, error, next_attempt_at, status)
     ), attempt AS (
       INSERT INTO webhook_delivery_attempts (delivery_id, attempt, started_at, status_code, duration_ms, error, next_attempt_at)
       SELECT delivery_id, attempt, started_at, status_code, duration_ms, error, next_attempt_at FROM a
       ON CONFLICT (delivery_id, attempt) DO UPDATE SET started_at = EXCLUDED.started_at, status_code = EXCLUDED.status_code,
         duration_ms = EXCLUDED.duration_ms, error = EXCLUDED.error, next_attempt_at = EXCLUDED.next_attempt_at)
     UPDATE webhook_deliveries d SET attempt_count = GREATEST(d.attempt_count, a.attempt), status = a.status, next_attempt_at = a.next_attempt_at,
            finished_at = CASE WHEN a.status = 'pending' THEN NULL ELSE now() END
       FROM a WHERE d.id = a.delivery_id AND a.attempt >= d.attempt_count`,
    [col('deliveryId'), col('attempt'), col('startedAt'), col('statusCode'), col('durationMs'), col('error'), col('nextAt'), col('status')],
  );
  const disabled = [...new Set(records.filter(goneAnswer).map((r) => r.webhookId))];
  if (disabled.length) {
    await pool.query(
      `UPDATE webhooks SET enabled = false, disabled_reason = 'the receiver answered 410 Gone', updated_at = now() WHERE id = ANY($1::text[])`,
      [disabled],
    );
  }
}

/** A webhook that was disabled since its deliveries were written: they are cancelled, not sent. */
export async function cancelDeliveries(pool: pg.Pool, ids: string[]): Promise<void> {
  if (ids.length) await pool.query(`UPDATE webhook_deliveries SET status = 'cancelled', finished_at = now() WHERE id = ANY($1::text[]) AND status = 'pending'`, [ids]);
}

/**
 * Records the delivery's next attempt as begun, before anything is sent, and returns its number
 * (null when the delivery is no longer pending). An earlier attempt still without its outcome was
 * cut short by its sender's end: it is marked interrupted, and counted.
 */
export async function beginAttempt(pool: pg.Pool, deliveryId: string): Promise<number | null> {
  const { rows } = await pool.query<{ attempt: number }>(
    `WITH interrupted AS (
       UPDATE webhook_delivery_attempts SET error = $2 WHERE delivery_id = $1 AND duration_ms IS NULL AND error IS NULL
     ), d AS (
       UPDATE webhook_deliveries SET attempt_count = attempt_count + 1, next_attempt_at = NULL, dispatched_at = now()
        WHERE id = $1 AND status = 'pending' RETURNING id, attempt_count
     ), begun AS (
       INSERT INTO webhook_delivery_attempts (delivery_id, attempt, started_at) SELECT id, attempt_count, now() FROM d
     )
     SELECT attempt_count AS attempt FROM d`,
    [deliveryId, INTERRUPTED],
  );
  return rows[0]?.attempt ?? null;
}

/**
 * One attempt of one delivery: record it as begun, sign, post, record its outcome. Run again (a
 * step retried after a crash), it is a new attempt: the one cut short stays in the log.
 */
export async function attemptDelivery(dd: DeliveryDeps, deliveryId: string): Promise<AttemptOutcome> {
  const { rows } = await dd.pool.query<Target>(
    `SELECT ${TARGET_COLUMNS} FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE d.id = $1`,
    [deliveryId],
  );
  const t = rows[0];
  if (!t) return { done: true, status: 'gone' };
  if (t.status !== 'pending') return { done: true, status: t.status === 'succeeded' ? 'succeeded' : 'failed' };
  if (!t.enabled) {
    await cancelDeliveries(dd.pool, [deliveryId]);
    return { done: true, status: 'cancelled' };
  }
  const attempt = await beginAttempt(dd.pool, deliveryId);
  if (attempt === null) return { done: true, status: 'settled' };
  const { record, outcome } = await sendAttempt(dd, t, attempt);
  await recordAttempts(dd.pool, [record]);
  return outcome;
}

/**
 * Where a delivery's workflow starts: the dispatcher sends the first attempt itself and starts the
 * workflow only for what needs another try (or when it could not send: the sweep). The next
 * attempt is the one after those recorded, once the recorded pause is over.
 */
export async function resumePoint(pool: pg.Pool, deliveryId: string): Promise<{ attempt: number; delayMs: number } | null> {
  const { rows } = await pool.query<{ status: string; attempt_count: number; wait_ms: number | null }>(
    `SELECT status, attempt_count, GREATEST(0, extract(epoch FROM next_attempt_at - now()) * 1000)::int AS wait_ms FROM webhook_deliveries WHERE id = $1`,
    [deliveryId],
  );
  const r = rows[0];
  if (!r || r.status !== 'pending') return null;
  return { attempt: r.attempt_count + 1, delayMs: r.attempt_count === 0 ? 0 : (r.wait_ms ?? 0) };
}

/** A database hiccup retries the step; the attempt itself is never lost. */
const STEP_RETRY = { initialRetryInterval: 1000, maxRetryInterval: 60_000, retryIntervalFactor: 2 };

export function createDeliveryWorkflow(dd: DeliveryDeps) {
  return restate.workflow({
    name: DELIVERY_WORKFLOW,
    handlers: {
      run: async (ctx: WorkflowContext, input?: { resume?: boolean }): Promise<string> => {
        // started without input: an invocation from before first attempts moved to the dispatcher,
        // whose journal begins at attempt 1 (its replay must meet the same steps)
        let from: { attempt: number; delayMs: number } | null = { attempt: 1, delayMs: 0 };
        if (input?.resume) from = await ctx.run('resume', () => resumePoint(dd.pool, ctx.key), STEP_RETRY);
        if (!from) return 'settled';
        if (from.delayMs > 0) await ctx.sleep(from.delayMs);
        for (let attempt = from.attempt; ; attempt++) {
          const outcome = await ctx.run(`attempt ${attempt}`, () => attemptDelivery(dd, ctx.key), STEP_RETRY);
          if (outcome.done) return outcome.status;
          await ctx.sleep(outcome.delayMs);
        }
      },
    },
  });
}

export type DeliveryWorkflow = ReturnType<typeof createDeliveryWorkflow>;
