// The scopes an OAuth client may be registered for, by level. Instance and organization clients
// act for a platform user: the OpenID scopes plus the spec's scope catalog. Space clients act for
// one end-user in one space: only the allowlist below can be granted to their tokens.
import { KEY_SCOPES, SPACE_TOKEN_SCOPES } from '../../../lib/permissions.ts';
import type { OAuthClientLevel } from './store.ts';

/** OpenID Connect scopes (offline_access asks for a refresh token). */
export const OPENID_SCOPES = ['openid', 'profile', 'email', 'offline_access'] as const;

/**
 * What a space-level client (an integrator's end-users) may be granted: identity, and reading and
 * running the space's agents for that end-user. Nothing that configures the space or its members.
 */
export const SPACE_CLIENT_SCOPES: readonly string[] = [
  ...OPENID_SCOPES, ...SPACE_TOKEN_SCOPES,
];

const USER_CLIENT_SCOPES: readonly string[] = [...OPENID_SCOPES, ...KEY_SCOPES];
const SPACE_SET = new Set(SPACE_CLIENT_SCOPES);
const USER_SET = new Set(USER_CLIENT_SCOPES);

/** Every scope a client of this level may be registered for. */
export function scopesForLevel(level: OAuthClientLevel): readonly string[] {
  return level === 'space' ? SPACE_CLIENT_SCOPES : USER_CLIENT_SCOPES;
}

export function isScopeForLevel(level: OAuthClientLevel, scope: string): boolean {
  return (level === 'space' ? SPACE_SET : USER_SET).has(scope);
}
