// Authentication and tenant context, in the spec's order: OIDC bearer, API key, session cookie;
// then the organization (X-Org-Id or the key's binding), permissions and the space (X-Space-Id
// or the key's pin). One database round trip at most, none when the credential is cached.
import type { Request, Response } from '../http.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { isWellFormedApiKey } from '../../lib/api-key-format.ts';
import { problem } from '../../lib/problem.ts';
import type { Permission } from '../../lib/permissions.ts';
import type { Principal } from '../context.ts';
import type { AppDeps } from '../deps.ts';
import type { RouteDef } from '../route.ts';
import { computePermissions, loadApiKeyFacts, loadSessionFacts, type ApiKeyFacts, type SessionFacts } from '../services/access.ts';
import { resolveViewAs } from './view-as.ts';
import { sessionCookieName, extendSessionIfDue } from '../services/session-cookie.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A verifier the oidc module installs for JWT bearer tokens: null when the token is not one of its
 * own; otherwise it sets the principal, organization, space and permissions for the route (or
 * throws the route's problem).
 */
export type OidcVerifier = (token: string, req: Request, def: RouteDef<any, any, any>) => Promise<Principal | null>;

function unauthorized(detail = 'A valid credential is required.') {
  return problem('unauthorized', { detail });
}

function headerValue(req: Request, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function queryValue(req: Request, name: string): string | undefined {
  const v = req.query[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** A cookie's value; one that is not valid percent-encoding is unreadable, so no credential (undefined). */
export function readCookie(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== name) continue;
    try {
      return decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      return undefined;
    }
  }
  return undefined;
}

export function createAuthenticate(deps: AppDeps, oidc: { verify?: OidcVerifier }) {
  const { authCache, database } = deps;
  const cookieName = sessionCookieName(deps.config);

  async function apiKeyFacts(key: string): Promise<ApiKeyFacts | null> {
    const hash = sha256Hex(key);
    return authCache.through(`k:${hash}`, () => loadApiKeyFacts(database.pool, hash));
  }

  async function sessionFacts(token: string, orgId: string | null, spaceId: string | null): Promise<SessionFacts | null> {
    const hash = sha256Hex(token);
    return authCache.through(`s:${hash}:${orgId ?? ''}:${spaceId ?? ''}`, () => loadSessionFacts(database.pool, hash, orgId, spaceId));
  }

  function grant(req: Request, def: RouteDef<any, any, any>, permissions: Set<Permission>) {
    req.ctx.permissions = permissions;
    if (def.permission && !permissions.has(def.permission)) {
      throw problem('forbidden', { detail: `This operation needs the ${def.permission} permission.` });
    }
  }

  async function withApiKey(req: Request, def: RouteDef<any, any, any>, key: string, sse: boolean): Promise<void> {
    if (!isWellFormedApiKey(key)) throw unauthorized('The API key is malformed.');
    const facts = await apiKeyFacts(key);
    const now = Date.now();
    if (!facts || facts.revokedAt || (facts.expiresAt && facts.expiresAt.getTime() <= now) || !facts.orgRole || facts.orgDeleting) {
      throw unauthorized('The API key is invalid, revoked or expired.');
    }
    if (def.sessionOnly) throw problem('forbidden', { detail: 'API keys cannot call this operation.' });
    req.ctx.principal = {
      kind: 'api_key',
      userId: facts.createdBy,
      apiKeyId: facts.keyId,
      boundOrgId: facts.orgId!,
      boundSpaceId: facts.spaceId!,
      keyScopes: facts.scopes,
    };
    if (headerValue(req, 'x-view-as')) throw problem('view_as_unsupported', { param: 'X-View-As', detail: 'Role preview is not available with an API key.' });
    if (sse && req.query.view_as !== undefined) throw problem('view_as_unsupported', { param: 'view_as', detail: 'Role preview is not available with an API key.' });
    const spaceHeader = headerValue(req, 'x-space-id');
    if (spaceHeader && spaceHeader !== facts.spaceId) {
      throw problem('forbidden', { param: 'X-Space-Id', detail: 'This API key is pinned to another space.' });
    }
    req.ctx.org = { id: facts.orgId!, role: facts.orgRole, apiVersion: facts.orgApiVersion };
    req.ctx.space = { id: facts.spaceId!, kind: facts.spaceKind ?? 'team' };
    const held = computePermissions(facts, facts.createdBy).permissions;
    const scopes = new Set(facts.scopes);
    const effective = new Set<Permission>();
    for (const p of held) if (scopes.has(p)) effective.add(p);
    grant(req, def, effective);
  }

  async function withSession(req: Request, res: Response, def: RouteDef<any, any, any>, token: string, sse: boolean): Promise<void> {
    if (headerValue(req, 'service-user')) throw problem('header_not_allowed', { param: 'Service-User', detail: 'Only API keys can act on behalf of an end-user.' });
    const tenant = def.tenant ?? 'org';
    // An EventSource cannot send headers: SSE routes take the context from orgId and spaceId.
    const orgParam = sse ? 'orgId' : 'X-Org-Id';
    const spaceParam = sse ? 'spaceId' : 'X-Space-Id';
    const orgHeader = (sse ? queryValue(req, 'orgId') : undefined) ?? headerValue(req, 'x-org-id');
    if (orgHeader !== undefined && !UUID.test(orgHeader)) throw problem('invalid_request', { param: orgParam, detail: `${orgParam} must be an organization UUID.` });
    const spaceHeader = tenant === 'space' ? ((sse ? queryValue(req, 'spaceId') : undefined) ?? headerValue(req, 'x-space-id')) : undefined;
    const facts = await sessionFacts(token, orgHeader ?? null, spaceHeader ?? null);
    if (!facts || facts.expiresAt.getTime() <= Date.now()) throw unauthorized('The session is missing or expired.');
    if (facts.realm !== 'platform') throw problem('forbidden', { detail: 'End-user sessions cannot call platform routes.' });
    req.ctx.principal = { kind: 'session', userId: facts.userId, email: facts.email, sessionId: facts.sessionId, realm: facts.realm };
    await extendSessionIfDue(deps, res, facts, token, cookieName);
    if (tenant === 'none') {
      grant(req, def, new Set());
      return;
    }
    if (!orgHeader) throw problem('invalid_request', { param: orgParam, detail: `This route needs ${orgParam}.` });
    if (!facts.orgRole || !facts.orgId) throw problem('forbidden', { param: orgParam, detail: 'You are not a member of this organization.' });
    const viewAs = await resolveViewAs(req, facts.orgRole, database.pool, facts.orgId, sse);
    req.ctx.org = { id: facts.orgId, role: viewAs?.orgRole ?? facts.orgRole, apiVersion: facts.orgApiVersion };
    if (facts.orgDeleting && req.method !== 'GET') throw problem('org_deleting');
    const { permissions, spaceMember } = computePermissions(facts, facts.userId, viewAs);
    if (tenant === 'space') {
      if (!spaceHeader) throw problem('invalid_request', { param: spaceParam, detail: `This route needs ${spaceParam}.` });
      if (!spaceMember) throw problem('not_a_space_member', { param: spaceParam, detail: 'You hold no role in this space.' });
      req.ctx.space = { id: facts.spaceId!, kind: facts.spaceKind ?? 'team' };
    }
    grant(req, def, permissions);
  }

  return async function authenticate(req: Request, res: Response, def: RouteDef<any, any, any>): Promise<void> {
    const sse = def.sse === true;
    // On SSE routes role preview is the view_as parameter; the header there is a mistake, said loudly.
    if (sse && req.headers['x-view-as'] !== undefined) {
      throw problem('invalid_view_as', { param: 'X-View-As', detail: 'Streams take role preview as the view_as query parameter, not the X-View-As header.' });
    }
    const authz = req.headers.authorization;
    if (authz !== undefined) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(authz);
      if (!m) throw unauthorized('Authorization must use the Bearer scheme.');
      const bearer = m[1];
      if (bearer.startsWith('apst_')) return withApiKey(req, def, bearer, sse);
      if (oidc.verify && bearer.split('.').length === 3) {
        const principal = await oidc.verify(bearer, req, def);
        if (principal) {
          req.ctx.principal = principal;
          return;
        }
      }
      throw unauthorized('The bearer token is not recognized.');
    }
    // Only SSE routes read a key from the query, and only an API key: an OIDC token there is refused.
    if (sse && typeof req.query.token === 'string') return withApiKey(req, def, req.query.token, true);
    const cookie = readCookie(req, cookieName);
    if (cookie) return withSession(req, res, def, cookie, sse);
    throw unauthorized();
  };
}
