// The session cookie: <prefix>.session_token, HttpOnly, SameSite=Lax, Secure in production.
// Sessions last 7 days and are extended at most once a day while used.
import type { Response } from '../http.ts';
import type { Config } from '../../lib/config.ts';
import type { AppDeps } from '../deps.ts';
import type { SessionFacts } from './access.ts';

export const SESSION_TTL_MS = 7 * 24 * 60 * 60 * 1000;
const EXTEND_EVERY_MS = 24 * 60 * 60 * 1000;

export function sessionCookieName(config: Config): string {
  return `${config.SESSION_COOKIE_PREFIX}.session_token`;
}

export function sessionCookie(config: Config, token: string, expiresAt: Date): string {
  const parts = [
    `${sessionCookieName(config)}=${token}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Lax',
    `Expires=${expiresAt.toUTCString()}`,
    `Max-Age=${Math.max(0, Math.floor((expiresAt.getTime() - Date.now()) / 1000))}`,
  ];
  if (config.NODE_ENV === 'production') parts.push('Secure');
  return parts.join('; ');
}

export function clearedSessionCookie(config: Config): string {
  return `${sessionCookieName(config)}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0`;
}

export async function extendSessionIfDue(deps: AppDeps, res: Response, facts: SessionFacts, token: string, _name: string): Promise<void> {
  if (Date.now() - facts.extendedAt.getTime() < EXTEND_EVERY_MS) return;
  const expiresAt = new Date(Date.now() + SESSION_TTL_MS);
  const { rowCount } = await deps.database.pool.query(
    `UPDATE sessions SET expires_at = $2, extended_at = now() WHERE id = $1 AND extended_at < now() - interval '1 day'`,
    [facts.sessionId, expiresAt],
  );
  facts.extendedAt = new Date();
  facts.expiresAt = expiresAt;
  if (rowCount) res.appendHeader('Set-Cookie', sessionCookie(deps.config, token, expiresAt));
}
