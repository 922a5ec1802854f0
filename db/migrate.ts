import path from 'node:path';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { projectRoot } from '../lib/project-root.ts';
import type { Database } from './client.ts';

export const MIGRATIONS_DIR = path.join(projectRoot(), 'db', 'migrations');

/** Applies the generated SQL migrations; safe to call on every start (applied ones are skipped). */
export async function applyMigrations(database: Database): Promise<void> {
  await migrate(database.db, { migrationsFolder: MIGRATIONS_DIR });
}
