// One pool per process. Queries of tenant resources go through db/tenant.ts helpers.
import { createHash } from 'node:crypto';
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

/**
 * pool.query(text, values) as a named (prepared) statement: each connection parses and plans a
 * statement once and then only binds and executes it, which saves the server most of the work
 * of the short queries that dominate (authentication, reads by id, lists).
 */
function preparePoolQueries(pool: pg.Pool): void {
  const names = new Map<string, string>();
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (text: unknown, values?: unknown, cb?: unknown) => {
    if (typeof text !== 'string' || !Array.isArray(values) || typeof cb === 'function') return query(text, values, cb);
    let name = names.get(text);
    if (name === undefined) {
      name = `s${createHash('sha1').update(text).digest('base64url').slice(0, 16)}`;
      if (names.size < 5000) names.set(text, name);
    }
    return query({ name, text, values });
  };
}

export function connectDatabase(url: string, opts: { max?: number } = {}): Database {
  const pool = new pg.Pool({ connectionString: url, max: opts.max ?? 20, idleTimeoutMillis: 30_000 });
  // A dropped idle connection must not crash the process.
  pool.on('error', () => {});
  preparePoolQueries(pool);
  const db = drizzle(pool, { schema }) as Db;
  return { db, pool, url, close: () => pool.end() };
}
