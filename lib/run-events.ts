// The runner-to-platform event protocol: the event bodies a sidecar posts for its run, and their
// signature in the Standard Webhooks style (webhook-id, webhook-timestamp, webhook-signature).
import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { problem } from './problem.ts';

export const RUN_EVENT_TYPES = ['started', 'log', 'metric', 'output', 'heartbeat', 'completed', 'failed'] as const;
export type RunEventType = (typeof RUN_EVENT_TYPES)[number];

export const RUN_LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type RunLogLevel = (typeof RUN_LOG_LEVELS)[number];

export type RunStartedData = Record<string, never>;
export type RunHeartbeatData = Record<string, never>;

export interface RunLogData {
  level: RunLogLevel;
  message: string;
  data?: unknown;
}

/** Usage of ONE model call (not a running total). */
export interface RunMetricData {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  model: string;
  cost_usd?: number;
}

export interface RunOutputData {
  output: unknown;
}

export interface RunCompletedData {
  text?: string;
}

export interface RunFailedData {
  code: string;
  message: string;
}

export interface RunEventDataByType {
  started: RunStartedData;
  log: RunLogData;
  metric: RunMetricData;
  output: RunOutputData;
  heartbeat: RunHeartbeatData;
  completed: RunCompletedData;
  failed: RunFailedData;
}

/** One event body: `sequence` counts 1, 2, 3 ... per run and is assigned by the sidecar. */
export type RunEvent = {
  [K in RunEventType]: { sequence: number; type: K; at: string; data: RunEventDataByType[K] };
}[RunEventType];

export const TERMINAL_RUN_EVENT_TYPES: readonly RunEventType[] = ['completed', 'failed'];

export const WEBHOOK_ID_HEADER = 'webhook-id';
export const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';

const SECRET_PREFIX = 'whsec_';
const SIGNATURE_VERSION = 'v1';

/** A fresh per-run signing secret: `whsec_` + base64 of 32 random bytes. */
export function newRunEventSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** A fresh message id; a retried delivery of the same event keeps its id. */
export function newRunEventId(): string {
  return `msg_${randomUUID()}`;
}

function secretKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(encoded, 'base64');
  if (key.length === 0) throw new Error('run event secret is empty');
  return key;
}

function hmac(key: Buffer, id: string, timestampSec: number, rawBody: string | Buffer): Buffer {
  const mac = createHmac('sha256', key);
  mac.update(`${id}.${timestampSec}.`);
  mac.update(rawBody);
  return mac.digest();
}

/** `v1,<base64 HMAC-SHA256 over "<id>.<timestamp>.<raw body>">`. */
export function signRunEvent(secret: string, id: string, timestampSec: number, rawBody: string | Buffer): string {
  return `${SIGNATURE_VERSION},${hmac(secretKey(secret), id, timestampSec, rawBody).toString('base64')}`;
}

/** The three headers for one delivery attempt of a body. */
export function signedRunEventHeaders(
  secret: string,
  rawBody: string | Buffer,
  opts: { id?: string; nowSec?: number } = {},
): Record<string, string> {
  const id = opts.id ?? newRunEventId();
  const timestamp = opts.nowSec ?? Math.floor(Date.now() / 1000);
  return {
    [WEBHOOK_ID_HEADER]: id,
    [WEBHOOK_TIMESTAMP_HEADER]: String(timestamp),
    [WEBHOOK_SIGNATURE_HEADER]: signRunEvent(secret, id, timestamp, rawBody),
  };
}

/**
 * Checks a delivery's signature. Header names are looked up in lower case (as node:http gives them).
 * Returns the message id (for replay refusal) and the timestamp.
 */
export function verifyRunEventSignature(
  secret: string,
  headers: Record<string, string | undefined>,
  rawBody: string | Buffer,
  nowSec: number,
  toleranceSec = 300,
): { id: string; timestamp: number } {
  const id = headers[WEBHOOK_ID_HEADER];
  const timestampText = headers[WEBHOOK_TIMESTAMP_HEADER];
  const signatures = headers[WEBHOOK_SIGNATURE_HEADER];
  if (!id || !timestampText || !signatures) {
    throw problem('missing_signature_headers', {
      detail: 'webhook-id, webhook-timestamp and webhook-signature are all required.',
    });
  }
  if (!/^[0-9]{1,12}$/.test(timestampText)) {
    throw problem('invalid_timestamp', { detail: 'webhook-timestamp must be an integer number of seconds since the Unix epoch.' });
  }
  const timestamp = Number(timestampText);
  if (Math.abs(nowSec - timestamp) > toleranceSec) {
    throw problem('timestamp_out_of_tolerance', {
      detail: `webhook-timestamp is more than ${toleranceSec} seconds away from the server clock.`,
    });
  }
  const expected = hmac(secretKey(secret), id, timestamp, rawBody);
  for (const entry of signatures.split(' ')) {
    const comma = entry.indexOf(',');
    // Stryker disable next-line ConditionalExpression,EqualityOperator: without a comma (or at 0), no prefix equals "v1" and the entry is skipped all the same
    if (comma < 0 || entry.slice(0, comma) !== SIGNATURE_VERSION) continue;
    const given = Buffer.from(entry.slice(comma + 1), 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return { id, timestamp };
  }
  throw problem('invalid_signature', { detail: 'No webhook-signature entry matches the body.' });
}
