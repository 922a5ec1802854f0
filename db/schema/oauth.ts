// OIDC module: the OAuth clients (instance, org or space level), the provider's own state
// (grants, codes, tokens, device codes, sessions: one row per model and id) and its ES256
// signing keys, the private halves sealed with the instance key.
import { sql } from 'drizzle-orm';
import { boolean, index, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { organizations, spaces, users } from './identity.ts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const oauthClients = pgTable('oauth_clients', {
  /** the client_id: oac_... when registered here, the https URL of a client ID metadata document otherwise */
  id: text('id').primaryKey(),
  /** instance, org or space */
  level: text('level').notNull(),
  orgId: uuid('org_id').references(() => organizations.id, { onDelete: 'cascade' }),
  spaceId: text('space_id').references(() => spaces.id, { onDelete: 'cascade' }),
  name: text('name').notNull(),
  redirectUris: text('redirect_uris').array().notNull().default(sql`'{}'`),
  postLogoutRedirectUris: text('post_logout_redirect_uris').array().notNull().default(sql`'{}'`),
  grantTypes: text('grant_types').array().notNull(),
  /** none (public clients, PKCE), client_secret_basic or client_secret_post */
  tokenEndpointAuthMethod: text('token_endpoint_auth_method').notNull(),
  /** the client secret sealed with the instance key; null for public clients */
  secretSealed: text('secret_sealed'),
  /** the scopes this client may be granted */
  scopes: text('scopes').array().notNull(),
  /** space level: whether a first sign-in creates the end-user */
  allowSignup: boolean('allow_signup').notNull().default(false),
  /** api (POST /api/oauth/clients), dynamic (RFC 7591) or metadata_document (URL-named client) */
  registration: text('registration').notNull(),
  /** other registered client metadata (logo_uri, client_uri, ...) */
  metadata: jsonb('metadata').notNull().default(sql`'{}'::jsonb`),
  createdBy: text('created_by').references(() => users.id, { onDelete: 'set null' }),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
}, (t) => [
  index('oauth_clients_org_idx').on(t.orgId, t.spaceId, sql`${t.id} COLLATE "C"`),
]);

export const oidcPayloads = pgTable('oidc_payloads', {
  /** the provider's model name: AccessToken, RefreshToken, Grant, DeviceCode, Session, Interaction, ... */
  model: text('model').notNull(),
  id: text('id').notNull(),
  payload: jsonb('payload').notNull(),
  grantId: text('grant_id'),
  userCode: text('user_code'),
  uid: text('uid'),
  /** the user (or end-user) the row belongs to: what a password change revokes */
  accountId: text('account_id'),
  expiresAt: ts('expires_at'),
  consumedAt: ts('consumed_at'),
}, (t) => [
  primaryKey({ name: 'oidc_payloads_pk', columns: [t.model, t.id] }),
  index('oidc_payloads_grant_idx').on(t.grantId),
  index('oidc_payloads_user_code_idx').on(t.userCode),
  index('oidc_payloads_uid_idx').on(t.uid),
  index('oidc_payloads_account_idx').on(t.accountId),
  index('oidc_payloads_expires_idx').on(t.expiresAt),
]);

export const oidcSigningKeys = pgTable('oidc_signing_keys', {
  kid: text('kid').primaryKey(),
  alg: text('alg').notNull().default('ES256'),
  /** the private JWK (JSON) sealed with the instance key */
  privateJwkSealed: text('private_jwk_sealed').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  /** set when rotated out: still published in the JWKS until its last token expires */
  retiredAt: ts('retired_at'),
});
