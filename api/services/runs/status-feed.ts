// Committed run status changes, heard through PostgreSQL NOTIFY run_status (sent in the same
// transaction as the change), so every API instance can wake its long polls and streams.
import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { Logger } from '../../../lib/log.ts';

export interface RunStatusChange {
  id: string;
  org_id: string;
  space_id: string;
  status: string;
}

export interface RunStatusFeed {
  /** resolves at the next change of this run, or after ms */
  next(runId: string, ms: number, signal?: AbortSignal): Promise<RunStatusChange | null>;
  on(listener: (change: RunStatusChange) => void): () => void;
  close(): Promise<void>;
}

export async function createRunStatusFeed(databaseUrl: string, log: Logger): Promise<RunStatusFeed> {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  let closed = false;
  let client: pg.Client | null = null;

  const connect = async () => {
    if (closed) return;
    const c = new pg.Client({ connectionString: databaseUrl });
    c.on('notification', (msg) => {
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
      if (!closed) setTimeout(() => void connect().catch(() => {}), 1000).unref();
    });
    try {
      await c.connect();
      await c.query('LISTEN run_status');
      client = c;
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
    async close() {
      closed = true;
      emitter.removeAllListeners();
      await client?.end().catch(() => {});
    },
  };
}
