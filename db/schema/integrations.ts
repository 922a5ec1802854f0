// Integration connections (credentials sealed with the instance key), the single-use connect links
// and OAuth states, the organization's governance per integration, pins of connections to agents,
// and the integrations (with their connections) each run was launched with. Migration 0004_integrations.
import { sql } from 'drizzle-orm';
import { boolean, check, index, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { endUsers, organizations, spaces } from './identity.ts';
import { runs } from './runs.ts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const integrationConnections = pgTable('integration_connections', {
  id: uuid('id').primaryKey().defaultRandom(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  spaceId: text('space_id').notNull().references(() => spaces.id, { onDelete: 'cascade' }),
  integrationPackageId: text('integration_package_id').notNull(),
  authKey: text('auth_key').notNull(),
  /** the member who completed the login, or on whose key an end-user connected */
  ownerUserId: text('owner_user_id').notNull(),
  /** set when the connection belongs to an end-user (Service-User) */
  ownerEndUserId: text('owner_end_user_id').references(() => endUsers.id, { onDelete: 'cascade' }),
  accountId: text('account_id').notNull(),
  label: text('label').notNull(),
  /** sealed JSON of the credential fields and login/OAuth outputs */
  credentials: text('credentials').notNull(),
  grantedScopes: text('granted_scopes').array().notNull().default(sql`'{}'`),
  tokenExpiresAt: ts('token_expires_at'),
  needsReconnection: boolean('needs_reconnection').notNull().default(false),
  sharedWithOrg: boolean('shared_with_org').notNull().default(false),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
}, (t) => [
  uniqueIndex('integration_connections_label_uq').on(t.orgId, t.spaceId, t.integrationPackageId, t.ownerUserId, sql`COALESCE(${t.ownerEndUserId}, '')`, t.label),
  index('integration_connections_space_idx').on(t.orgId, t.spaceId, t.integrationPackageId),
  index('integration_connections_page_idx').on(t.orgId, t.spaceId, t.createdAt, t.id),
]);

export const integrationConnectSessions = pgTable('integration_connect_sessions', {
  tokenHash: text('token_hash').primaryKey(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  spaceId: text('space_id').notNull().references(() => spaces.id, { onDelete: 'cascade' }),
  integrationPackageId: text('integration_package_id').notNull(),
  authKey: text('auth_key').notNull(),
  ownerUserId: text('owner_user_id').notNull(),
  ownerEndUserId: text('owner_end_user_id').references(() => endUsers.id, { onDelete: 'cascade' }),
  connectionId: uuid('connection_id'),
  scopes: text('scopes').array().notNull().default(sql`'{}'`),
  oauthState: text('oauth_state'),
  /** sealed PKCE code verifier */
  oauthVerifier: text('oauth_verifier'),
  expiresAt: ts('expires_at').notNull(),
  usedAt: ts('used_at'),
  createdAt: ts('created_at').notNull().defaultNow(),
}, (t) => [
  uniqueIndex('integration_connect_sessions_state_uq').on(t.oauthState),
  index('integration_connect_sessions_expiry_idx').on(t.expiresAt),
]);

export const integrationSettings = pgTable('integration_settings', {
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  integrationPackageId: text('integration_package_id').notNull(),
  personalConnectionsDisabled: boolean('personal_connections_disabled').notNull().default(false),
  defaultConnectionId: uuid('default_connection_id').references(() => integrationConnections.id, { onDelete: 'set null' }),
  enforceDefault: boolean('enforce_default').notNull().default(false),
  /** sealed JSON: auth key → { client_id, client_secret } */
  oauthClients: text('oauth_clients'),
  updatedAt: ts('updated_at').notNull().defaultNow(),
}, (t) => [primaryKey({ columns: [t.orgId, t.integrationPackageId] })]);

export const integrationConnectionPins = pgTable('integration_connection_pins', {
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  spaceId: text('space_id').notNull().references(() => spaces.id, { onDelete: 'cascade' }),
  agentId: text('agent_id').notNull(),
  integrationPackageId: text('integration_package_id').notNull(),
  connectionId: uuid('connection_id').notNull().references(() => integrationConnections.id, { onDelete: 'cascade' }),
  createdAt: ts('created_at').notNull().defaultNow(),
}, (t) => [
  primaryKey({ columns: [t.orgId, t.spaceId, t.agentId, t.integrationPackageId] }),
  index('integration_connection_pins_connection_idx').on(t.connectionId),
]);

/** One row per integration of a run, its version pinned at launch; auth and connection null for one declaring no auths (migration 0025). */
export const runConnections = pgTable('run_connections', {
  runId: text('run_id').notNull().references(() => runs.id, { onDelete: 'cascade' }),
  orgId: uuid('org_id').notNull(),
  integrationPackageId: text('integration_package_id').notNull(),
  integrationVersion: text('integration_version').notNull(),
  authKey: text('auth_key'),
  connectionId: uuid('connection_id'),
}, (t) => [
  primaryKey({ columns: [t.runId, t.integrationPackageId] }),
  check('run_connections_connection_with_auth', sql`(${t.authKey} IS NULL) = (${t.connectionId} IS NULL)`),
]);
