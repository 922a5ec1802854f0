// The oidc module: the instance as an OAuth 2.1 / OpenID Connect provider (oidc-provider) mounted
// at the spec's paths, its sign-in, consent and device pages, and the bearer strategy that accepts
// its ES256 access tokens on the API and the MCP endpoint; the client routes (clients/). The provider is built on the first
// request that needs it (the issuer is PUBLIC_URL, or the address the request reached).
import type { KeyObject } from 'node:crypto';
import type Provider from 'oidc-provider';
import { problem } from '../../../lib/problem.ts';
import type { ApiModule, ModuleHandler } from '../../app.ts';
import type { AppDeps } from '../../deps.ts';
import type { Request, Response } from '../../http.ts';
import { createInteractionHandler } from './interaction.ts';
import { loadSigningKeys, rotateSigningKey, type SigningKey } from './keys.ts';
import { applyCsp, deviceTooManyPage } from './pages.ts';
import { buildProvider, PATHS, type BuiltProvider } from './provider.ts';
import { oauthClientRoutes } from './clients/index.ts';
import { AS_METADATA, DISCOVERY, METHODS, providerOperations } from './operations.ts';
import { deviceCodeWait, oauthRateLimit, type OAuthLimitedEndpoint } from './rate-limit.ts';
import { createOidcVerifier } from './verifier.ts';

export { oauthRateLimit, OAUTH_RATE_LIMITS } from './rate-limit.ts';

/** The oidc modules of this process (one per app), told to reload after a rotation made here. */
const loaded = new Set<() => void>();

/**
 * Rotates the signing key (see keys.ts) and makes every oidc module of this process sign with the
 * new one at once. Other processes notice within KEY_CHECK_MS of their next OAuth request (and
 * their verifiers on the first token carrying the new kid). Operators: bin/oidc-rotate-key.ts.
 */
export async function rotateOidcSigningKey(deps: Pick<AppDeps, 'database' | 'secrets'>): Promise<string> {
  const kid = await rotateSigningKey(deps.database.pool, deps.secrets);
  for (const reload of loaded) reload();
  return kid;
}

/** The auth library's client-management endpoints: never served, whoever asks. */
const LIBRARY_CLIENT_ENDPOINTS = new Set(['create-client', 'get-client', 'get-clients', 'update-client', 'delete-client', 'client/rotate-secret']);
const LIMITED: Record<string, OAuthLimitedEndpoint> = {
  [PATHS.authorization]: 'authorize',
  [PATHS.token]: 'token',
  [PATHS.introspection]: 'introspect',
  [PATHS.revocation]: 'revoke',
};
const OAUTH_PREFIX = '/api/auth/oauth2/';
const MAX_ISSUERS = 8;
/** how often a process looks for a key rotated elsewhere, at most (only when OAuth endpoints are used) */
export const KEY_CHECK_MS = 60_000;

/** The methods a provider path answers, or null when the provider serves no such path. */
function methodsOf(path: string): string[] | null {
  if (METHODS[path]) return METHODS[path];
  const tail = (prefix: string) => path.startsWith(`${prefix}/`) && /^[A-Za-z0-9_-]{1,64}$/.test(path.slice(prefix.length + 1));
  if (tail(PATHS.interaction)) return ['GET', 'POST'];
  // where an authorization resumes after sign-in and consent
  if (tail(PATHS.authorization)) return ['GET'];
  // where the device flow resumes after sign-in and consent
  if (tail(PATHS.code_verification)) return ['GET'];
  return null;
}

function wrongMethod(res: Response, methods: string[]): void {
  const body = JSON.stringify({ error: 'invalid_request', error_description: `This endpoint answers ${methods.join(' and ')} only.` });
  res.statusCode = 405;
  res.setHeader('Allow', [...methods, ...(methods.includes('GET') ? ['HEAD'] : []), 'OPTIONS'].join(', '));
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Length', String(Buffer.byteLength(body)));
  res.end(body);
}

export interface OidcModule extends ApiModule {
  /** rotates the signing key and makes this process sign with the new one */
  rotateKeys(): Promise<string>;
  /** drops the keys and providers held in memory: the next request reloads them */
  reloadKeys(): void;
}

