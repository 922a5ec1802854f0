// Committed run changes, heard through PostgreSQL NOTIFY on one connection: run_status (sent in
// the same transaction as a status change) wakes long polls and streams on every API instance;
// run_wire_changed (sent by a trigger whenever a column the wire shows changes, with the space id)
// keeps the run read cache (read-cache.ts) true; realtime carries the API's realtime events across
// instances when no Redis is configured (api/services/realtime/bus.ts).
import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { Logger } from '../../../lib/log.ts';

/** db/functions.sql: the trigger runs_wire_changed */
export const RUN_WIRE_CHANNEL = 'run_wire_changed';
/** api/services/realtime/bus.ts: realtime events published through PostgreSQL */
export const REALTIME_CHANNEL = 'realtime';

export interface RunStatusChange {
  id: string;
  org_id: string;
  space_id: string;
  status: string;
  /** announce_run_status (db/functions.sql): who may read the run, and its wire when it fits */
  agent_id?: string;
  actor_user_id?: string | null;
  end_user_id?: string | null;
  wire?: Record<string, unknown>;
}

export interface RunStatusFeed {
  /** resolves at the next change of this run, or after ms */
  next(runId: string, ms: number, signal?: AbortSignal): Promise<RunStatusChange | null>;
  on(listener: (change: RunStatusChange) => void): () => void;
  /** a run of this space changed what its wire shows (inserted, updated or deleted) */
  onWireChange(listener: (spaceId: string) => void): () => void;
  /** a payload published on the realtime channel */
  onRealtime(listener: (payload: string) => void): () => void;
  /** called whenever notifications may have been missed (the connection went down or came back) */
  onReset(listener: () => void): () => void;
  /** true while notifications are heard: a cache built on them is only trusted then */
  readonly listening: boolean;
  close(): Promise<void>;
}

export async function createRunStatusFeed(databaseUrl: string, log: Logger): Promise<RunStatusFeed> {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  let closed = false;
  let listening = false;
  let client: pg.Client | null = null;
  const reset = () => emitter.emit('reset');

  const connect = async () => {
    if (closed) return;
    const c = new pg.Client({ connectionString: databaseUrl });
    c.on('notification', (msg) => {
      if (msg.channel === RUN_WIRE_CHANNEL) {
        if (msg.payload) emitter.emit('wire', msg.payload);
        return;
      }
      if (msg.channel === REALTIME_CHANNEL) {
        if (msg.payload) emitter.emit('realtime', msg.payload);
        return;
      }
      try {
        const change = JSON.parse(msg.payload ?? '') as RunStatusChange;
        emitter.emit(`run:${change.id}`, change);
        emitter.emit('any', change);
      } catch {
        // not ours
      }
    });
    c.on('error', () => {});
    c.on('end', () => {
      listening = false;
      reset();
      if (!closed) setTimeout(() => void connect().catch(() => {}), 1000).unref();
    });
    try {
      await c.connect();
      await c.query(`LISTEN run_status; LISTEN ${RUN_WIRE_CHANNEL}; LISTEN ${REALTIME_CHANNEL}`);
      client = c;
      listening = true;
      reset();
    } catch (err) {
      log.warn('run status feed unavailable; long polls fall back to their timeout', { error: String(err) });
      await c.end().catch(() => {});
    }
  };
  await connect();

  return {
    next(runId, ms, signal) {
      return new Promise((resolve) => {
        const event = `run:${runId}`;
        const done = (change: RunStatusChange | null) => {
          clearTimeout(timer);
          emitter.off(event, onChange);
          signal?.removeEventListener('abort', onAbort);
          resolve(change);
        };
        const onChange = (change: RunStatusChange) => done(change);
        const onAbort = () => done(null);
        const timer = setTimeout(() => done(null), ms);
        emitter.on(event, onChange);
        signal?.addEventListener('abort', onAbort);
      });
    },
    on(listener) {
      emitter.on('any', listener);
      return () => emitter.off('any', listener);
    },
    onWireChange(listener) {
      emitter.on('wire', listener);
      return () => emitter.off('wire', listener);
    },
    onRealtime(listener) {
      emitter.on('realtime', listener);
      return () => emitter.off('realtime', listener);
    },
    onReset(listener) {
      emitter.on('reset', listener);
      return () => emitter.off('reset', listener);
    },
    get listening() {
      return listening;
    },
    async close() {
      closed = true;
      listening = false;
      emitter.removeAllListeners();
      await client?.end().catch(() => {});
    },
  };
}
