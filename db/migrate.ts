import fs from 'node:fs';
import path from 'node:path';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { projectRoot } from '../lib/project-root.ts';
import type { Database } from './client.ts';

export const MIGRATIONS_DIR = path.join(projectRoot(), 'db', 'migrations');
const FUNCTIONS_FILE = path.join(projectRoot(), 'db', 'functions.sql');
/** Replicas starting together take turns: concurrent DDL on one database fails. */
const MIGRATION_LOCK = 7_210_431_559;

/** Applies the generated SQL migrations, then (re)creates our SQL functions; safe on every start. */
export async function applyMigrations(database: Database): Promise<void> {
  const lock = await database.pool.connect();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    await migrate(database.db, { migrationsFolder: MIGRATIONS_DIR });
    await database.pool.query(fs.readFileSync(FUNCTIONS_FILE, 'utf8'));
  } finally {
    await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => {});
    lock.release();
  }
}
