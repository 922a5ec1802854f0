// E-mail verification: every new account gets a link proving its address. Following it (POST
// /api/auth/verify-email with the token) marks the address verified; it does not sign in, so a
// link that leaks is no credential. While AUTH_EMAIL_VERIFICATION is required a password sign-in is
// refused until then. A magic link or a provider's verified claim also proves the address.
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { sha256Hex } from '../../lib/crypto.ts';
import type { Logger } from '../../lib/log.ts';
import { templated, type Mailer } from '../../lib/mail.ts';
import { problem } from '../../lib/problem.ts';
import { toUser, USER_COLUMNS, type User } from './accounts.ts';
import type { Queryable } from './sessions.ts';

const VERIFICATION_TTL_MS = 24 * 60 * 60 * 1000;

/** A new verification link for the account's address, replacing older ones. */
export async function issueEmailVerification(db: Queryable, user: { id: string; email: string }): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  await db.query('DELETE FROM email_verifications WHERE user_id = $1 OR expires_at < now()', [user.id]);
  await db.query('INSERT INTO email_verifications (token_hash, user_id, email, expires_at) VALUES ($1, $2, $3, $4)', [
    sha256Hex(token), user.id, user.email, new Date(Date.now() + VERIFICATION_TTL_MS),
  ]);
  return token;
}

/**
 * E-mails the link when mail is enabled. Sent after the request is answered: a failure is logged
 * (code and server reply), not returned.
 */
export function mailVerificationLink(mailer: Mailer, log: Logger, email: string, token: string): void {
  if (!mailer.enabled) return;
  const message = templated(
    email,
    'Verify your e-mail address',
    [
      `An account was created with the address ${email} on ${mailer.baseUrl}.`,
      'To confirm that this address is yours, send the token of the link below to POST /api/auth/verify-email (or open it in your platform client). The link works once, within 24 hours.',
    ],
    { url: `${mailer.baseUrl}/api/auth/verify-email?token=${encodeURIComponent(token)}`, label: 'Verify the address' },
    'If you did not create this account, ignore this message.',
  );
  void mailer.send(message).catch((err: { code?: string; message?: string }) => {
    log.warn('verification e-mail not sent', { code: err.code, reason: err.message });
  });
}

/** Marks the address verified; the token works once, and only for the address it was sent to. */
export async function verifyEmail(pool: pg.Pool, token: string): Promise<User> {
  const { rows } = await pool.query(
    `WITH used AS (DELETE FROM email_verifications WHERE token_hash = $1 RETURNING user_id, email, expires_at)
     UPDATE users u SET email_verified_at = coalesce(u.email_verified_at, now()), updated_at = now()
       FROM used WHERE u.id = used.user_id AND used.expires_at > now() AND lower(u.email) = lower(used.email)
     RETURNING ${USER_COLUMNS.split(', ').map((c) => `u.${c}`).join(', ')}`,
    [sha256Hex(token)],
  );
  if (!rows[0]) throw problem('invalid_request', { param: 'token', detail: 'The verification link is invalid, used or expired.' });
  return toUser(rows[0]);
}

/** A fresh link for an unverified account with this address; nothing (and the same answer) otherwise. */
export async function resendEmailVerification(pool: pg.Pool, email: string): Promise<{ email: string; token: string } | null> {
  const { rows } = await pool.query('SELECT id, email FROM users WHERE lower(email) = lower($1) AND email_verified_at IS NULL', [email.trim()]);
  if (!rows[0]) return null;
  return { email: rows[0].email, token: await issueEmailVerification(pool, rows[0]) };
}
