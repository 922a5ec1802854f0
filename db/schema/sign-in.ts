// Sign-in options besides the password: e-mail verification links, magic links, and accounts of
// the operator's OpenID Connect provider linked to platform accounts (with the pending states of
// their authorization-code flows). Only hashes of link tokens and states are stored.
import { sql } from 'drizzle-orm';
import { index, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { users } from './identity.ts';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const emailVerifications = pgTable('email_verifications', {
  tokenHash: text('token_hash').primaryKey(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  /** the address the link proves (a changed address makes the link useless) */
  email: text('email').notNull(),
  expiresAt: ts('expires_at').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
}, (t) => [index('email_verifications_user_idx').on(t.userId)]);

export const magicLinks = pgTable('magic_links', {
  tokenHash: text('token_hash').primaryKey(),
  email: text('email').notNull(),
  /** the account the link signs into; null: the link creates the account */
  userId: text('user_id').references(() => users.id, { onDelete: 'cascade' }),
  expiresAt: ts('expires_at').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
}, (t) => [index('magic_links_email_idx').on(sql`lower(${t.email})`), index('magic_links_user_idx').on(t.userId)]);

export const socialAccounts = pgTable('social_accounts', {
  issuer: text('issuer').notNull(),
  subject: text('subject').notNull(),
  userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
  email: text('email'),
  createdAt: ts('created_at').notNull().defaultNow(),
}, (t) => [primaryKey({ name: 'social_accounts_pk', columns: [t.issuer, t.subject] }), index('social_accounts_user_idx').on(t.userId)]);

export const socialSignInStates = pgTable('social_sign_in_states', {
  stateHash: text('state_hash').primaryKey(),
  issuer: text('issuer').notNull(),
  /** the PKCE code verifier, sealed with the instance key */
  verifierSealed: text('verifier_sealed').notNull(),
  nonce: text('nonce').notNull(),
  /** set when a signed-in user links the provider's account to theirs */
  linkUserId: text('link_user_id').references(() => users.id, { onDelete: 'cascade' }),
  /** a same-origin path to send the browser to once signed in */
  returnTo: text('return_to'),
  expiresAt: ts('expires_at').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
}, (t) => [index('social_sign_in_states_link_user_idx').on(t.linkUserId)]);
