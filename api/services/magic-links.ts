// Magic links: a sign-in link e-mailed to an address. The request answers the same whether or not
// an account has the address (no enumeration). A link works once, for AUTH_MAGIC_LINK_TTL_SECONDS;
// a newer link replaces older ones. For an address without an account the link creates one, if
// AUTH_ALLOWED_SIGNUP_DOMAINS lets it (checked when asked and again when followed). Following a link
// proves the address, so the account counts as verified. A password change or reset drops the
// account's pending links (accounts.ts).
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { Config } from '../../lib/config.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import type { Logger } from '../../lib/log.ts';
import { templated, type Mailer } from '../../lib/mail.ts';
import { problem, ProblemError } from '../../lib/problem.ts';
import { assertSignupAllowed, insertPasswordlessUser, toUser, USER_COLUMNS, type AccountStore, type ClientInfo, type User } from './accounts.ts';
import { changeIdentity } from './identity-change.ts';
import { createSession, type NewSession } from './sessions.ts';

/** Whether this instance sends magic links: enabled in the settings and mail configured. */
export function magicLinksOffered(config: Config, mailer: Mailer): boolean {
  return config.AUTH_MAGIC_LINKS === 'enabled' && mailer.enabled;
}

/**
 * Issues a link for the address and e-mails it. Nothing is sent for an address that may not sign
 * up; the caller's answer is the same either way. Sending happens after the answer (failures are
 * logged), so its timing tells nothing either.
 */
export async function requestMagicLink(pool: pg.Pool, config: Config, mailer: Mailer, log: Logger, email: string): Promise<void> {
  if (!magicLinksOffered(config, mailer)) return;
  const address = email.trim();
  const { rows } = await pool.query('SELECT id, email FROM users WHERE lower(email) = lower($1)', [address]);
  const account = rows[0] as { id: string; email: string } | undefined;
  if (!account) {
    try {
      await assertSignupAllowed(pool, config, address);
    } catch (err) {
      if (err instanceof ProblemError) return;
      throw err;
    }
  }
  const token = randomBytes(32).toString('base64url');
  const to = account?.email ?? address;
  await pool.query('DELETE FROM magic_links WHERE lower(email) = lower($1) OR expires_at < now()', [to]);
  await pool.query('INSERT INTO magic_links (token_hash, email, user_id, expires_at) VALUES ($1, $2, $3, $4)', [
    sha256Hex(token), to, account?.id ?? null, new Date(Date.now() + config.AUTH_MAGIC_LINK_TTL_SECONDS * 1000),
  ]);
  const minutes = Math.max(1, Math.round(config.AUTH_MAGIC_LINK_TTL_SECONDS / 60));
  const message = templated(
    to,
    'Your sign-in link',
    [
      `Someone asked to sign in to ${mailer.baseUrl} with the address ${to}.`,
      `To sign in, send the token of the link below to POST /api/auth/magic-link/verify (or open it in your platform client). The link works once, within ${minutes} minute${minutes === 1 ? '' : 's'}.`,
    ],
    { url: `${mailer.baseUrl}/api/auth/magic-link/verify?token=${encodeURIComponent(token)}`, label: 'Sign in' },
    'If you did not ask for this, ignore this message: nobody can sign in without the link.',
  );
  void mailer.send(message).catch((err: { code?: string; message?: string }) => {
    log.warn('magic-link e-mail not sent', { code: err.code, reason: err.message });
  });
}

/** Uses a link: signs in to its account, creating the account first when the link was for a newcomer. */
export async function signInWithMagicLink(store: AccountStore, token: string, from: ClientInfo): Promise<{ user: User; session: NewSession; created: boolean }> {
  return changeIdentity(store, async (client) => {
    const { rows } = await client.query('DELETE FROM magic_links WHERE token_hash = $1 RETURNING email, user_id, expires_at', [sha256Hex(token)]);
    const link = rows[0] as { email: string; user_id: string | null; expires_at: Date } | undefined;
    if (!link || link.expires_at.getTime() <= Date.now()) {
      throw problem('invalid_request', { param: 'token', detail: 'The sign-in link is invalid, used or expired.' });
    }
    // the account the link names, or the one that now holds the address (signed up meanwhile)
    const found = await client.query(
      `UPDATE users SET email_verified_at = coalesce(email_verified_at, now()), updated_at = now()
        WHERE ${link.user_id ? 'id = $2 AND ' : ''}lower(email) = lower($1) RETURNING ${USER_COLUMNS}`,
      link.user_id ? [link.email, link.user_id] : [link.email],
    );
    if (found.rows[0]) {
      const user = toUser(found.rows[0]);
      return { user, session: await createSession(client, user.id, from), created: false };
    }
    if (link.user_id) throw problem('invalid_request', { param: 'token', detail: 'The sign-in link is invalid, used or expired.' });
    await assertSignupAllowed(client, store.config, link.email);
    const user = await insertPasswordlessUser(client, { email: link.email, name: link.email.slice(0, link.email.lastIndexOf('@')), verified: true });
    return { user, session: await createSession(client, user.id, from), created: true };
  });
}
