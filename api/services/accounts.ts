// Accounts and their passwords: sign-up, sign-in, sign-out, change, set and reset.
// A password change ends the account's other sessions; a reset ends every session; both (and
// setting a first password) drop pending reset links, magic links and social-account links and run
// the registered credential revokers.
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Config } from '../../lib/config.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { newId } from '../../lib/ids.ts';
import type { Logger } from '../../lib/log.ts';
import { templated, writeResetLink, type Mailer } from '../../lib/mail.ts';
import { problem } from '../../lib/problem.ts';
import { runCredentialRevokers, type CredentialChange } from './credential-change.ts';
import { changeIdentity, isUniqueViolation, type IdentityStore } from './identity-change.ts';
import { issueEmailVerification } from './email-verification.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
import { createSession, type NewSession, type Queryable, type SignedInSession } from './sessions.ts';

const RESET_TTL_MS = 60 * 60 * 1000;

export interface AccountStore extends IdentityStore {
  config: Config;
}

export interface User {
  id: string;
  email: string;
  name: string;
  email_verified: boolean;
  createdAt: string;
}

/** The columns toUser reads. */
export const USER_COLUMNS = 'id, email, name, email_verified_at, created_at';

export interface ClientInfo {
  ip?: string;
  userAgent?: string;
}

export function toUser(row: { id: string; email: string; name: string; email_verified_at: Date | null; created_at: Date }): User {
  return { id: row.id, email: row.email, name: row.name, email_verified: row.email_verified_at !== null, createdAt: row.created_at.toISOString() };
}

function emailDomain(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1).toLowerCase();
}

/**
 * AUTH_ALLOWED_SIGNUP_DOMAINS, when set, limits who can create an account; an address holding a
 * pending invitation may always sign up, so inviting someone from outside works.
 */
export async function assertSignupAllowed(db: Queryable, config: Config, email: string): Promise<void> {
  const allowed = config.AUTH_ALLOWED_SIGNUP_DOMAINS.map((d) => d.toLowerCase().replace(/^@/, ''));
  if (allowed.length === 0 || allowed.includes(emailDomain(email))) return;
  const invited = await db.query(
    `SELECT 1 FROM invitations WHERE lower(email) = lower($1) AND status = 'pending' AND expires_at > now() LIMIT 1`,
    [email],
  );
  if (invited.rowCount) return;
  throw problem('signup_domain_not_allowed', { detail: `Accounts with an address at ${emailDomain(email)} cannot be created on this instance.` });
}

/** Inserts an account; an address already taken is a field error on email. */
export async function insertUser(client: pg.PoolClient, input: { email: string; password: string; name: string }): Promise<User> {
  const passwordHash = await hashPassword(input.password);
  try {
    const { rows } = await client.query(
      `INSERT INTO users (id, email, name, password_hash) VALUES ($1, $2, $3, $4) RETURNING ${USER_COLUMNS}`,
      [newId('usr'), input.email.trim(), input.name.trim(), passwordHash],
    );
    return toUser(rows[0]);
  } catch (err) {
    if (isUniqueViolation(err, 'users_email_uq')) {
      throw problem('validation_failed', { detail: 'An account already exists for this email.', errors: [{ field: 'email', code: 'invalid_value', message: 'An account already exists for this email.' }] });
    }
    throw err;
  }
}

/**
 * Creates the account with a verification link for its address. While AUTH_EMAIL_VERIFICATION is
 * required the account gets no session until the address is verified (session: null).
 */
export async function signUp(store: AccountStore, input: { email: string; password: string; name: string }, from: ClientInfo): Promise<{ user: User; session: NewSession | null; verificationToken: string }> {
  await assertSignupAllowed(store.pool, store.config, input.email);
  return changeIdentity(store, async (client) => {
    const user = await insertUser(client, input);
    const verificationToken = await issueEmailVerification(client, user);
    const session = store.config.AUTH_EMAIL_VERIFICATION === 'required' ? null : await createSession(client, user.id, from);
    return { user, session, verificationToken };
  });
}

