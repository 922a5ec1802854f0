// OAuth 2 authorization code with PKCE (S256) and state against the integration's provider, and
// refresh before expiry. A refresh the provider refuses with invalid_grant flags the connection
// needs_reconnection (OAUTH_REFRESH_REVOKED). Token calls go through the egress guard, and through
// the organization's default proxy (`via`) when it has one.
import { createHash, randomBytes } from 'node:crypto';
import type { IntegrationAuth } from '../../../lib/afps/manifest-types.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import type { EgressOptions } from '../../../lib/egress.ts';
import { problem } from '../../../lib/problem.ts';
import type { Queryable } from '../packages/store.ts';
import { flagNeedsReconnection, openCredentials, sealCredentials, type ConnectionRow } from './connections.ts';
import { literalHosts } from './context.ts';
import { outbound, type ProxyRoute } from './outbound.ts';

/** Tokens this close to expiry are refreshed before use. */
export const REFRESH_MARGIN_MS = 5 * 60 * 1000;
const TOKEN_TIMEOUT_MS = 15_000;

export interface OAuthClient {
  client_id: string;
  client_secret?: string;
}

export interface TokenSet {
  credentials: Record<string, string>;
  scopes: string[] | undefined;
  expiresAt: Date | null;
  accountId: string | null;
  /** the token endpoint's answer as parsed (identity_claims read it) */
  answer: Record<string, unknown>;
}

/** Every secret a token answer carries: none may name the connection's account. */
export function tokenSecrets(tokens: Pick<TokenSet, 'credentials' | 'answer'>): string[] {
  const idToken = typeof tokens.answer.id_token === 'string' ? [tokens.answer.id_token] : [];
  return [...Object.values(tokens.credentials), ...idToken];
}

export function newPkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export function authorizationUrl(auth: IntegrationAuth, client: OAuthClient, o: { redirectUri: string; state: string; challenge: string; scopes: string[] }): string {
  const url = new URL(auth.oauth2!.authorization_url);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', client.client_id);
  url.searchParams.set('redirect_uri', o.redirectUri);
  url.searchParams.set('state', o.state);
  url.searchParams.set('code_challenge', o.challenge);
  url.searchParams.set('code_challenge_method', 'S256');
  if (o.scopes.length) url.searchParams.set('scope', o.scopes.join(' '));
  return url.toString();
}

function tokenEgress(auth: IntegrationAuth, egress: EgressOptions): EgressOptions {
  const tokenHost = new URL(auth.oauth2!.token_url).hostname.replace(/^\[|\]$/g, '');
  return { ...egress, authorizedHosts: [...literalHosts(auth), tokenHost] };
}

function identityOf(idToken: unknown): string | null {
  if (typeof idToken !== 'string') return null;
  try {
    const payload = JSON.parse(Buffer.from(idToken.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub?: unknown; email?: unknown };
    if (typeof payload.email === 'string' && payload.email) return payload.email;
    return typeof payload.sub === 'string' && payload.sub ? payload.sub : null;
  } catch {
    return null;
  }
}

interface TokenCall {
  answer: Record<string, unknown> | null;
  status: number;
}

async function tokenRequest(auth: IntegrationAuth, client: OAuthClient, form: Record<string, string>, egress: EgressOptions, via: ProxyRoute | null): Promise<TokenCall> {
  const body = new URLSearchParams({ ...form, client_id: client.client_id });
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
  if (client.client_secret) {
    headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`).toString('base64')}`;
  }
  const host = new URL(auth.oauth2!.token_url).host;
  const res = await outbound(auth.oauth2!.token_url, {
    method: 'POST', headers, body: body.toString(), timeoutMs: TOKEN_TIMEOUT_MS, maxBytes: 256 * 1024,
    onTimeout: () => problem('timeout', { detail: `The token endpoint at ${host} did not answer within ${TOKEN_TIMEOUT_MS / 1000} s.` }),
    via,
  }, tokenEgress(auth, egress));
  let answer: Record<string, unknown> | null = null;
  try {
    const parsed = JSON.parse(res.body.toString('utf8'));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) answer = parsed as Record<string, unknown>;
  } catch { /* not JSON: judged by status below */ }
  return { answer, status: res.status };
}

