// The provider's own JWT access tokens at its introspection and userinfo endpoints. oidc-provider
// keeps no record of a JWT access token, so it refuses to introspect one ("Structured JWT Tokens
// cannot be introspected") and finds none at userinfo. Both are answered here instead, after the
// provider authenticated the client (introspection): the token's signature (a key of this
// issuer), issuer, expiry and grant (still there, same client and account) decide.
import { verify } from 'node:crypto';
import type Provider from 'oidc-provider';
import type { SigningKey } from './keys.ts';

export interface OwnAccessToken {
  sub: string;
  client_id: string;
  gid: string;
  aud: string | string[];
  scope?: string;
  exp: number;
  iat: number;
  jti?: string;
  lvl?: string;
  org?: string;
  spc?: string;
}

function part(s: string): any {
  return JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
}

/** The claims of a live access token this issuer signed (grant still there), or null. */
export async function ownAccessToken(provider: Provider, issuer: string, keys: SigningKey[], token: string): Promise<OwnAccessToken | null> {
  const pieces = token.split('.');
  if (pieces.length !== 3 || token.length > 8192) return null;
  let header: any;
  let payload: any;
  try {
    header = part(pieces[0]);
    payload = part(pieces[1]);
  } catch {
    return null;
  }
  if (header?.alg !== 'ES256' || header.typ !== 'at+jwt' || typeof header.kid !== 'string') return null;
  const key = keys.find((k) => k.kid === header.kid);
  if (!key) return null;
  const signed = verify('sha256', Buffer.from(`${pieces[0]}.${pieces[1]}`), { key: key.publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(pieces[2], 'base64url'));
  if (!signed) return null;
  const now = Math.floor(Date.now() / 1000);
  if (payload.iss !== issuer || typeof payload.exp !== 'number' || payload.exp <= now) return null;
  if (typeof payload.sub !== 'string' || typeof payload.client_id !== 'string' || typeof payload.gid !== 'string') return null;
  // a sender-constrained (DPoP) token is only good with its proof, which these answers do not check
  if (payload.cnf) return null;
  const grant = await provider.Grant.find(payload.gid);
  if (!grant || grant.clientId !== payload.client_id || grant.accountId !== payload.sub) return null;
  return payload as OwnAccessToken;
}

/** RFC 7662 answer for one of the provider's JWT access tokens, as the calling client may see it. */
export function introspectionOf(t: OwnAccessToken | null, issuer: string, caller: { clientId: string; clientAuthMethod: string }): Record<string, unknown> {
  // a public client learns only about its own tokens (oidc-provider's own rule for its tokens)
  if (!t || (caller.clientAuthMethod === 'none' && t.client_id !== caller.clientId)) return { active: false };
  return {
    active: true,
    client_id: t.client_id,
    sub: t.sub,
    aud: t.aud,
    scope: t.scope || undefined,
    exp: t.exp,
    iat: t.iat,
    iss: issuer,
    jti: t.jti,
    token_type: 'Bearer',
    ...(t.lvl ? { lvl: t.lvl } : {}),
    ...(t.org ? { org: t.org } : {}),
    ...(t.spc ? { spc: t.spc } : {}),
  };
}

/** The bearer token of a userinfo request (header, or access_token in a form body). */
export function bearerOf(authorization: string | undefined, params: Record<string, unknown> | undefined): string | null {
  const m = /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(authorization ?? '');
  if (m) return m[1];
  const fromForm = params?.access_token;
  return typeof fromForm === 'string' && fromForm ? fromForm : null;
}
