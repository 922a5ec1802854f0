// Model providers (organization-level): the credentials that reach a provider, and the models an
// organization has added from them. API keys are sealed at rest (lib/crypto.ts).
import { sql } from 'drizzle-orm';
import { boolean, doublePrecision, index, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { organizations } from './identity.ts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const modelProviderCredentials = pgTable('model_provider_credentials', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  /** a registered provider adapter: openai-compatible, openai, anthropic */
  provider: text('provider').notNull(),
  name: text('name').notNull(),
  /** OpenAI-compatible base URL, usually ending in /v1 */
  baseUrl: text('base_url').notNull(),
  /** the sealed API key; null when the credential holds none */
  apiKeySealed: text('api_key_sealed'),
  /** the last characters of the key, shown instead of it */
  apiKeyHint: text('api_key_hint'),
  createdBy: text('created_by'),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
}, (t) => [index('model_provider_credentials_org_idx').on(t.orgId)]);

export const models = pgTable('models', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  // a credential still referenced cannot be deleted (credential_in_use); checked at statement end
  // (no action, not restrict) so deleting the organization can cascade through both tables
  credentialId: text('credential_id').notNull().references(() => modelProviderCredentials.id, { onDelete: 'no action' }),
  /** the provider's model id */
  model: text('model').notNull(),
  name: text('name').notNull(),
  isDefault: boolean('is_default').notNull().default(false),
  enabled: boolean('enabled').notNull().default(true),
  /** what the model accepts, declared by the organization */
  supportsTemperature: boolean('supports_temperature').notNull().default(true),
  reasoningLevels: text('reasoning_levels').array().notNull().default(sql`'{}'::text[]`),
  /** default call settings */
  temperature: doublePrecision('temperature'),
  reasoningEffort: text('reasoning_effort'),
  createdBy: text('created_by'),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
}, (t) => [
  index('models_org_idx').on(t.orgId),
  uniqueIndex('models_credential_model_uq').on(t.credentialId, t.model),
  // at most one default model per organization
  uniqueIndex('models_org_default_uq').on(t.orgId).where(sql`is_default`),
]);

/**
 * A pairing: a one-time token (only its SHA-256 is kept) with which a tool holding a provider key
 * creates one credential in the organization on behalf of the member who started it (migration 0024).
 */
export const modelProviderPairings = pgTable('model_provider_pairings', {
  id: text('id').primaryKey(),
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  tokenHash: text('token_hash').notNull(),
  /** the member on whose behalf the credential is created */
  createdBy: text('created_by').notNull(),
  apiKeyId: text('api_key_id'),
  expiresAt: ts('expires_at').notNull(),
  consumedAt: ts('consumed_at'),
  /** the credential the redemption created; null again once that credential is deleted */
  credentialId: text('credential_id').references(() => modelProviderCredentials.id, { onDelete: 'set null' }),
  createdAt: ts('created_at').notNull().defaultNow(),
}, (t) => [
  uniqueIndex('model_provider_pairings_token_hash_uq').on(t.tokenHash),
  index('model_provider_pairings_org_idx').on(t.orgId),
]);
