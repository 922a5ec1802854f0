// Which scopes an OAuth client can be granted. OpenID scopes (identity) are open to every client;
// resource scopes are the platform's key scopes (resource:action) the client was registered with,
// cut to what its level allows: a space-level client acts for an end-user, who can only ever be
// granted the fixed allowlist below.
import { KEY_SCOPES, SPACE_TOKEN_SCOPES } from '../../../lib/permissions.ts';
import type { OAuthClientLevel, OAuthClientRecord } from '../../services/oauth-clients/store.ts';

export const OIDC_SCOPES = ['openid', 'profile', 'email', 'offline_access'] as const;

/** The only resource scopes a space-level (end-user) token can carry. */
export const SPACE_CLIENT_SCOPES = SPACE_TOKEN_SCOPES;

export function levelScopes(level: OAuthClientLevel): readonly string[] {
  return level === 'space' ? SPACE_CLIENT_SCOPES : KEY_SCOPES;
}

/** The resource scopes a client may be granted (its registered scopes within its level's). */
export function resourceScopes(c: Pick<OAuthClientRecord, 'level' | 'scopes'>): string[] {
  const registered = new Set(c.scopes);
  return levelScopes(c.level).filter((s) => registered.has(s));
}
