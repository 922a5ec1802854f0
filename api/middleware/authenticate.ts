// Authentication and tenant context, in the spec's order: OIDC bearer, API key, session cookie;
// then the organization (X-Org-Id or the key's binding), permissions and the space (X-Space-Id
// or the key's pin). One database round trip at most, none when the credential is cached.
import type { Request, Response } from '../http.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { isWellFormedApiKey } from '../../lib/api-key-format.ts';
import { problem } from '../../lib/problem.ts';
import { describeNeed, needMet, withinCeiling, type Permission } from '../../lib/permissions.ts';
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

function forbiddenFor(def: RouteDef<any, any, any>) {
  return problem('forbidden', { detail: `This operation needs ${describeNeed(def.permission!)}.` });
}

/**
 * THE authority rule, for every credential kind: what the person holds here (their organization
 * and space roles; for an end-user token, the space allowlist) cut to the credential's ceiling
 * (principal.ceiling: the scopes a key or token was granted; none for a session), checked against
 * what the route declares before its handler runs. Handlers may narrow this set, never widen it.
 */
export function authorize(req: Request, def: RouteDef<any, any, any>, held: Iterable<Permission>): void {
  const principal = req.ctx.principal!;
  const effective = withinCeiling(held, principal.ceiling);
  req.ctx.permissions = effective;
  const need = def.permission;
  if (need === undefined) throw problem('forbidden', { detail: 'This operation declares no permission.' });
  if (principal.oauthLevel === 'space' && need === 'signed-in') throw problem('forbidden', { detail: 'End-user tokens cannot call platform routes outside the space allowlist.' });
  if (def.authority === 'resource') {
    if (principal.ceiling && !needMet(need, principal.ceiling)) throw forbiddenFor(def);
    return;
  }
  if (!needMet(need, effective)) throw forbiddenFor(def);
}

/**
 * Routes that carry their organization in the path (/api/orgs/{orgId}/...) resolve the role there
 * (reachOrg, which cuts it to the same ceiling): here the need is checked against the ceiling, so
 * a delegated credential never reaches a handler whose need it was not granted.
 */
export function authorizeOutsideTenant(req: Request, def: RouteDef<any, any, any>): void {
  const principal = req.ctx.principal!;
  req.ctx.permissions = new Set();
  const need = def.permission;
  if (need === undefined) throw problem('forbidden', { detail: 'This operation declares no permission.' });
  if (principal.oauthLevel === 'space') throw problem('forbidden', { detail: 'End-user tokens cannot call platform routes outside the space allowlist.' });
  if (principal.ceiling && !needMet(need, principal.ceiling)) throw forbiddenFor(def);
}

/** A context value named anywhere in the request (path, header, query, body) against the credential's binding. */
function contradicts(bound: string | undefined, named: unknown): boolean {
  return bound !== undefined && typeof named === 'string' && named !== '' && named.toLowerCase() !== bound.toLowerCase();
}

/**
 * A credential bound to an organization (API keys, organization- and space-level tokens) or to a
 * space (API keys, end-user tokens) is refused, 403, on any request that names another one: path
 * parameters, X-Org-Id / X-Space-Id, the orgId / spaceId query (SSE, including ?token=), and the
 * top-level orgId / spaceId of a JSON body (pass the parsed body once it is read).
 */
export function refuseOtherTenant(req: Request, body?: unknown): void {
  const p = req.ctx.principal;
  if (!p || (p.boundOrgId === undefined && p.boundSpaceId === undefined)) return;
  const refuse = (param: string, what: string) => problem('forbidden', { param, detail: `This credential is bound to another ${what}.` });
  const q = req.query as Record<string, unknown>;
  if (body === undefined) {
    for (const name of ['orgId', 'org']) if (contradicts(p.boundOrgId, req.params[name])) throw refuse(name, 'organization');
    if (contradicts(p.boundOrgId, req.headers['x-org-id'])) throw refuse('X-Org-Id', 'organization');
    if (contradicts(p.boundOrgId, q.orgId)) throw refuse('orgId', 'organization');
    if (contradicts(p.boundSpaceId, req.params.spaceId)) throw refuse('spaceId', 'space');
    if (contradicts(p.boundSpaceId, req.headers['x-space-id'])) throw refuse('X-Space-Id', 'space');
    if (contradicts(p.boundSpaceId, q.spaceId)) throw refuse('spaceId', 'space');
    return;
  }
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    const b = body as Record<string, unknown>;
    if (contradicts(p.boundOrgId, b.orgId)) throw refuse('orgId', 'organization');
    if (contradicts(p.boundSpaceId, b.spaceId)) throw refuse('spaceId', 'space');
  }
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
      ceiling: new Set(facts.scopes),
    };
    if (headerValue(req, 'x-view-as')) throw problem('view_as_unsupported', { param: 'X-View-As', detail: 'Role preview is not available with an API key.' });
    if (sse && req.query.view_as !== undefined) throw problem('view_as_unsupported', { param: 'view_as', detail: 'Role preview is not available with an API key.' });
    const spaceHeader = headerValue(req, 'x-space-id');
    if (spaceHeader && spaceHeader !== facts.spaceId) {
      throw problem('forbidden', { param: 'X-Space-Id', detail: 'This API key is pinned to another space.' });
    }
    req.ctx.org = { id: facts.orgId!, role: facts.orgRole, apiVersion: facts.orgApiVersion };
    req.ctx.space = { id: facts.spaceId!, kind: facts.spaceKind ?? 'team' };
    authorize(req, def, computePermissions(facts, facts.createdBy).permissions);
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
      authorizeOutsideTenant(req, def);
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
    authorize(req, def, permissions);
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
