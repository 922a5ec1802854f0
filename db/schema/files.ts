// Durable files, staged uploads, and the files a run took in or published.
import { sql } from 'drizzle-orm';
import { bigint, boolean, index, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { organizations, spaces } from './identity.ts';
import { runs } from './runs.ts';

const createdAt = () => timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();

export const files = pgTable('files', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  spaceId: text('space_id').notNull().references(() => spaces.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  size: bigint('size', { mode: 'number' }).notNull(),
  mimeType: text('mime_type').notNull(),
  sha256: text('sha256').notNull(),
  /** where the content lives in the file storage (local folder or bucket) */
  storageKey: text('storage_key').notNull(),
  /** upload or run */
  source: text('source').notNull(),
  /** the run that published it */
  runId: text('run_id'),
  kept: boolean('kept').notNull().default(false),
  /** null: kept (or retention off) */
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }),
  createdAt: createdAt(),
}, (t) => [
  index('files_space_idx').on(t.orgId, t.spaceId, sql`${t.id} COLLATE "C"`),
  index('files_expiry_idx').on(t.expiresAt).where(sql`${t.expiresAt} IS NOT NULL`),
]);

export const uploads = pgTable('uploads', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  spaceId: text('space_id').notNull().references(() => spaces.id, { onDelete: 'cascade' }),
  /** user:<id> or apikey:<id>: whose staging slots it takes */
  actor: text('actor').notNull(),
  name: text('name').notNull(),
  size: bigint('size', { mode: 'number' }).notNull(),
  mimeType: text('mime_type').notNull(),
  sha256: text('sha256'),
  /** pending, writing, written */
  status: text('status').notNull().default('pending'),
  fileId: text('file_id'),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  createdAt: createdAt(),
}, (t) => [index('uploads_actor_idx').on(t.actor, t.status), index('uploads_org_idx').on(t.orgId, t.status)]);

export const runFiles = pgTable('run_files', {
  runId: text('run_id').notNull().references(() => runs.id, { onDelete: 'cascade' }),
  fileId: text('file_id').notNull().references(() => files.id, { onDelete: 'cascade' }),
  orgId: uuid('org_id').notNull(),
  spaceId: text('space_id').notNull(),
  /** input (named by the launch) or output (published by the run) */
  role: text('role').notNull(),
  /** its name in the workspace (input/<name>) or as published */
  name: text('name').notNull(),
  createdAt: createdAt(),
}, (t) => [primaryKey({ columns: [t.runId, t.role, t.name] }), index('run_files_file_idx').on(t.fileId)]);
