// The OpenID provider (oidc-provider) configured for this platform: issuer = PUBLIC_URL (or the
// address the request reached), endpoints at the spec's paths, authorization code with PKCE (S256)
// and the device flow, ES256 JWT access tokens bound to one resource (RFC 8707): the API
// (<issuer>/api) or one organization's MCP endpoint (<issuer>/api/mcp/o/{org}).
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type Provider from 'oidc-provider';
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import { loadOidcProvider } from './library.ts';
import type pg from 'pg';
import type { AppDeps } from '../../deps.ts';
import { adapterFactory } from './adapter.ts';
import { loadSigningKeys, type SigningKey } from './keys.ts';
import { deviceConfirmPage, deviceInputPage, deviceSuccessPage, errorPage } from './pages.ts';
import { OIDC_SCOPES } from './scopes.ts';
import { KEY_SCOPES } from '../../../lib/permissions.ts';
import { bearerOf, introspectionOf, ownAccessToken } from './own-tokens.ts';
import { countWrongDeviceCode } from './rate-limit.ts';
import type { Request } from '../../http.ts';

export const PATHS = {
  authorization: '/api/auth/oauth2/authorize',
  token: '/api/auth/oauth2/token',
  userinfo: '/api/auth/oauth2/userinfo',
  introspection: '/api/auth/oauth2/introspect',
  revocation: '/api/auth/oauth2/revoke',
  end_session: '/api/auth/oauth2/end-session',
  jwks: '/api/auth/jwks',
  device_authorization: '/api/auth/device/code',
  code_verification: '/api/auth/device',
  registration: '/api/auth/oauth2/register',
  pushed_authorization_request: '/api/auth/oauth2/par',
  interaction: '/api/auth/oauth2/interaction',
} as const;

export const ACCESS_TOKEN_TTL_SECONDS = 3600;
const MCP_RESOURCE = /^\/api\/mcp\/o\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export const apiResource = (issuer: string) => `${issuer}/api`;

/** The organization an MCP resource indicator names, or null when it names none of this issuer. */
export function mcpResourceOrg(issuer: string, resource: string): string | null {
  if (!resource.startsWith(`${issuer}/`)) return null;
  const m = MCP_RESOURCE.exec(resource.slice(issuer.length));
  return m ? m[1].toLowerCase() : null;
}

/** An account fits a client when its realm is the client's: people for instance and org clients, end-users of its space for space clients. */
export async function accountFitsClient(pool: pg.Pool, accountId: string, client: Record<string, unknown>): Promise<boolean> {
  const level = client.platform_level;
  if (level === 'space') {
    if (!accountId.startsWith('eu_')) return false;
    const { rowCount } = await pool.query('SELECT 1 FROM end_users WHERE id = $1 AND space_id = $2', [accountId, client.platform_space_id]);
    return Boolean(rowCount);
  }
  if (!accountId.startsWith('usr_')) return false;
  if (level === 'org') {
    const { rowCount } = await pool.query('SELECT 1 FROM org_members WHERE user_id = $1 AND org_id = $2', [accountId, client.platform_org_id]);
    return Boolean(rowCount);
  }
  return true;
}

/** The cookie-signing keys: made once, kept sealed in oidc_payloads so that every instance shares them. */
async function cookieKeys(deps: AppDeps): Promise<string[]> {
  const pool = deps.database.pool;
  const fresh = deps.secrets.seal(randomBytes(32).toString('base64url'));
  await pool.query(
    `INSERT INTO oidc_payloads (model, id, payload) VALUES ('CookieKeys', 'current', $1) ON CONFLICT (model, id) DO NOTHING`,
    [{ sealed: fresh }],
  );
  const { rows } = await pool.query(`SELECT payload FROM oidc_payloads WHERE model = 'CookieKeys' AND id = 'current'`);
  return [deps.secrets.open(rows[0].payload.sealed)];
}

async function findAccount(pool: pg.Pool, id: string) {
  if (id.startsWith('eu_')) {
    const { rows } = await pool.query('SELECT id, external_id, name FROM end_users WHERE id = $1', [id]);
    const r = rows[0];
    if (!r) return undefined;
    return { accountId: id, claims: async () => ({ sub: id, name: r.name, ...(String(r.external_id).includes('@') ? { email: r.external_id } : {}) }) };
  }
  const { rows } = await pool.query('SELECT id, email, name FROM users WHERE id = $1', [id]);
  const r = rows[0];
  if (!r) return undefined;
  return { accountId: id, claims: async () => ({ sub: id, email: r.email, name: r.name }) };
}

export interface BuiltProvider {
  provider: Provider;
  /** the provider's request listener */
  callback: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  issuer: string;
  keys: SigningKey[];
}

