// Small builders that arrange identity data directly in the database, so a test can start from
// "an org with a member holding a key" in one line. Acting is done through HTTP.
import { randomBytes, randomUUID } from 'node:crypto';
import type pg from 'pg';
import { newApiKey } from '../../lib/api-key-format.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { newId } from '../../lib/ids.ts';
import { KEY_SCOPES, type OrgRole } from '../../lib/permissions.ts';

export interface BuiltOrg {
  orgId: string;
  spaceId: string;
  ownerId: string;
}

export async function aUser(pool: pg.Pool, opts: { email?: string; name?: string } = {}): Promise<{ userId: string; email: string }> {
  const userId = newId('usr');
  const email = opts.email ?? `${userId.toLowerCase()}@example.test`;
  await pool.query('INSERT INTO users (id, email, name) VALUES ($1, $2, $3)', [userId, email, opts.name ?? 'Test User']);
  return { userId, email };
}

/** An organization with its owner and a default team space. */
export async function anOrg(pool: pg.Pool, opts: { name?: string } = {}): Promise<BuiltOrg> {
  const { userId: ownerId } = await aUser(pool);
  const orgId = randomUUID();
  await pool.query('INSERT INTO organizations (id, name, slug) VALUES ($1, $2, $3)', [orgId, opts.name ?? 'Acme', `org-${orgId.slice(0, 8)}`]);
  await pool.query('INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $2, $3)', [orgId, ownerId, 'owner']);
  const spaceId = await aSpace(pool, orgId, { isDefault: true });
  return { orgId, spaceId, ownerId };
}

export async function aSpace(pool: pg.Pool, orgId: string, opts: { name?: string; kind?: 'team' | 'personal'; ownerUserId?: string; isDefault?: boolean } = {}): Promise<string> {
  const spaceId = newId('spc');
  await pool.query('INSERT INTO spaces (id, org_id, name, kind, owner_user_id, is_default) VALUES ($1, $2, $3, $4, $5, $6)', [
    spaceId, orgId, opts.name ?? 'Main', opts.kind ?? 'team', opts.ownerUserId ?? null, opts.isDefault ?? false,
  ]);
  return spaceId;
}

export async function aMember(pool: pg.Pool, orgId: string, role: OrgRole, space?: { spaceId: string; roleKey: string }): Promise<string> {
  const { userId } = await aUser(pool);
  await pool.query('INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $2, $3)', [orgId, userId, role]);
  if (space) await pool.query('INSERT INTO space_members (space_id, user_id, org_id, role_key) VALUES ($1, $2, $3, $4)', [space.spaceId, userId, orgId, space.roleKey]);
  return userId;
}

/** An API key of `userId` pinned to `spaceId`; scopes default to every key scope. */
export async function aKey(pool: pg.Pool, o: { orgId: string; spaceId: string; userId: string; scopes?: string[]; expiresAt?: Date | null }): Promise<{ key: string; keyId: string }> {
  const { key, prefix } = newApiKey();
  const keyId = newId('key');
  await pool.query(
    'INSERT INTO api_keys (id, org_id, space_id, created_by, name, key_hash, key_prefix, scopes, expires_at) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)',
    [keyId, o.orgId, o.spaceId, o.userId, 'test key', sha256Hex(key), prefix, o.scopes ?? [...KEY_SCOPES], o.expiresAt ?? null],
  );
  return { key, keyId };
}

/** A signed-in session of `userId`; returns the Cookie header value. */
export async function aSession(pool: pg.Pool, userId: string, cookiePrefix = 'agent_platform'): Promise<{ cookie: string; sessionId: string }> {
  const token = randomBytes(32).toString('base64url');
  const sessionId = newId('ses');
  await pool.query(`INSERT INTO sessions (id, token_hash, user_id, expires_at) VALUES ($1, $2, $3, now() + interval '7 days')`, [sessionId, sha256Hex(token), userId]);
  return { cookie: `${cookiePrefix}.session_token=${token}`, sessionId };
}

/** An account with a password (scrypt-hashed like sign-up does), for sign-in tests. */
export async function aUserWithPassword(pool: pg.Pool, opts: { email?: string; name?: string; password?: string } = {}): Promise<{ userId: string; email: string; password: string }> {
  const { hashPassword } = await import('../../api/services/passwords.ts');
  const password = opts.password ?? 'correct horse battery staple';
  const { userId, email } = await aUser(pool, opts);
  await pool.query('UPDATE users SET password_hash = $2 WHERE id = $1', [userId, await hashPassword(password)]);
  return { userId, email, password };
}

/** The session cookie (name=value) a response sets, for the next requests. */
export function sessionCookieFrom(headers: Headers, cookiePrefix = 'agent_platform'): string | undefined {
  const name = `${cookiePrefix}.session_token=`;
  const line = headers.getSetCookie().find((c) => c.startsWith(name));
  if (!line) return undefined;
  const pair = line.split(';')[0];
  return pair === name ? undefined : pair;
}