function tokenSet(answer: Record<string, unknown>, previous: Record<string, string> = {}): TokenSet {
  if (typeof answer.access_token !== 'string' || answer.access_token === '') {
    throw problem('bad_gateway', { detail: 'The token endpoint answered without an access_token.' });
  }
  const credentials: Record<string, string> = { access_token: answer.access_token };
  const refresh = typeof answer.refresh_token === 'string' ? answer.refresh_token : previous.refresh_token;
  if (refresh) credentials.refresh_token = refresh;
  if (typeof answer.token_type === 'string') credentials.token_type = answer.token_type;
  const expiresIn = Number(answer.expires_in);
  return {
    credentials,
    scopes: typeof answer.scope === 'string' ? answer.scope.split(' ').filter(Boolean) : undefined,
    expiresAt: Number.isFinite(expiresIn) && expiresIn > 0 ? new Date(Date.now() + expiresIn * 1000) : null,
    accountId: identityOf(answer.id_token),
    answer,
  };
}

export async function exchangeCode(auth: IntegrationAuth, client: OAuthClient, o: { code: string; verifier: string; redirectUri: string }, egress: EgressOptions, via: ProxyRoute | null): Promise<TokenSet> {
  const { answer, status } = await tokenRequest(auth, client, { grant_type: 'authorization_code', code: o.code, code_verifier: o.verifier, redirect_uri: o.redirectUri }, egress, via);
  if (status < 200 || status >= 300 || !answer) throw problem('bad_gateway', { detail: `The token endpoint refused the authorization code (status ${status}).` });
  return tokenSet(answer);
}

/**
 * The connection's credentials, refreshed first when its access token expires within the margin.
 * A connection flagged needs_reconnection is 410 OAUTH_CONNECTION_NEEDS_RECONNECTION; a refresh
 * refused with invalid_grant flags it and is 410 OAUTH_REFRESH_REVOKED.
 */
export async function usableCredentials(
  q: Queryable, secrets: SecretBox, egress: EgressOptions, via: ProxyRoute | null, row: ConnectionRow, auth: IntegrationAuth, client: OAuthClient | null,
): Promise<Record<string, string>> {
  if (row.needs_reconnection) throw problem('OAUTH_CONNECTION_NEEDS_RECONNECTION', { detail: `Connection ${row.id} must be reconnected.` });
  const credentials = openCredentials(secrets, row);
  if (auth.type !== 'oauth2' || !row.token_expires_at || row.token_expires_at.getTime() - Date.now() > REFRESH_MARGIN_MS) return credentials;
  if (!credentials.refresh_token || !client) {
    if (row.token_expires_at.getTime() > Date.now()) return credentials;
    await flagNeedsReconnection(q, row.org_id, row.id);
    throw problem('OAUTH_CONNECTION_NEEDS_RECONNECTION', { detail: `The access token of connection ${row.id} expired and cannot be refreshed.` });
  }
  const refreshed = await refreshTokens(q, secrets, egress, via, row, auth, client, credentials);
  if (refreshed === 'revoked') {
    await flagNeedsReconnection(q, row.org_id, row.id);
    throw revokedProblem(row.id);
  }
  return refreshed;
}

export function revokedProblem(connectionId: string) {
  return problem('OAUTH_REFRESH_REVOKED', { detail: `The provider revoked the refresh token of connection ${connectionId}; reconnect it.` });
}

/**
 * One refresh_token grant with the stored refresh token, the answer sealed into the connection.
 * 'revoked' when the provider refused the grant (invalid_grant, 401): the caller flags the
 * connection, outside any transaction that would roll the flag back.
 */
export async function refreshTokens(
  q: Queryable, secrets: SecretBox, egress: EgressOptions, via: ProxyRoute | null, row: ConnectionRow, auth: IntegrationAuth, client: OAuthClient, credentials: Record<string, string>,
): Promise<Record<string, string> | 'revoked'> {
  const { answer, status } = await tokenRequest(auth, client, { grant_type: 'refresh_token', refresh_token: credentials.refresh_token }, egress, via);
  if (status >= 400 && status < 500 && (answer?.error === 'invalid_grant' || status === 401)) return 'revoked';
  if (status < 200 || status >= 300 || !answer) throw problem('bad_gateway', { detail: `The token endpoint answered ${status} to a refresh.` });
  const fresh = tokenSet(answer, credentials);
  await q.query(
    `UPDATE integration_connections SET credentials = $3, token_expires_at = $4, granted_scopes = COALESCE($5, granted_scopes), updated_at = now()
      WHERE org_id = $1 AND id = $2`,
    [row.org_id, row.id, sealCredentials(secrets, fresh.credentials), fresh.expiresAt, fresh.scopes ?? null],
  );
  return fresh.credentials;
}
