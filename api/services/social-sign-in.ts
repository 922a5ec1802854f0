// Social sign-in through the operator's OpenID Connect provider (AUTH_SOCIAL_*): authorization code
// with PKCE (S256), state and nonce; discovery, the token call and the key set are fetched through
// the egress guard; the ID token's signature, issuer, audience, expiry and nonce are verified.
//
// The state is stored hashed with the sealed PKCE verifier and the nonce, works once, for ten
// minutes, and is also bound to the browser that started the flow (a cookie), so a callback link
// cannot sign someone else in. A provider account (issuer + subject) belongs to one platform
// account. A first sign-in links to an existing account only when the provider says the address is
// verified; otherwise it creates an account (AUTH_ALLOWED_SIGNUP_DOMAINS applies). A signed-in user
// may also link the provider's account to theirs; that pending link ends with a password change.
import * as oidc from 'openid-client';
import type { Config } from '../../lib/config.ts';
import { safeEqual, sha256Hex, type SecretBox } from '../../lib/crypto.ts';
import { EgressRefusal, guardedFetch, type EgressOptions } from '../../lib/egress.ts';
import type { Logger } from '../../lib/log.ts';
import { publicBaseUrl } from '../../lib/mail.ts';
import { problem, ProblemError } from '../../lib/problem.ts';
import { assertMaySignIn, assertSignupAllowed, insertPasswordlessUser, toUser, USER_COLUMNS, type AccountStore, type ClientInfo, type User } from './accounts.ts';
import { changeIdentity } from './identity-change.ts';
import { createSession, type NewSession } from './sessions.ts';

const STATE_TTL_MS = 10 * 60 * 1000;
export const CALLBACK_PATH = '/api/auth/callback/social';

export interface SocialDeps extends AccountStore {
  config: Config;
  secrets: SecretBox;
  egress: EgressOptions;
  log: Logger;
}

export interface SocialProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  name: string;
}

export function socialProviderOf(config: Config): SocialProvider | null {
  if (!config.AUTH_SOCIAL_ISSUER_URL || !config.AUTH_SOCIAL_CLIENT_ID || !config.AUTH_SOCIAL_CLIENT_SECRET) return null;
  return { issuer: config.AUTH_SOCIAL_ISSUER_URL, clientId: config.AUTH_SOCIAL_CLIENT_ID, clientSecret: config.AUTH_SOCIAL_CLIENT_SECRET, name: config.AUTH_SOCIAL_NAME };
}

function requireProvider(config: Config): SocialProvider {
  const provider = socialProviderOf(config);
  if (!provider) throw problem('not_found', { detail: 'Social sign-in is not configured on this instance.' });
  return provider;
}

/** Marks a failure to reach the provider (refused by the egress guard, or the network). */
class ProviderUnreachable extends Error {}

function guardedOidcFetch(egress: EgressOptions) {
  return async (url: string, options: { method: string; headers: Record<string, string>; body?: unknown; signal?: AbortSignal }): Promise<Response> => {
    const body = options.body === undefined || options.body === null ? undefined : typeof options.body === 'string' ? options.body : String(options.body);
    try {
      return await guardedFetch(url, { method: options.method, headers: options.headers, body, signal: options.signal, timeoutMs: 10_000 }, egress);
    } catch (err) {
      throw new ProviderUnreachable(err instanceof EgressRefusal ? `The egress guard refused the provider: ${err.message}` : 'The provider could not be reached.');
    }
  };
}

const discovered = new WeakMap<Config, Promise<oidc.Configuration>>();

/** The provider's metadata, discovered once per configuration (again after a failure). */
function providerConfiguration(deps: SocialDeps, provider: SocialProvider): Promise<oidc.Configuration> {
  let pending = discovered.get(deps.config);
  if (!pending) {
    const issuer = new URL(provider.issuer);
    pending = oidc.discovery(issuer, provider.clientId, { client_secret: provider.clientSecret }, oidc.ClientSecretBasic(provider.clientSecret), {
      [oidc.customFetch]: guardedOidcFetch(deps.egress),
      // plain http only where the config allows it (not in production): a provider on loopback in tests
      execute: issuer.protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
    }).then((configuration) => {
      // verify the ID token's signature against the provider's key set, not only its claims
      oidc.enableNonRepudiationChecks(configuration);
      return configuration;
    });
    pending.catch(() => discovered.delete(deps.config));
    discovered.set(deps.config, pending);
  }
  return pending;
}

