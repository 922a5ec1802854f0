// Rules every client registration obeys, whichever way it arrives (the client routes, dynamic
// registration, a client ID metadata document). Each check answers the reason a value is refused,
// or null; callers turn reasons into their own error format (a problem document, or an RFC 7591
// error body).
import { hasForbiddenText } from '../../../lib/clean-text.ts';
import { isScopeForLevel } from './scopes.ts';
import type { OAuthClientLevel } from './store.ts';

export const GRANT_TYPES = ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'] as const;
export type GrantType = (typeof GRANT_TYPES)[number];
const GRANT_SET = new Set<string>(GRANT_TYPES);

export const CLIENT_LIMITS = {
  maxRedirectUris: 10,
  maxUriLength: 2048,
  maxNameLength: 200,
  maxScopes: 100,
} as const;

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
const CONTROL_OR_SPACE = /[\s\u0000-\u001f\u007f]/;

/**
 * Why a redirect URI is refused, or null: https, or http on a loopback host only (native apps,
 * RFC 8252); absolute, no fragment, no user info, no whitespace.
 */
export function redirectUriProblem(raw: unknown): string | null {
  if (typeof raw !== 'string' || raw.length === 0) return 'must be a non-empty string';
  if (raw.length > CLIENT_LIMITS.maxUriLength) return `must be at most ${CLIENT_LIMITS.maxUriLength} characters`;
  if (CONTROL_OR_SPACE.test(raw) || hasForbiddenText(raw)) return 'must not contain whitespace or control characters';
  if (raw.includes('#')) return 'must not contain a fragment';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.username || url.password) return 'must not carry user information';
  if (url.protocol === 'https:') return url.hostname ? null : 'must name a host';
  if (url.protocol === 'http:') return LOOPBACK_HOSTS.has(url.hostname) ? null : 'http is allowed only on a loopback host (127.0.0.1, [::1], localhost)';
  return 'must use https (or http on a loopback host)';
}

/** Why a list of redirect URIs is refused (first bad entry), or null. */
export function redirectUrisProblem(list: unknown, field: string): { field: string; reason: string } | null {
  if (!Array.isArray(list)) return { field, reason: 'must be an array of URIs' };
  if (list.length > CLIENT_LIMITS.maxRedirectUris) return { field, reason: `at most ${CLIENT_LIMITS.maxRedirectUris} URIs` };
  for (let i = 0; i < list.length; i++) {
    const reason = redirectUriProblem(list[i]);
    if (reason) return { field: `${field}[${i}]`, reason };
  }
  return null;
}

/** Why a set of grant types is refused, or null. A refresh token only follows another grant. */
export function grantTypesProblem(list: unknown, redirectUris: readonly string[]): string | null {
  if (!Array.isArray(list) || list.length === 0) return 'must be a non-empty array';
  if (list.length > GRANT_TYPES.length * 2) return 'too many entries';
  for (const g of list) if (typeof g !== 'string' || !GRANT_SET.has(g)) return `unsupported grant type (supported: ${GRANT_TYPES.join(', ')})`;
  if (list.every((g) => g === 'refresh_token')) return 'refresh_token needs authorization_code or the device code grant';
  if (list.includes('authorization_code') && redirectUris.length === 0) return 'authorization_code needs at least one redirect URI';
  return null;
}

/** Why a scope list is refused for this level, or null. */
export function scopesProblem(level: OAuthClientLevel, list: unknown): string | null {
  if (!Array.isArray(list) || list.length === 0) return 'must be a non-empty array';
  if (list.length > CLIENT_LIMITS.maxScopes) return `at most ${CLIENT_LIMITS.maxScopes} scopes`;
  for (const s of list) {
    if (typeof s !== 'string' || !isScopeForLevel(level, s)) {
      const shown = typeof s === 'string' ? JSON.stringify(s.slice(0, 64)) : 'a non-string';
      return level === 'space' ? `${shown} cannot be granted to a space-level client` : `${shown} is not a catalog scope`;
    }
  }
  return null;
}

/** Why a client name is refused, or null. */
export function nameProblem(raw: unknown): string | null {
  if (typeof raw !== 'string' || raw.trim().length === 0) return 'must be a non-empty string';
  if (raw.length > CLIENT_LIMITS.maxNameLength) return `must be at most ${CLIENT_LIMITS.maxNameLength} characters`;
  if (hasForbiddenText(raw) || /[\u0000-\u001f\u007f]/.test(raw)) return 'must not contain control characters';
  return null;
}

/** Unique entries, first occurrence order kept. */
export function unique<T>(list: readonly T[]): T[] {
  return [...new Set(list)];
}