export async function buildProvider(deps: AppDeps, issuer: string): Promise<BuiltProvider> {
  const pool = deps.database.pool;
  // loaded on first use: an app that never serves OAuth never pays for the library
  const { default: ProviderClass, errors, interactionPolicy } = await loadOidcProvider();
  const keys = await loadSigningKeys(pool, deps.secrets);
  const api = apiResource(issuer);

  const policy = interactionPolicy.base();
  // a provider session of another realm (an end-user's, or a person outside the client's
  // organization) does not sign in to this client: ask again
  policy.get('login')!.checks.add(new interactionPolicy.Check('account_realm', 'the signed-in account does not fit this client', async (ctx) => {
    const accountId = ctx.oidc.session?.accountId;
    if (!accountId || !ctx.oidc.client) return interactionPolicy.Check.NO_NEED_TO_PROMPT;
    return (await accountFitsClient(pool, accountId, ctx.oidc.client as unknown as Record<string, unknown>))
      ? interactionPolicy.Check.NO_NEED_TO_PROMPT
      : interactionPolicy.Check.REQUEST_PROMPT;
  }));

  const resourceScopesOf = (client: unknown): string[] => {
    const scopes = (client as { platform_scopes?: unknown }).platform_scopes;
    return Array.isArray(scopes) ? scopes.filter((s): s is string => typeof s === 'string') : [];
  };

  const configuration: Configuration = {
    adapter: adapterFactory({ pool, secrets: deps.secrets, authCache: deps.authCache }) as any,
    findAccount: (_ctx, id) => findAccount(pool, id),
    jwks: { keys: keys.map((k) => k.jwk) as any },
    cookies: { keys: await cookieKeys(deps) },
    routes: {
      authorization: PATHS.authorization,
      token: PATHS.token,
      userinfo: PATHS.userinfo,
      introspection: PATHS.introspection,
      revocation: PATHS.revocation,
      end_session: PATHS.end_session,
      jwks: PATHS.jwks,
      device_authorization: PATHS.device_authorization,
      code_verification: PATHS.code_verification,
      pushed_authorization_request: PATHS.pushed_authorization_request,
    },
    scopes: [...OIDC_SCOPES],
    claims: { openid: ['sub'], email: ['email'], profile: ['name'] },
    responseTypes: ['code'],
    pkce: { required: () => true },
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post'],
    clientDefaults: { id_token_signed_response_alg: 'ES256', grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'none' },
    enabledJWA: { idTokenSigningAlgValues: ['ES256'], userinfoSigningAlgValues: ['ES256'] },
    extraClientMetadata: { properties: ['platform_scopes', 'platform_level', 'platform_org_id', 'platform_space_id', 'platform_allow_signup'] },
    interactions: { policy, url: (_ctx, interaction) => `${PATHS.interaction}/${interaction.uid}` },
    rotateRefreshToken: true,
    issueRefreshToken: async (_ctx, client, code) => client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access'),
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL_SECONDS,
      AuthorizationCode: 60,
      DeviceCode: 600,
      IdToken: 3600,
      Interaction: 3600,
      Grant: 14 * 24 * 3600,
      RefreshToken: 14 * 24 * 3600,
      Session: 14 * 24 * 3600,
    },
    discovery: { registration_endpoint: `${issuer}${PATHS.registration}` } as any,
    // no feature of this configuration fetches anything; a request that would is refused
    fetch: async () => {
      throw new Error('outbound requests are disabled for the OpenID provider');
    },
    extraTokenClaims: async (ctx, token) => {
      if (token.kind !== 'AccessToken') return undefined;
      const client = (ctx?.oidc?.client ?? await ctx?.oidc?.provider?.Client.find(token.clientId!)) as unknown as Record<string, unknown> | undefined;
      if (!client) return undefined;
      return {
        lvl: client.platform_level,
        ...(client.platform_org_id ? { org: client.platform_org_id } : {}),
        ...(client.platform_space_id ? { spc: client.platform_space_id } : {}),
        gid: token.grantId,
      };
    },
    // a browser gets a page; any other caller the RFC 6749 body
    renderError: async (ctx, out) => {
      if (/\btext\/html\b/.test(ctx.get('accept'))) {
        ctx.type = 'html';
        ctx.body = errorPage(ctx, out.error, out.error_description);
        return;
      }
      ctx.type = 'json';
      ctx.body = { error: String(out.error), error_description: String(out.error_description ?? out.error) };
    },
    features: {
      devInteractions: { enabled: false },
      // the API's verifier checks no DPoP proof: a sender-constrained token would be taken as a
      // plain bearer one there, so none is issued (and discovery does not offer DPoP)
      dPoP: { enabled: false },
      introspection: { enabled: true },
      revocation: { enabled: true },
      userinfo: { enabled: true },
      rpInitiatedLogout: { enabled: false },
      registration: { enabled: false },
      deviceFlow: {
        enabled: true,
        charset: 'base-20',
        mask: '****-****',
        userCodeInputSource: async (ctx, form, _out, err) => {
          if (err && ctx.method === 'POST') await countWrongDeviceCode(deps, ctx.req as Request);
          ctx.body = deviceInputPage(ctx, form, err);
        },
        userCodeConfirmSource: async (ctx, form, client, _info, userCode) => {
          ctx.body = deviceConfirmPage(ctx, form, client.clientName ?? client.clientId, userCode);
        },
        successSource: async (ctx) => {
          ctx.body = deviceSuccessPage(ctx);
        },
      },
      resourceIndicators: {
        enabled: true,
        // no resource named: the API when an API scope is asked for; none (an identity-only,
        // userinfo token) otherwise
        defaultResource: async (ctx: KoaContextWithOIDC, client, oneOf) => {
          if (oneOf) return oneOf;
          const asked = String(ctx.oidc.params?.scope ?? '').split(' ');
          const offered = new Set(resourceScopesOf(client as any));
          return asked.some((s) => offered.has(s)) ? api : undefined as any;
        },
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, resource, client) => {
          const meta = client as unknown as Record<string, unknown>;
          if (resource !== api) {
            const org = mcpResourceOrg(issuer, resource);
            if (!org) throw new errors.InvalidTarget('unknown resource');
            if (meta.platform_level !== 'instance' && meta.platform_org_id !== org) throw new errors.InvalidTarget('this client cannot reach that organization');
          }
          return {
            scope: resourceScopesOf(client as any).join(' '),
            audience: resource,
            accessTokenTTL: ACCESS_TOKEN_TTL_SECONDS,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
  };
  const provider = new ProviderClass(issuer, configuration);
  provider.use(async (ctx, next) => {
    // offline_access is consented to (OpenID Connect Core 11): a request asking for it without
    // prompt=consent would otherwise have it dropped silently, and no refresh token issued
    if (ctx.method === 'GET' && ctx.path === PATHS.authorization) {
      const q = ctx.query as Record<string, unknown>;
      const scopes = typeof q.scope === 'string' ? q.scope.split(' ') : [];
      const prompts = typeof q.prompt === 'string' ? q.prompt.split(' ').filter(Boolean) : [];
      if (scopes.includes('offline_access') && !prompts.includes('consent') && !prompts.includes('none')) {
        ctx.query = { ...q, prompt: [...prompts, 'consent'].join(' ') } as never;
      }
    }
    try {
      await next();
    } catch (err) {
      // oidc-provider 9 answers a device page request that fails before its new session was
      // ever saved (no cookie: a stale form, an unknown resume uid), then throws while saving
      // that session: the answer it set stands, and the empty session is worth nothing
      if (!(err instanceof TypeError && err.message.startsWith('persist can only be called on previously persisted'))) throw err;
    }
    const route = ctx.oidc?.route;
    const body = ctx.body as Record<string, unknown> | undefined;
    if (route === 'discovery' && ctx.status === 200 && body) {
      // the API's scopes too: a client registered with them may ask for them
      body.scopes_supported = [...OIDC_SCOPES, ...KEY_SCOPES];
    } else if (route === 'introspection' && ctx.status === 400 && body?.error === 'unsupported_token_type' && ctx.oidc.client) {
      const t = await ownAccessToken(provider, issuer, keys, String(ctx.oidc.params?.token ?? ''));
      ctx.status = 200;
      ctx.body = introspectionOf(t, issuer, ctx.oidc.client);
    } else if (route === 'userinfo' && ctx.status === 401) {
      const token = bearerOf(ctx.get('authorization'), ctx.oidc.params as Record<string, unknown>);
      const t = token ? await ownAccessToken(provider, issuer, keys, token) : null;
      const grant = t ? await provider.Grant.find(t.gid) : undefined;
      const granted = new Set(String(grant?.getOIDCScope() ?? '').split(' '));
      const account = t && granted.has('openid') ? await findAccount(pool, t.sub) : undefined;
      if (!t || !account) return;
      const claims = (await account.claims()) as Record<string, unknown>;
      ctx.remove('WWW-Authenticate');
      ctx.status = 200;
      ctx.body = {
        sub: t.sub,
        ...(granted.has('email') && claims.email ? { email: claims.email } : {}),
        ...(granted.has('profile') && claims.name ? { name: claims.name } : {}),
      };
    }
  });
  provider.proxy = deps.config.TRUST_PROXY !== 'false' && deps.config.TRUST_PROXY !== '';
  provider.on('server_error', (_ctx, err) => deps.log.error('oidc provider error', { error: String(err) }));
  return { provider, callback: provider.callback() as never, issuer, keys };
}