function causes(err: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = err; e && chain.length < 5; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}

/** Provider trouble as a problem: unreachable is 502 bad_gateway, an answer that fails a check is 401. */
function providerProblem(err: unknown, log: Logger): ProblemError {
  if (err instanceof ProblemError) return err;
  const unreachable = causes(err).find((e) => e instanceof ProviderUnreachable) as ProviderUnreachable | undefined;
  if (unreachable) return problem('bad_gateway', { detail: `Social sign-in: ${unreachable.message}` });
  const e = err as { code?: string; message?: string; error?: string };
  log.warn('social sign-in refused', { code: e.code, error: e.error, reason: e.message?.slice(0, 200) });
  return problem('unauthorized', { detail: 'The identity provider\'s answer could not be verified.' });
}

const RETURN_TO = /^\/(?![/\\])[^\s\\]*$/;

/** Only a path on this platform: never another site (no open redirect). */
export function isSafeReturnTo(path: string): boolean {
  return path.length <= 500 && RETURN_TO.test(path);
}

export interface StartedFlow {
  location: string;
  /** set on the browser: the callback must come from it */
  state: string;
}

/** Opens a flow: the provider's authorization URL, with a stored state. */
export async function startSocialSignIn(deps: SocialDeps, opts: { linkUserId?: string; returnTo?: string }): Promise<StartedFlow> {
  const provider = requireProvider(deps.config);
  try {
    const configuration = await providerConfiguration(deps, provider);
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const verifier = oidc.randomPKCECodeVerifier();
    await deps.pool.query(
      'INSERT INTO social_sign_in_states (state_hash, issuer, verifier_sealed, nonce, link_user_id, return_to, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [sha256Hex(state), provider.issuer, deps.secrets.seal(verifier), nonce, opts.linkUserId ?? null, opts.returnTo ?? null, new Date(Date.now() + STATE_TTL_MS)],
    );
    await deps.pool.query('DELETE FROM social_sign_in_states WHERE expires_at < now()');
    const location = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: `${publicBaseUrl(deps.config)}${CALLBACK_PATH}`,
      scope: 'openid email profile',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { location: location.href, state };
  } catch (err) {
    throw providerProblem(err, deps.log);
  }
}

export interface SocialSignInResult {
  user: User;
  session: NewSession;
  returnTo: string | null;
  linked: boolean;
}

const invalidState = () => problem('invalid_request', { param: 'state', detail: 'The sign-in attempt is unknown, used, expired or was started in another browser: start again.' });

/**
 * Completes a flow from the provider's redirect: `query` is the callback's query string,
 * `browserState` the state cookie of the browser that started it.
 */
