// One pool per process. Queries of tenant resources go through db/tenant.ts helpers.
import pg from 'pg';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import * as schema from './schema/index.ts';

export type Schema = typeof schema;
export type Db = NodePgDatabase<Schema> & { $client: pg.Pool };

export interface Database {
  db: Db;
  pool: pg.Pool;
  url: string;
  close(): Promise<void>;
}

// Timestamps come back as Date; bigint counts as numbers (they stay well below 2^53).
pg.types.setTypeParser(20, (v) => Number(v));

export function connectDatabase(url: string, opts: { max?: number } = {}): Database {
  const pool = new pg.Pool({ connectionString: url, max: opts.max ?? 20, idleTimeoutMillis: 30_000 });
  // A dropped idle connection must not crash the process.
  pool.on('error', () => {});
  const db = drizzle(pool, { schema }) as Db;
  return { db, pool, url, close: () => pool.end() };
}
