// How realtime events the API emits (run logs, run metrics, connection changes) reach every API
// instance: PostgreSQL NOTIFY on the channel the run status feed already listens to, or Redis
// pub/sub when REDIS_URL is set. One subscription per process whatever the number of streams.
// A payload too large for a NOTIFY (8000 bytes) is written to realtime_payloads and travels as its
// row id; listeners read it back. Run status changes do not travel here: the database announces
// them itself in the committing transaction (announce_run_status, db/functions.sql).
import { Redis } from 'ioredis';
import type pg from 'pg';
import type { RunStatusFeed } from '../runs/status-feed.ts';
import { REALTIME_CHANNEL } from '../runs/status-feed.ts';

/** An event as published: `spaceId` routes it; the rest is the event's own. */
export type RealtimeMessage =
  | { kind: 'run_log'; spaceId: string; runId: string; entry: { sequence: number; level: string; message: string; data?: unknown; createdAt: string } }
  | { kind: 'run_metric'; spaceId: string; runId: string; cost: { usd: number; prompt_tokens: number; completion_tokens: number } }
  | { kind: 'connection_update'; spaceId: string; orgId: string; userId: string | null; endUserId: string | null; connection: Record<string, unknown> }
  | { kind: 'chat_session_update'; spaceId: string; orgId: string; userId: string; session: Record<string, unknown> };

export interface RealtimeBus {
  readonly kind: 'postgres' | 'redis';
  publish(message: RealtimeMessage): Promise<void>;
  /** messages in the order the transport delivers them (references already resolved) */
  subscribe(listener: (message: RealtimeMessage) => void): () => void;
  close(): Promise<void>;
}

/** Under PostgreSQL's 8000-byte NOTIFY limit, with room for the channel name. */
export const NOTIFY_PAYLOAD_MAX = 7900;
/** How long a payload sent by reference stays readable. */
export const PAYLOAD_KEEP_MINUTES = 5;

function parse(text: string): RealtimeMessage | null {
  try {
    const m = JSON.parse(text) as RealtimeMessage;
    return m && typeof m === 'object' && typeof m.kind === 'string' && typeof m.spaceId === 'string' ? m : null;
  } catch {
    return null;
  }
}

/** A delivery chain: references are read in turn, so a large payload never lets a later one overtake it. */
function ordered(deliver: (m: RealtimeMessage) => void, resolve: (text: string) => Promise<string | null>) {
  let chain = Promise.resolve();
  return (text: string) => {
    chain = chain.then(async () => {
      const body = await resolve(text).catch(() => null);
      const m = body === null ? null : parse(body);
      if (m) deliver(m);
    });
  };
}

export function createPostgresBus(pool: pg.Pool, feed: RunStatusFeed): RealtimeBus {
  const listeners = new Set<(m: RealtimeMessage) => void>();
  const deliver = (m: RealtimeMessage) => {
    for (const l of listeners) l(m);
  };
  const resolve = async (text: string): Promise<string | null> => {
    if (!text.startsWith('{"ref":')) return text;
    const { ref } = JSON.parse(text) as { ref: number };
    const { rows } = await pool.query<{ body: string }>('SELECT body FROM realtime_payloads WHERE id = $1', [ref]);
    return rows[0]?.body ?? null;
  };
  const stop = feed.onRealtime(ordered(deliver, resolve));
  return {
    kind: 'postgres',
    async publish(message) {
      const text = JSON.stringify(message);
      if (Buffer.byteLength(text) <= NOTIFY_PAYLOAD_MAX) {
        await pool.query('SELECT pg_notify($1, $2)', [REALTIME_CHANNEL, text]);
        return;
      }
      await pool.query(
        `WITH p AS (INSERT INTO realtime_payloads (body) VALUES ($2) RETURNING id)
         SELECT pg_notify($1, '{"ref":' || p.id || '}') FROM p`,
        [REALTIME_CHANNEL, text],
      );
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      stop();
      listeners.clear();
    },
  };
}

export function createRedisBus(url: string, channel = 'ap:realtime'): RealtimeBus {
  const publisher = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true });
  const subscriber = new Redis(url, { maxRetriesPerRequest: null, enableOfflineQueue: true });
  const listeners = new Set<(m: RealtimeMessage) => void>();
  const subscribed = subscriber.subscribe(channel).catch(() => 0);
  subscriber.on('message', (ch: string, text: string) => {
    if (ch !== channel) return;
    const m = parse(text);
    if (m) for (const l of listeners) l(m);
  });
  publisher.on('error', () => {});
  subscriber.on('error', () => {});
  return {
    kind: 'redis',
    async publish(message) {
      await subscribed;
      await publisher.publish(channel, JSON.stringify(message));
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      listeners.clear();
      await Promise.all([publisher.quit().catch(() => publisher.disconnect()), subscriber.quit().catch(() => subscriber.disconnect())]);
    },
  };
}

/** Drops payloads sent by reference once every listener has had time to read them. */
export async function sweepRealtimePayloads(pool: pg.Pool): Promise<number> {
  const { rowCount } = await pool.query(
    `DELETE FROM realtime_payloads WHERE id IN (
       SELECT id FROM realtime_payloads WHERE created_at < now() - make_interval(mins => $1) ORDER BY created_at LIMIT 5000)`,
    [PAYLOAD_KEEP_MINUTES],
  );
  return rowCount ?? 0;
}