export async function completeSocialSignIn(deps: SocialDeps, query: URLSearchParams, browserState: string | undefined, from: ClientInfo): Promise<SocialSignInResult> {
  const provider = requireProvider(deps.config);
  const state = query.get('state') ?? '';
  if (!state || !browserState || !safeEqual(sha256Hex(state), sha256Hex(browserState))) throw invalidState();
  const { rows } = await deps.pool.query(
    'DELETE FROM social_sign_in_states WHERE state_hash = $1 RETURNING issuer, verifier_sealed, nonce, link_user_id, return_to, expires_at',
    [sha256Hex(state)],
  );
  const pending = rows[0] as { issuer: string; verifier_sealed: string; nonce: string; link_user_id: string | null; return_to: string | null; expires_at: Date } | undefined;
  if (!pending || pending.expires_at.getTime() <= Date.now() || pending.issuer !== provider.issuer) throw invalidState();
  if (query.get('error')) {
    throw problem('unauthorized', { detail: `The identity provider refused the sign-in (${query.get('error')!.slice(0, 100)}).` });
  }

  let claims: oidc.IDToken;
  try {
    const configuration = await providerConfiguration(deps, provider);
    const callback = new URL(`${publicBaseUrl(deps.config)}${CALLBACK_PATH}`);
    callback.search = query.toString();
    const tokens = await oidc.authorizationCodeGrant(configuration, callback, {
      pkceCodeVerifier: deps.secrets.open(pending.verifier_sealed),
      expectedState: state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    });
    const idClaims = tokens.claims();
    if (!idClaims) throw problem('unauthorized', { detail: 'The identity provider sent no ID token.' });
    claims = idClaims;
  } catch (err) {
    throw providerProblem(err, deps.log);
  }

  const email = typeof claims.email === 'string' && claims.email.length <= 320 && /^[^\s@]+@[^\s@]+$/.test(claims.email) ? claims.email : null;
  const emailVerified = email !== null && claims.email_verified === true;
  const name = typeof claims.name === 'string' && claims.name.trim() ? claims.name.trim().slice(0, 200) : null;

  const result = await changeIdentity(deps, async (client) => {
    const linkedRows = await client.query(
      `SELECT ${USER_COLUMNS.split(', ').map((c) => `u.${c}`).join(', ')} FROM social_accounts sa JOIN users u ON u.id = sa.user_id WHERE sa.issuer = $1 AND sa.subject = $2`,
      [provider.issuer, claims.sub],
    );
    const linkedUser = linkedRows.rows[0] ? toUser(linkedRows.rows[0]) : null;
    const link = async (userId: string) => {
      // a concurrent first sign-in of the same provider account may have linked it meanwhile
      const inserted = await client.query(
        'INSERT INTO social_accounts (issuer, subject, user_id, email) VALUES ($1, $2, $3, $4) ON CONFLICT (issuer, subject) DO NOTHING',
        [provider.issuer, claims.sub, userId, email],
      );
      if (inserted.rowCount === 0) throw problem('invalid_request', { param: 'state', detail: 'This sign-in raced another one for the same account: start again.' });
    };

    if (pending.link_user_id) {
      // a signed-in user links the provider's account to theirs
      if (linkedUser && linkedUser.id !== pending.link_user_id) throw problem('forbidden', { detail: `This ${provider.name} account is linked to another account.` });
      const own = await client.query(`SELECT ${USER_COLUMNS} FROM users WHERE id = $1`, [pending.link_user_id]);
      if (!own.rows[0]) throw invalidState();
      if (!linkedUser) await link(pending.link_user_id);
      return { user: toUser(own.rows[0]), linked: true };
    }
    if (linkedUser) return { user: linkedUser, linked: false };

    if (!email) throw problem('forbidden', { detail: `The ${provider.name} account shares no e-mail address: an account cannot be made for it.` });
    const existing = await client.query(`SELECT ${USER_COLUMNS} FROM users WHERE lower(email) = lower($1) FOR UPDATE`, [email]);
    if (existing.rows[0]) {
      if (!emailVerified) {
        throw problem('forbidden', { detail: `An account already has this address, and ${provider.name} does not say it is verified: sign in to that account and link ${provider.name} from there.` });
      }
      const user = toUser(existing.rows[0]);
      await link(user.id);
      if (!user.email_verified) await client.query('UPDATE users SET email_verified_at = now(), updated_at = now() WHERE id = $1', [user.id]);
      return { user: { ...user, email_verified: true }, linked: true };
    }
    await assertSignupAllowed(client, deps.config, email);
    const user = await insertPasswordlessUser(client, { email, name: name ?? email.slice(0, email.lastIndexOf('@')), verified: emailVerified });
    await link(user.id);
    return { user, linked: true };
  });
  assertMaySignIn(deps.config, result.user);
  const session = await createSession(deps.pool, result.user.id, from);
  return { ...result, session, returnTo: pending.return_to };
}

/** The cookie binding a flow to the browser that started it, sent back only to the callback. */
export function socialStateCookieName(config: Config): string {
  return `${config.SESSION_COOKIE_PREFIX}.social_state`;
}

export function socialStateCookie(config: Config, state: string | null): string {
  const parts = [`${socialStateCookieName(config)}=${state ?? ''}`, `Path=${CALLBACK_PATH}`, 'HttpOnly', 'SameSite=Lax', `Max-Age=${state ? STATE_TTL_MS / 1000 : 0}`];
  if (config.NODE_ENV === 'production') parts.push('Secure');
  return parts.join('; ');
}