export async function loadOidc(deps: AppDeps): Promise<OidcModule> {
  const pool = deps.database.pool;
  const providers = new Map<string, Promise<BuiltProvider>>();
  let keyRing: Promise<Map<string, KeyObject>> | null = null;
  let lastReload = 0;
  let lastKeyCheck = Date.now();

  /** A rotation made by another process: rebuild the providers when the active key changed. */
  async function checkActiveKey(built: BuiltProvider): Promise<void> {
    if (Date.now() - lastKeyCheck < KEY_CHECK_MS) return;
    lastKeyCheck = Date.now();
    const { rows } = await pool.query('SELECT kid FROM oidc_signing_keys WHERE retired_at IS NULL ORDER BY created_at DESC LIMIT 1');
    const active = built.keys.find((k) => !k.retired)?.kid;
    if (rows[0] && rows[0].kid !== active) reloadKeys();
  }

  /** PUBLIC_URL; without it, the address this request reached (the socket's, not the Host header). */
  function issuerFor(req: Request): string {
    if (deps.config.PUBLIC_URL) return deps.config.PUBLIC_URL.replace(/\/+$/, '');
    const addr = req.socket.localAddress ?? deps.config.HOST;
    const host = addr.startsWith('::ffff:') ? addr.slice(7) : addr.includes(':') ? `[${addr}]` : addr;
    return `http://${host}:${req.socket.localPort ?? deps.config.PORT}`;
  }

  const keysToMap = (keys: SigningKey[]) => new Map(keys.map((k) => [k.kid, k.publicKey]));

  async function publicKey(kid: string): Promise<KeyObject | undefined> {
    keyRing ??= loadSigningKeys(pool, deps.secrets).then(keysToMap);
    let ring = await keyRing.catch((err) => {
      keyRing = null;
      throw err;
    });
    if (ring.has(kid)) return ring.get(kid);
    // an unknown kid: another instance may have rotated; look again, at most once every 10 s
    if (Date.now() - lastReload < 10_000) return undefined;
    lastReload = Date.now();
    keyRing = loadSigningKeys(pool, deps.secrets).then(keysToMap);
    ring = await keyRing;
    return ring.get(kid);
  }

  function providerFor(issuer: string): Promise<BuiltProvider> {
    let p = providers.get(issuer);
    if (!p) {
      if (providers.size >= MAX_ISSUERS) throw problem('not_found', { detail: 'Set PUBLIC_URL: this instance answers on too many addresses.' });
      p = buildProvider(deps, issuer);
      p.catch(() => providers.delete(issuer));
      providers.set(issuer, p);
    }
    return p;
  }

  const verifier = createOidcVerifier(deps, { publicKey, issuerFor });

  const handler: ModuleHandler = async (req: Request, res: Response) => {
    const path = req.path;
    const isDiscovery = path === DISCOVERY || path === AS_METADATA;
    const isDevice = path === PATHS.code_verification || path.startsWith(`${PATHS.code_verification}/`);
    const isOauth = path.startsWith(OAUTH_PREFIX);
    if (!isDiscovery && !isDevice && !isOauth && path !== PATHS.jwks) return false;
    if (isOauth) {
      const rest = path.slice(OAUTH_PREFIX.length);
      if (LIBRARY_CLIENT_ENDPOINTS.has(rest)) throw problem('unauthorized', { detail: 'Clients are managed at /api/oauth/clients; this endpoint is not served.' });
      // dynamic registration is a route of its own (POST): another method reaches this handler
      if (path === PATHS.registration) {
        if (req.method === 'OPTIONS') return false;
        wrongMethod(res, ['POST']);
        return true;
      }
    }
    // the provider answers a method it does not serve with a plain-text 404: say what is served,
    // the OAuth way (RFC 6749 body)
    const methods = methodsOf(path);
    if (!methods) return false;
    if (req.method !== 'OPTIONS' && !methods.includes(req.method === 'HEAD' ? 'GET' : req.method!)) {
      wrongMethod(res, methods);
      return true;
    }
    if (path === PATHS.code_verification && req.method === 'POST') {
      const wait = await deviceCodeWait(deps, req);
      if (wait) {
        applyCsp(req, res);
        res.statusCode = 429;
        res.setHeader('Retry-After', String(wait));
        res.setHeader('Content-Type', 'text/html; charset=utf-8');
        res.end(deviceTooManyPage({ req }, wait));
        return true;
      }
    }
    const limited = LIMITED[path];
    if (limited && (await oauthRateLimit(deps, req, res, limited))) return true;

    const issuer = issuerFor(req);
    await checkActiveKey(await providerFor(issuer));
    const built = await providerFor(issuer);
    if (path.startsWith(`${PATHS.interaction}/`)) {
      const uid = path.slice(PATHS.interaction.length + 1);
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(uid)) return false;
      await interaction(req, res, uid);
      return true;
    }
    applyCsp(req, res);
    // RFC 8414 metadata is the OpenID discovery document (same issuer, same endpoints)
    if (path === AS_METADATA) req.url = DISCOVERY + req.originalUrl.slice(path.length);
    await built.callback(req, res);
    return true;
  };

  const interaction = createInteractionHandler(deps, async (req) => (await providerFor(issuerFor(req))).provider);

  function reloadKeys(): void {
    providers.clear();
    keyRing = null;
    lastReload = 0;
  }

  loaded.add(reloadKeys);

  return {
    name: 'oidc',
    routes: oauthClientRoutes(deps),
    operations: providerOperations(),
    handler: () => handler,
    oidcVerifier: verifier,
    rotateKeys: () => rotateOidcSigningKey(deps),
    reloadKeys,
  };
}

export type { Provider };
