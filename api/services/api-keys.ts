// API keys: pinned to the team space they are created in, carrying a subset of the key scopes
// their creator holds there. Only the SHA-256 of a key and its display prefix are stored; the key
// itself is shown once. Revocation takes effect at once on every instance.
import type { SpaceScope } from '../../db/tenant.ts';
import { newApiKey } from '../../lib/api-key-format.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { newId } from '../../lib/ids.ts';
import { KEY_SCOPES, isKeyScope, isPermission, type KeyScope, type Permission } from '../../lib/permissions.ts';
import { problem } from '../../lib/problem.ts';
import { changeIdentity, type IdentityStore } from './identity-change.ts';

export interface ApiKey {
  id: string;
  name: string;
  keyPrefix: string;
  scopes: string[];
  spaceId: string;
  created_by: string;
  expiresAt: string | null;
  createdAt: string;
}

export interface CreatedApiKey {
  id: string;
  key: string;
  keyPrefix: string;
  name: string;
  scopes: string[];
  spaceId: string;
  expiresAt: string | null;
  createdAt: string;
}

export type ApiKeyScope = SpaceScope & { authCache: IdentityStore['authCache'] };

/** The key scopes a person holding `held` can put on a key, in catalog order. */
export function grantableScopes(held: ReadonlySet<Permission>): KeyScope[] {
  return KEY_SCOPES.filter((s) => held.has(s));
}

/**
 * Omitted or empty: every grantable scope. Otherwise the requested scopes the creator holds; the
 * others are dropped silently. A name that is not a key scope (unknown, or person-only such as
 * api-keys:create) is refused.
 */
export function resolveKeyScopes(requested: string[] | undefined, held: ReadonlySet<Permission>): KeyScope[] {
  const grantable = grantableScopes(held);
  if (!requested || requested.length === 0) return grantable;
  for (const s of requested) {
    if (!isKeyScope(s)) {
      const why = isPermission(s) ? 'no API key can carry it' : 'no such scope';
      throw problem('invalid_request', { param: 'scopes', detail: `Scope "${s}" cannot be granted: ${why}.` });
    }
  }
  const wanted = new Set(requested);
  return grantable.filter((s) => wanted.has(s));
}

export async function createApiKey(
  scope: ApiKeyScope,
  held: ReadonlySet<Permission>,
  input: { name: string; scopes?: string[]; expiresAt?: string | null },
): Promise<CreatedApiKey> {
  const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
  if (expiresAt && expiresAt.getTime() <= Date.now()) {
    throw problem('validation_failed', { detail: 'expiresAt must be in the future.', errors: [{ field: 'expiresAt', code: 'out_of_range', message: 'Must be a date-time in the future, or null.' }] });
  }
  const scopes = resolveKeyScopes(input.scopes, held);
  const { key, prefix } = newApiKey();
  const id = newId('key');
  const { rows } = await changeIdentity(scope, (client) => client.query(
    `INSERT INTO api_keys (id, org_id, space_id, created_by, name, key_hash, key_prefix, scopes, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING created_at`,
    [id, scope.orgId, scope.spaceId, scope.actor.userId, input.name.trim(), sha256Hex(key), prefix, scopes, expiresAt],
  ));
  return {
    id, key, keyPrefix: prefix, name: input.name.trim(), scopes, spaceId: scope.spaceId,
    expiresAt: expiresAt?.toISOString() ?? null, createdAt: rows[0].created_at.toISOString(),
  };
}

/** The space's keys that still work (not revoked, not expired); never their secrets. */
export async function listApiKeys(scope: SpaceScope): Promise<ApiKey[]> {
  const { rows } = await scope.pool.query(
    `SELECT id, name, key_prefix, scopes, space_id, created_by, expires_at, created_at FROM api_keys
      WHERE org_id = $1 AND space_id = $2 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())
      ORDER BY created_at DESC, id`,
    [scope.orgId, scope.spaceId],
  );
  return rows.map((r) => ({
    id: r.id, name: r.name, keyPrefix: r.key_prefix, scopes: r.scopes, spaceId: r.space_id, created_by: r.created_by,
    expiresAt: r.expires_at?.toISOString() ?? null, createdAt: r.created_at.toISOString(),
  }));
}

/** Revokes a key of the space: its creator may always; others need api-keys:delete. */
export async function revokeApiKey(scope: ApiKeyScope, held: ReadonlySet<Permission>, keyId: string): Promise<void> {
  await changeIdentity(scope, async (client) => {
    const { rows } = await client.query(
      'SELECT created_by FROM api_keys WHERE id = $1 AND org_id = $2 AND space_id = $3 AND revoked_at IS NULL FOR UPDATE',
      [keyId, scope.orgId, scope.spaceId],
    );
    if (!rows[0]) throw problem('not_found', { detail: 'No such API key in this space.' });
    if (rows[0].created_by !== scope.actor.userId && !held.has('api-keys:delete')) {
      throw problem('forbidden', { detail: 'Revoking another person\'s key needs the api-keys:delete permission.' });
    }
    await client.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [keyId]);
  });
}