/** An account without a password (magic link, social sign-in); an address already taken is a field error. */
export async function insertPasswordlessUser(client: pg.PoolClient, input: { email: string; name: string; verified: boolean }): Promise<User> {
  try {
    const { rows } = await client.query(
      `INSERT INTO users (id, email, name, email_verified_at) VALUES ($1, $2, $3, CASE WHEN $4 THEN now() END) RETURNING ${USER_COLUMNS}`,
      [newId('usr'), input.email.trim(), input.name.trim() || input.email.trim(), input.verified],
    );
    return toUser(rows[0]);
  } catch (err) {
    if (isUniqueViolation(err, 'users_email_uq')) {
      throw problem('validation_failed', { detail: 'An account already exists for this email.', errors: [{ field: 'email', code: 'invalid_value', message: 'An account already exists for this email.' }] });
    }
    throw err;
  }
}

/** Refuses an unverified account while AUTH_EMAIL_VERIFICATION is required. */
export function assertMaySignIn(config: Config, user: User): void {
  if (config.AUTH_EMAIL_VERIFICATION === 'required' && !user.email_verified) {
    throw problem('forbidden', { detail: 'Verify your e-mail address first: follow the link sent to it (POST /api/auth/send-verification-email sends a new one).' });
  }
}

/** Wrong password and unknown address give the same answer, in about the same time. */
export async function signInWithPassword(pool: pg.Pool, config: Config, input: { email: string; password: string }, from: ClientInfo): Promise<{ user: User; session: NewSession }> {
  const { rows } = await pool.query(
    `SELECT ${USER_COLUMNS}, password_hash FROM users WHERE lower(email) = lower($1)`,
    [input.email.trim()],
  );
  const row = rows[0];
  const valid = await verifyPassword(input.password, row?.password_hash ?? null);
  if (!row || !valid) throw problem('unauthorized', { detail: 'The email or password is wrong.' });
  const user = toUser(row);
  assertMaySignIn(config, user);
  const session = await createSession(pool, row.id, from);
  return { user, session };
}

