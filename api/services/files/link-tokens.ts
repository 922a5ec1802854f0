// The signed links of files: a staged upload's single-use URL and a durable file's preview URL.
// A token is the id it opens and its expiry, sealed with the instance key.
import type { SecretBox } from '../../../lib/crypto.ts';
import { problem } from '../../../lib/problem.ts';

export type TokenKind = 'upload' | 'preview';

/** A link token: the id it opens and its expiry, sealed with the instance key (unforgeable, opaque). */
export function sealToken(secrets: SecretBox, kind: TokenKind, id: string, expiresAt: Date): string {
  return secrets.seal(JSON.stringify({ k: kind, id, exp: expiresAt.getTime() }));
}

/** The id a token opens; unauthorized when forged or for another kind, `expired` past its expiry. */
export function openToken(secrets: SecretBox, kind: TokenKind, token: unknown): { id: string; expired: boolean } {
  let claims: { k?: unknown; id?: unknown; exp?: unknown };
  try {
    if (typeof token !== 'string' || token.length > 2000) throw new Error('no token');
    claims = JSON.parse(secrets.open(token));
  } catch {
    throw problem('unauthorized', { detail: 'The link is not valid.' });
  }
  if (claims.k !== kind || typeof claims.id !== 'string' || typeof claims.exp !== 'number') throw problem('unauthorized', { detail: 'The link is not valid.' });
  return { id: claims.id, expired: claims.exp <= Date.now() };
}
