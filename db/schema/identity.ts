// Accounts, organizations, spaces, roles, API keys and end-users.
import { sql } from 'drizzle-orm';
import { boolean, check, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';

const createdAt = () => timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();
const updatedAt = () => timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow();

export const users = pgTable('users', {
  id: text('id').primaryKey(),
  email: text('email').notNull(),
  name: text('name').notNull(),
  passwordHash: text('password_hash'),
  /** when the address was proven (verification link, magic link, or a provider's verified claim) */
  emailVerifiedAt: timestamp('email_verified_at', { withTimezone: true, mode: 'date' }),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
}, (t) => [uniqueIndex('users_email_uq').on(sql`lower(${t.email})`)]);

export const sessions = pgTable('sessions', {
  id: text('id').primaryKey(),
  tokenHash: text('token_hash').notNull(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  realm: text('realm').notNull().default('platform'),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  extendedAt: timestamp('extended_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  ip: text('ip'),
  userAgent: text('user_agent'),
  createdAt: createdAt(),
}, (t) => [uniqueIndex('sessions_token_uq').on(t.tokenHash), index('sessions_user_idx').on(t.userId)]);

export const passwordResets = pgTable('password_resets', {
  tokenHash: text('token_hash').primaryKey(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  createdAt: createdAt(),
});

export const organizations = pgTable('organizations', {
  id: uuid('id').primaryKey().defaultRandom(),
  name: text('name').notNull(),
  slug: text('slug').notNull(),
  apiVersion: text('api_version'),
  /** local MCP servers may receive their credential in their environment (delivery.env) */
  localCredentialEnv: boolean('local_credential_env').notNull().default(false),
  deletingAt: timestamp('deleting_at', { withTimezone: true, mode: 'date' }),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
}, (t) => [uniqueIndex('organizations_slug_uq').on(t.slug)]);

export const orgMembers = pgTable('org_members', {
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  role: text('role').notNull(),
  createdAt: createdAt(),
}, (t) => [primaryKey({ columns: [t.orgId, t.userId] }), index('org_members_user_idx').on(t.userId)]);

export const spaces = pgTable('spaces', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  kind: text('kind').notNull().default('team'),
  ownerUserId: text('owner_user_id').references(() => users.id, { onDelete: 'set null' }),
  isDefault: boolean('is_default').notNull().default(false),
  /** team spaces: private (members only) or org (every organization member may see and join it) */
  visibility: text('visibility').notNull().default('private'),
  /** team spaces: the space role a member joining by themselves receives */
  defaultRole: text('default_role').notNull().default('viewer'),
  /** members: whoever reads a package homed here may fork it; restricted: only <type>:write holders here */
  packageCopy: text('package_copy').notNull().default('members'),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
}, (t) => [
  index('spaces_org_idx').on(t.orgId),
  index('spaces_org_visible_idx').on(t.orgId).where(sql`visibility = 'org'`),
  check('spaces_visibility_ck', sql`visibility IN ('private', 'org') AND (kind = 'team' OR visibility = 'private')`),
  check('spaces_package_copy_ck', sql`package_copy IN ('members', 'restricted')`),
  // each member holds one personal space per organization
  uniqueIndex('spaces_personal_uq').on(t.orgId, t.ownerUserId).where(sql`kind = 'personal'`),
]);

/** Organization-defined space roles; the presets live in code (lib/permissions.ts). */
export const spaceRoles = pgTable('space_roles', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  key: text('key').notNull(),
  name: text('name').notNull(),
  permissions: text('permissions').array().notNull(),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
}, (t) => [uniqueIndex('space_roles_key_uq').on(t.orgId, t.key)]);

export const spaceMembers = pgTable('space_members', {
  spaceId: text('space_id').notNull().references(() => spaces.id, { onDelete: 'cascade' }),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  roleKey: text('role_key').notNull(),
  createdAt: createdAt(),
}, (t) => [primaryKey({ columns: [t.spaceId, t.userId] }), index('space_members_org_user_idx').on(t.orgId, t.userId)]);

export const invitations = pgTable('invitations', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  email: text('email').notNull(),
  role: text('role').notNull(),
  tokenHash: text('token_hash').notNull(),
  status: text('status').notNull().default('pending'),
  /** sending, sent, failed, or disabled (no SMTP_URL: the link is passed on by hand) */
  delivery: text('delivery').notNull().default('disabled'),
  invitedBy: text('invited_by').references(() => users.id, { onDelete: 'set null' }),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
  createdAt: createdAt(),
}, (t) => [
  uniqueIndex('invitations_token_uq').on(t.tokenHash),
  index('invitations_org_idx').on(t.orgId),
  // one pending invitation per address and organization
  uniqueIndex('invitations_pending_uq').on(t.orgId, sql`lower(${t.email})`).where(sql`status = 'pending'`),
  check('invitations_delivery_check', sql`${t.delivery} IN ('sending', 'sent', 'failed', 'disabled')`),
]);

export const apiKeys = pgTable('api_keys', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  spaceId: text('space_id').notNull().references(() => spaces.id, { onDelete: 'cascade' }),
  createdBy: text('created_by').notNull().references(() => users.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  keyHash: text('key_hash').notNull(),
  keyPrefix: text('key_prefix').notNull(),
  scopes: text('scopes').array().notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }),
  revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
  createdAt: createdAt(),
}, (t) => [uniqueIndex('api_keys_hash_uq').on(t.keyHash), index('api_keys_space_idx').on(t.orgId, t.spaceId)]);

export const endUsers = pgTable('end_users', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  spaceId: text('space_id').notNull().references(() => spaces.id, { onDelete: 'cascade' }),
  externalId: text('external_id').notNull(),
  name: text('name').notNull(),
  metadata: jsonb('metadata'),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
}, (t) => [
  uniqueIndex('end_users_external_uq').on(t.spaceId, t.externalId),
  // the list pages by id in byte order (COLLATE "C"): the index must sort the same way to serve it
  index('end_users_space_idx').on(t.orgId, t.spaceId, sql`${t.id} COLLATE "C"`),
]);

export const impersonationLog = pgTable('impersonation_log', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  requestId: text('request_id').notNull(),
  orgId: uuid('org_id').notNull(),
  apiKeyId: text('api_key_id').notNull(),
  endUserId: text('end_user_id').notNull(),
  method: text('method').notNull(),
  path: text('path').notNull(),
  ip: text('ip'),
  userAgent: text('user_agent'),
  createdAt: createdAt(),
});

export const bootstrapState = pgTable('bootstrap_state', {
  id: integer('id').primaryKey(),
  userId: text('user_id'),
  orgId: uuid('org_id'),
  redeemedAt: timestamp('redeemed_at', { withTimezone: true, mode: 'date' }),
});
