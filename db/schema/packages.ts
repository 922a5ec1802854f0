// Packages (AFPS): one row per package id in an organization, its immutable published versions,
// the editable draft, placements in spaces, and a content-addressed blob store the files and
// original archives live in (chunked, so a large archive never travels as one message).
import { bigint, boolean, customType, foreignKey, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { organizations, spaces } from './identity.ts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' });

export const packages = pgTable('packages', {
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  /** @scope/name, unique per organization */
  id: text('id').notNull(),
  type: text('type').notNull(),
  homeSpaceId: text('home_space_id').notNull(),
  createdBy: text('created_by'),
  /** dist-tag → version; latest follows the highest non-yanked release */
  distTags: jsonb('dist_tags').$type<Record<string, string>>().notNull().default({}),
  /** the published version the draft started from (or was last reset to) */
  draftBaseVersion: text('draft_base_version'),
  /** false: the draft is exactly draft_base_version's tree and has no rows of its own */
  draftDetached: boolean('draft_detached').notNull().default(false),
  /** tree integrity of the draft's files: the draft's strong ETag */
  draftIntegrity: text('draft_integrity').notNull(),
  draftUpdatedAt: ts('draft_updated_at').notNull().defaultNow(),
  forkedFrom: text('forked_from'),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
  deletedAt: ts('deleted_at'),
}, (t) => [
  primaryKey({ columns: [t.orgId, t.id] }),
  index('packages_home_idx').on(t.orgId, t.homeSpaceId),
]);

export const packageVersions = pgTable('package_versions', {
  orgId: uuid('org_id').notNull(),
  packageId: text('package_id').notNull(),
  version: text('version').notNull(),
  manifest: jsonb('manifest').notNull(),
  /** tree integrity of the files (independent of archive layout) */
  integrity: text('integrity').notNull(),
  /** the archive exactly as uploaded (or as written, for drafts and repository imports) */
  archiveDigest: text('archive_digest').notNull(),
  archiveSize: bigint('archive_size', { mode: 'number' }).notNull(),
  yanked: boolean('yanked').notNull().default(false),
  publishedBy: text('published_by'),
  publishedAt: ts('published_at').notNull().defaultNow(),
}, (t) => [
  foreignKey({ columns: [t.orgId, t.packageId], foreignColumns: [packages.orgId, packages.id] }).onDelete('cascade'),
  primaryKey({ columns: [t.orgId, t.packageId, t.version] }),
]);

export const packageVersionFiles = pgTable('package_version_files', {
  orgId: uuid('org_id').notNull(),
  packageId: text('package_id').notNull(),
  version: text('version').notNull(),
  path: text('path').notNull(),
  digest: text('digest').notNull(),
  size: bigint('size', { mode: 'number' }).notNull(),
}, (t) => [
  foreignKey({ columns: [t.orgId, t.packageId], foreignColumns: [packages.orgId, packages.id] }).onDelete('cascade'),
  primaryKey({ columns: [t.orgId, t.packageId, t.version, t.path] }),
]);

/** Rows exist only while the draft is detached from its base version. */
export const packageDraftFiles = pgTable('package_draft_files', {
  orgId: uuid('org_id').notNull(),
  packageId: text('package_id').notNull(),
  path: text('path').notNull(),
  digest: text('digest').notNull(),
  size: bigint('size', { mode: 'number' }).notNull(),
}, (t) => [
  foreignKey({ columns: [t.orgId, t.packageId], foreignColumns: [packages.orgId, packages.id] }).onDelete('cascade'),
  primaryKey({ columns: [t.orgId, t.packageId, t.path] }),
]);

/** A package offered in a space other than its home; active false switches it off there. */
export const packagePlacements = pgTable('package_placements', {
  orgId: uuid('org_id').notNull(),
  packageId: text('package_id').notNull(),
  spaceId: text('space_id').notNull().references(() => spaces.id, { onDelete: 'cascade' }),
  active: boolean('active').notNull().default(true),
  createdBy: text('created_by'),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
}, (t) => [
  foreignKey({ columns: [t.orgId, t.packageId], foreignColumns: [packages.orgId, packages.id] }).onDelete('cascade'),
  primaryKey({ columns: [t.orgId, t.packageId, t.spaceId] }),
  index('package_placements_space_idx').on(t.orgId, t.spaceId),
]);

/** Content by sha256 integrity, split in chunks of at most 1 MiB (seq from 0). */
export const packageBlobs = pgTable('package_blobs', {
  orgId: uuid('org_id').notNull(),
  digest: text('digest').notNull(),
  seq: integer('seq').notNull(),
  data: bytea('data').notNull(),
}, (t) => [
  foreignKey({ columns: [t.orgId], foreignColumns: [organizations.id] }).onDelete('cascade'),
  primaryKey({ columns: [t.orgId, t.digest, t.seq] }),
]);
