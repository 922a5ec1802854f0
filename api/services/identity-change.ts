// Every change of credentials, roles, memberships or keys goes through one transaction that also
// sends NOTIFY auth_changed, so every instance drops its cached credentials; the local cache is
// cleared before the caller answers, so the change takes effect at once here too.
import type pg from 'pg';
import type { OrgScope } from '../../db/tenant.ts';
import { NOTIFY_AUTH_CHANGED } from './auth-cache.ts';
import { inTransaction } from '../../db/transaction.ts';
import { disableSchedulesOfLostCreators } from './schedules/actor.ts';

/** What an identity change needs besides its data: the pool and the local credential cache. */
export interface IdentityStore {
  pool: pg.Pool;
  authCache: { clear(): void };
}

/** An organization scope that may change identity data. */
export interface IdentityOrgScope extends OrgScope {
  authCache: { clear(): void };
}

export function identityScope(scope: OrgScope, authCache: { clear(): void }): IdentityOrgScope {
  return { ...scope, authCache };
}

export { inTransaction };

/** Runs `work` in a transaction that announces an identity change; clears the local cache after commit. */
export async function changeIdentity<T>(store: IdentityStore, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  try {
    return await inTransaction(store.pool, async (client) => {
      const result = await work(client);
      // A schedule runs as its creator: one who can no longer launch in its space disables it.
      if ('orgId' in store && typeof store.orgId === 'string') await disableSchedulesOfLostCreators(client, store.orgId);
      await client.query(NOTIFY_AUTH_CHANGED);
      return result;
    });
  } finally {
    // Also after a failure: a partly applied change (a hook that committed elsewhere) must not linger.
    store.authCache.clear();
  }
}

/** True when `err` is a unique violation, optionally of one named constraint or index. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}
