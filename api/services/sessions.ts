// Platform sessions: created on sign-in, sign-up and bootstrap; read directly from the cookie by
// the /api/auth/* routes, which run outside the authentication chain.
import { randomBytes } from 'node:crypto';
import type { Request, Response } from '../http.ts';
import type pg from 'pg';
import { sha256Hex } from '../../lib/crypto.ts';
import { newId } from '../../lib/ids.ts';
import { problem, type ErrorCode } from '../../lib/problem.ts';
import type { AppDeps } from '../deps.ts';
import { readCookie } from '../middleware/authenticate.ts';
import { SESSION_TTL_MS, sessionCookie, sessionCookieName } from './session-cookie.ts';

export type Queryable = pg.Pool | pg.PoolClient;

export interface NewSession {
  sessionId: string;
  token: string;
  expiresAt: Date;
}

export interface SignedInSession {
  sessionId: string;
  userId: string;
  email: string;
  name: string;
  expiresAt: Date;
  /** the account has a password (false for accounts created without one) */
  hasPassword: boolean;
}

export async function createSession(db: Queryable, userId: string, from: { ip?: string; userAgent?: string }): Promise<NewSession> {
  const token = randomBytes(32).toString('base64url');
  const sessionId = newId('ses');
  const expiresAt = new Date(Date.now() + SESSION_TTL_MS);
  await db.query(
    'INSERT INTO sessions (id, token_hash, user_id, realm, expires_at, ip, user_agent) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [sessionId, sha256Hex(token), userId, 'platform', expiresAt, from.ip ?? null, from.userAgent ?? null],
  );
  return { sessionId, token, expiresAt };
}

/** Sets the session cookie on the response. */
export function signIn(deps: AppDeps, res: Response, session: NewSession): void {
  res.appendHeader('Set-Cookie', sessionCookie(deps.config, session.token, session.expiresAt));
}

/** The platform session named by the request's cookie, or null (none, unknown, expired, end-user realm). */
export async function readSignedInSession(req: Request, deps: AppDeps): Promise<SignedInSession | null> {
  const token = readCookie(req, sessionCookieName(deps.config));
  if (!token) return null;
  const { rows } = await deps.database.pool.query(
    `SELECT s.id, s.user_id, s.expires_at, u.email, u.name, (u.password_hash IS NOT NULL) AS has_password
       FROM sessions s JOIN users u ON u.id = s.user_id
      WHERE s.token_hash = $1 AND s.realm = 'platform' AND s.expires_at > now()`,
    [sha256Hex(token)],
  );
  const row = rows[0];
  if (!row) return null;
  return { sessionId: row.id, userId: row.user_id, email: row.email, name: row.name, expiresAt: row.expires_at, hasPassword: row.has_password };
}

/** The signed-in session, or a 401 with `code` (unauthorized unless told otherwise). */
export async function requireSignedInSession(req: Request, deps: AppDeps, code: ErrorCode = 'unauthorized'): Promise<SignedInSession> {
  const session = await readSignedInSession(req, deps);
  if (!session) throw problem(code, { detail: 'Sign in first: no valid session cookie was sent.' });
  return session;
}
