// Builds the realtime hub of one process over the bus its configuration names.
import type pg from 'pg';
import type { Logger } from '../../../lib/log.ts';
import type { AuthCache } from '../auth-cache.ts';
import type { RunStatusFeed } from '../runs/status-feed.ts';
import { createPostgresBus, createRedisBus } from './bus.ts';
import { createRealtimeHub, type RealtimeHub } from './hub.ts';

export interface RealtimeSetup {
  pool: pg.Pool;
  feed: RunStatusFeed;
  authCache: AuthCache;
  log: Logger;
  /** Redis pub/sub when set, else PostgreSQL NOTIFY */
  redisUrl?: string;
  pingSeconds: number;
}

export function startRealtime(s: RealtimeSetup): RealtimeHub {
  const bus = s.redisUrl ? createRedisBus(s.redisUrl) : createPostgresBus(s.pool, s.feed);
  return createRealtimeHub({ pool: s.pool, feed: s.feed, bus, authCache: s.authCache, log: s.log, pingMs: s.pingSeconds * 1000 });
}
