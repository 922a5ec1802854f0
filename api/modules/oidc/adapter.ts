// The provider's storage: every model it keeps (sessions, interactions, grants, authorization and
// device codes, refresh tokens, ...) is a row of oidc_payloads; OAuth clients are the first-party
// ones (first-party.ts) or read through findOAuthClient, and never written here.
//
// Contract with the credential-change revoker (password change or reset): every row that belongs
// to a person carries account_id = that person's user id (usr_...) or end-user id (eu_...), so
//   DELETE FROM oidc_payloads WHERE account_id = $1
// followed by NOTIFY auth_changed (sent by changeIdentity) ends every grant, code, refresh token,
// device code and provider session of the account; access tokens issued from a deleted grant are
// refused by the bearer verifier from the next request on (it checks that the grant still exists).
import type pg from 'pg';
import type { SecretBox } from '../../../lib/crypto.ts';
import { AUTH_CHANGED_CHANNEL } from '../../services/auth-cache.ts';
import { findOAuthClient, type OAuthClientRecord } from '../../services/oauth-clients/store.ts';
import { firstPartyClient } from './first-party.ts';
import { OIDC_SCOPES, resourceScopes } from './scopes.ts';
import { inTransaction } from '../../../db/transaction.ts';

type Payload = Record<string, any>;

/** The provider's client metadata for a record (public clients authenticate with none and PKCE). */
export function clientMetadata(c: OAuthClientRecord): Payload {
  const grantTypes = c.grantTypes.filter((g) => ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'].includes(g));
  const meta: Payload = {
    client_id: c.clientId,
    client_name: c.name,
    redirect_uris: c.redirectUris,
    post_logout_redirect_uris: c.postLogoutRedirectUris,
    grant_types: grantTypes,
    response_types: grantTypes.includes('authorization_code') ? ['code'] : [],
    token_endpoint_auth_method: c.clientSecret ? c.tokenEndpointAuthMethod : 'none',
    scope: OIDC_SCOPES.join(' '),
    // resource scopes are not the provider's scope values: they travel on the resource server info
    platform_scopes: resourceScopes(c),
    platform_level: c.level,
    platform_allow_signup: c.allowSignup,
  };
  if (c.orgId) meta.platform_org_id = c.orgId;
  if (c.spaceId) meta.platform_space_id = c.spaceId;
  if (c.clientSecret) meta.client_secret = c.clientSecret;
  return meta;
}

function accountOf(payload: Payload): string | null {
  const id = payload.accountId ?? payload.session?.accountId ?? payload.result?.login?.accountId;
  return typeof id === 'string' ? id : null;
}

export function adapterFactory(deps: { pool: pg.Pool; secrets: SecretBox; authCache: { clear(): void } }) {
  const { pool } = deps;
  return class PostgresAdapter {
    name: string;
    constructor(name: string) {
      this.name = name;
    }

    async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
      if (this.name === 'Client') return;
      const expiresAt = expiresIn ? new Date(Date.now() + expiresIn * 1000) : null;
      await pool.query(
        `INSERT INTO oidc_payloads (model, id, payload, grant_id, user_code, uid, account_id, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (model, id) DO UPDATE SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id,
           user_code = EXCLUDED.user_code, uid = EXCLUDED.uid, account_id = EXCLUDED.account_id, expires_at = EXCLUDED.expires_at`,
        [this.name, id, payload, payload.grantId ?? null, payload.userCode ?? null, payload.uid ?? null, accountOf(payload), expiresAt],
      );
    }

    private async one(where: string, value: string): Promise<Payload | undefined> {
      const { rows } = await pool.query(
        `SELECT payload, consumed_at FROM oidc_payloads
          WHERE model = $1 AND ${where} = $2 AND (expires_at IS NULL OR expires_at > now()) LIMIT 1`,
        [this.name, value],
      );
      const row = rows[0];
      if (!row) return undefined;
      return row.consumed_at ? { ...row.payload, consumed: Math.floor(row.consumed_at.getTime() / 1000) } : row.payload;
    }

    async find(id: string): Promise<Payload | undefined> {
      if (this.name === 'Client') {
        const record = firstPartyClient(id) ?? await findOAuthClient(deps, id);
        return record ? clientMetadata(record) : undefined;
      }
      return this.one('id', id);
    }

    findByUserCode(userCode: string) {
      return this.one('user_code', userCode);
    }

    findByUid(uid: string) {
      return this.one('uid', uid);
    }

    async consume(id: string): Promise<void> {
      await pool.query('UPDATE oidc_payloads SET consumed_at = now() WHERE model = $1 AND id = $2', [this.name, id]);
    }

    async destroy(id: string): Promise<void> {
      if (this.name === 'Grant') {
        // a grant's end is an identity change: every instance drops the access tokens it had vouched for
        try {
          await inTransaction(pool, async (client) => {
            await client.query('DELETE FROM oidc_payloads WHERE model = $1 AND id = $2', [this.name, id]);
            await client.query(`NOTIFY ${AUTH_CHANGED_CHANNEL}`);
          });
        } finally {
          // this instance drops them before the revocation is answered, not when the notice comes back
          deps.authCache.clear();
        }
        return;
      }
      await pool.query('DELETE FROM oidc_payloads WHERE model = $1 AND id = $2', [this.name, id]);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await pool.query('DELETE FROM oidc_payloads WHERE model = $1 AND grant_id = $2', [this.name, grantId]);
    }
  };
}