export async function getUser(pool: pg.Pool, userId: string): Promise<User> {
  const { rows } = await pool.query(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1`, [userId]);
  if (!rows[0]) throw problem('unauthorized', { detail: 'The account no longer exists.' });
  return toUser(rows[0]);
}

export async function signOut(store: IdentityStore, sessionId: string): Promise<void> {
  await changeIdentity(store, (client) => client.query('DELETE FROM sessions WHERE id = $1', [sessionId]));
}

/** Replaces the password, drops reset links, ends sessions (all but `keepSessionId`) and runs the revokers. */
async function replacePassword(client: pg.PoolClient, change: Omit<CredentialChange, 'client'>, newPassword: string): Promise<void> {
  const hash = await hashPassword(newPassword);
  await client.query('UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1', [change.userId, hash]);
  await client.query('DELETE FROM password_resets WHERE user_id = $1', [change.userId]);
  // magic links (those to the account and those that would create one for its address) and
  // pending social-account links sign in as the account: they go with the old password
  await client.query(
    'DELETE FROM magic_links WHERE user_id = $1 OR lower(email) = (SELECT lower(email) FROM users WHERE id = $1)',
    [change.userId],
  );
  await client.query('DELETE FROM social_sign_in_states WHERE link_user_id = $1', [change.userId]);
  await client.query('DELETE FROM sessions WHERE user_id = $1 AND id IS DISTINCT FROM $2', [change.userId, change.keepSessionId ?? null]);
  await runCredentialRevokers({ ...change, client });
}

export async function changePassword(store: IdentityStore, session: SignedInSession, input: { currentPassword: string; newPassword: string }): Promise<void> {
  const { rows } = await store.pool.query('SELECT password_hash FROM users WHERE id = $1', [session.userId]);
  if (!(await verifyPassword(input.currentPassword, rows[0]?.password_hash ?? null))) {
    throw problem('validation_failed', { detail: 'The current password is wrong.', errors: [{ field: 'current_password', code: 'invalid_value', message: 'The current password is wrong.' }] });
  }
  await changeIdentity(store, (client) =>
    replacePassword(client, { userId: session.userId, reason: 'password_changed', keepSessionId: session.sessionId }, input.newPassword));
}

/** A first password for an account created without one; otherwise 409 password_already_set. */
export async function setPassword(store: IdentityStore, session: SignedInSession, newPassword: string): Promise<void> {
  await changeIdentity(store, async (client) => {
    const { rows } = await client.query('SELECT password_hash FROM users WHERE id = $1 FOR UPDATE', [session.userId]);
    if (rows[0]?.password_hash) throw problem('password_already_set', { detail: 'This account has a password: use change-password.' });
    await replacePassword(client, { userId: session.userId, reason: 'password_set', keepSessionId: session.sessionId }, newPassword);
  });
}

/** A new reset link for the address (replacing older ones), with the account's stored address; null when no account has it. */
async function issuePasswordReset(pool: pg.Pool, email: string): Promise<{ token: string; email: string } | null> {
  const { rows } = await pool.query('SELECT id, email FROM users WHERE lower(email) = lower($1)', [email.trim()]);
  if (!rows[0]) return null;
  const token = randomBytes(32).toString('base64url');
  await pool.query('DELETE FROM password_resets WHERE user_id = $1', [rows[0].id]);
  await pool.query('INSERT INTO password_resets (token_hash, user_id, expires_at) VALUES ($1, $2, $3)', [
    sha256Hex(token), rows[0].id, new Date(Date.now() + RESET_TTL_MS),
  ]);
  return { token, email: rows[0].email };
}

/**
 * Issues a reset link and delivers it: with mail enabled by e-mail, sent after the request is
 * answered (a failure is logged with its code and server reply, never the SMTP settings); without
 * mail, a development or test instance appends it to its reset-link file (mailer.resetLinkFile),
 * production keeps it undelivered. The token never leaves through the answer, and nothing about
 * the outcome is returned: the caller answers the same for every address.
 */
export async function requestPasswordResetByEmail(pool: pg.Pool, email: string, mailer: Mailer, log: Logger): Promise<void> {
  const issued = await issuePasswordReset(pool, email);
  if (!issued) return;
  const link = `${mailer.baseUrl}/api/auth/reset-password?token=${encodeURIComponent(issued.token)}`;
  if (!mailer.enabled) {
    if (mailer.resetLinkFile) await writeResetLink(mailer.resetLinkFile, issued.email, link);
    return;
  }
  const message = templated(
    issued.email,
    'Reset your password',
    [
      `Someone asked to reset the password of the account ${issued.email} on ${mailer.baseUrl}.`,
      'To choose a new password, send the token of the link below with your new password to POST /api/auth/reset-password (or open it in your platform client). The link works once, within an hour; using it signs out every session of the account.',
    ],
    { url: link, label: 'Reset the password' },
    'If you did not ask for this, ignore this message: your password stays as it is.',
  );
  void mailer.send(message).catch((err: { code?: string; message?: string }) => {
    log.warn('password-reset e-mail not sent', { code: err.code, reason: err.message });
  });
}

/** Sets a new password from a reset token and ends every session of the account. */
export async function resetPassword(store: IdentityStore, input: { token: string; newPassword: string }): Promise<void> {
  await changeIdentity(store, async (client) => {
    const { rows } = await client.query(
      'DELETE FROM password_resets WHERE token_hash = $1 RETURNING user_id, expires_at',
      [sha256Hex(input.token)],
    );
    const row = rows[0];
    if (!row || row.expires_at.getTime() <= Date.now()) {
      throw problem('invalid_request', { param: 'token', detail: 'The reset link is invalid, used or expired.' });
    }
    await replacePassword(client, { userId: row.user_id, reason: 'password_reset' }, input.newPassword);
  });
}
