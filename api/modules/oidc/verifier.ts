// The OIDC bearer strategy: ES256 access tokens verified locally with the public keys in memory,
// checked for issuer, expiry and audience (the API, or the one MCP endpoint the route is), then
// resolved through the identity cache the API-key path uses (one query when not cached: is the
// grant still alive, and what does the person hold in the organization and space).
//
// Client levels (the authority rule itself is authenticate.ts's authorize):
// - instance tokens act as the person with X-Org-Id / X-Space-Id like a session, with the person's
//   role cut to the scopes granted at consent (never "the person's whole power");
// - org tokens are bound to the client's organization, the role cut to the token's scopes;
// - space tokens are an end-user's: bound to the client's organization and space, acting as that
//   end-user (their runs and files, as Service-User impersonation does with a key), holding the
//   space allowlist (SPACE_TOKEN_SCOPES) cut to the token's scopes, on space routes only.
// Session-only operations refuse every token.
import { verify as verifySignature, type KeyObject } from 'node:crypto';
import type pg from 'pg';
import { problem } from '../../../lib/problem.ts';
import { SPACE_TOKEN_SCOPES } from '../../../lib/permissions.ts';
import type { Principal } from '../../context.ts';
import type { AppDeps } from '../../deps.ts';
import type { Request } from '../../http.ts';
import type { RouteDef } from '../../route.ts';
import { resolveViewAs } from '../../middleware/view-as.ts';
import { authorize, authorizeOutsideTenant } from '../../middleware/authenticate.ts';
import { computePermissions, MEMBERSHIP_COLUMNS, membership, type MembershipFacts } from '../../services/access.ts';
import { hasDispatchProof } from '../../services/mcp-dispatch-proof.ts';
import { apiResource, mcpResourceOrg } from './provider.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MCP_ROUTE = '/api/mcp/o/{org}';

interface AccessClaims {
  iss: string;
  sub: string;
  aud: string | string[];
  exp: number;
  iat?: number;
  nbf?: number;
  client_id: string;
  scope?: string;
  lvl: 'instance' | 'org' | 'space';
  org?: string;
  spc?: string;
  gid: string;
}

interface PersonFacts extends MembershipFacts {
  grantLive: boolean;
  email: string | null;
}

export interface KeyRing {
  /** the public key of kid; reloads the keys once when kid is unknown (a rotation elsewhere) */
  publicKey(kid: string): Promise<KeyObject | undefined>;
  issuerFor(req: Request): string;
}

function decodeJson(part: string): any {
  try {
    return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
}

async function loadPersonFacts(pool: pg.Pool, userId: string, grantId: string, orgId: string | null, spaceId: string | null): Promise<PersonFacts | null> {
  const { rows } = await pool.query(
    `SELECT EXISTS (SELECT 1 FROM oidc_payloads g WHERE g.model = 'Grant' AND g.id = $4 AND (g.expires_at IS NULL OR g.expires_at > now())) AS grant_live,
            u.email, ${MEMBERSHIP_COLUMNS}
       FROM users u
       LEFT JOIN org_members om ON om.user_id = u.id AND om.org_id = $2::uuid
       LEFT JOIN organizations o ON o.id = om.org_id
       LEFT JOIN spaces s ON s.id = $3 AND s.org_id = om.org_id
       LEFT JOIN space_members sm ON sm.space_id = s.id AND sm.user_id = u.id
       LEFT JOIN space_roles sr ON sr.org_id = om.org_id AND sr.key = sm.role_key
      WHERE u.id = $1`,
    [userId, orgId, spaceId, grantId],
  );
  const row = rows[0];
  if (!row) return null;
  return { ...membership(row), grantLive: row.grant_live, email: row.email };
}

interface EndUserFacts {
  grantLive: boolean;
  orgApiVersion: string | null;
  orgDeleting: boolean;
  spaceKind: 'team' | 'personal';
}

/** The end-user of a space-level token, still in the token's space, and whether its grant lives. */
async function loadEndUserFacts(pool: pg.Pool, endUserId: string, grantId: string, orgId: string, spaceId: string): Promise<EndUserFacts | null> {
  const { rows } = await pool.query(
    `SELECT EXISTS (SELECT 1 FROM oidc_payloads g WHERE g.model = 'Grant' AND g.id = $4 AND (g.expires_at IS NULL OR g.expires_at > now())) AS grant_live,
            o.api_version, (o.deleting_at IS NOT NULL) AS deleting, s.kind
       FROM end_users eu
       JOIN spaces s ON s.id = eu.space_id AND s.org_id = eu.org_id
       JOIN organizations o ON o.id = eu.org_id
      WHERE eu.id = $1 AND eu.org_id = $2::uuid AND eu.space_id = $3`,
    [endUserId, orgId, spaceId, grantId],
  );
  const row = rows[0];
  if (!row) return null;
  return { grantLive: row.grant_live, orgApiVersion: row.api_version, orgDeleting: row.deleting, spaceKind: row.kind };
}

const unauthorized = (detail: string) => problem('unauthorized', { detail });

function headerValue(req: Request, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** Signatures already checked: the same token string skips the ECDSA verification until it expires. */
const VERIFIED_MAX = 10_000;

export function createOidcVerifier(deps: AppDeps, keys: KeyRing) {
  const { authCache } = deps;
  const pool = deps.database.pool;
  const verified = new Map<string, { claims: AccessClaims; iss: string }>();

  /** The claims of a token this issuer signed and that is still valid; null when it is not ours. */
  async function claimsOf(token: string, req: Request): Promise<AccessClaims | null> {
    const seen = verified.get(token);
    if (seen) {
      if (seen.claims.exp > Math.floor(Date.now() / 1000) && seen.iss === keys.issuerFor(req)) return seen.claims;
      verified.delete(token);
    }
    const claims = await checkToken(token, req);
    if (claims) {
      if (verified.size >= VERIFIED_MAX) verified.delete(verified.keys().next().value!);
      verified.set(token, { claims, iss: claims.iss });
    }
    return claims;
  }

  async function checkToken(token: string, req: Request): Promise<AccessClaims | null> {
    const [h, p, s] = token.split('.');
    const header = decodeJson(h);
    if (!header || header.alg !== 'ES256' || typeof header.kid !== 'string') return null;
    const key = await keys.publicKey(header.kid);
    if (!key) return null;
    const ok = verifySignature('sha256', Buffer.from(`${h}.${p}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(s, 'base64url'));
    if (!ok) return null;
    if (header.typ !== 'at+jwt') throw unauthorized('Only access tokens are accepted here.');
    const claims = decodeJson(p) as AccessClaims | null;
    if (!claims || claims.iss !== keys.issuerFor(req)) throw unauthorized('The access token was issued by another issuer.');
    const now = Math.floor(Date.now() / 1000);
    if (typeof claims.exp !== 'number' || claims.exp <= now) throw unauthorized('The access token has expired.');
    if (typeof claims.nbf === 'number' && claims.nbf > now + 5) throw unauthorized('The access token is not valid yet.');
    if (typeof claims.sub !== 'string' || typeof claims.gid !== 'string' || !['instance', 'org', 'space'].includes(claims.lvl)) throw unauthorized('The access token lacks the platform claims.');
    return claims;
  }

  /** The token must be meant for this route: the MCP endpoint of the path's organization, or the API. */
  function checkAudience(claims: AccessClaims, req: Request, def: RouteDef<any, any, any>): void {
    const issuer = keys.issuerFor(req);
    const auds = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (def.path === MCP_ROUTE) {
      const org = (req.params.org ?? '').toLowerCase();
      if (auds.some((a) => mcpResourceOrg(issuer, a) === org)) return;
      throw unauthorized('This access token was issued for another resource than this MCP endpoint.');
    }
    if (auds.includes(apiResource(issuer))) return;
    // an operation invoked through the MCP endpoint of the token's organization
    const orgHeader = headerValue(req, 'x-org-id')?.toLowerCase();
    if (orgHeader && auds.some((a) => mcpResourceOrg(issuer, a) === orgHeader) && hasDispatchProof(req.headers, orgHeader)) return;
    throw unauthorized('This access token was issued for another resource than the API.');
  }

  /**
   * An end-user's token: the end-user must still exist in the client's space and the grant be
   * alive; the request acts in that space as that end-user, with the allowlist cut to the scopes.
   */
  async function endUser(claims: AccessClaims, scopes: string[], req: Request, def: RouteDef<any, any, any>): Promise<Principal> {
    if (!claims.org || !claims.spc) throw unauthorized('The access token lacks the platform claims.');
    const facts = await authCache.through(`oidc:eu:${claims.gid}:${claims.sub}`, () => loadEndUserFacts(pool, claims.sub, claims.gid, claims.org!, claims.spc!));
    if (!facts || !facts.grantLive) throw unauthorized('The access token has been revoked.');
    const allow = new Set<string>(SPACE_TOKEN_SCOPES);
    const principal: Principal = {
      kind: 'oidc', userId: claims.sub, realm: `end_user:${claims.spc}`,
      oauthClientId: claims.client_id, oauthLevel: 'space', tokenScopes: scopes, grantId: claims.gid,
      ceiling: new Set(scopes.filter((s) => allow.has(s))),
      boundOrgId: claims.org, boundSpaceId: claims.spc,
    };
    req.ctx.principal = principal;
    if (headerValue(req, 'x-view-as') || (def.sse && req.query.view_as !== undefined)) {
      throw problem('view_as_unsupported', { param: def.sse ? 'view_as' : 'X-View-As', detail: 'Role preview is not available with an end-user token.' });
    }
    if (headerValue(req, 'service-user')) throw problem('header_not_allowed', { param: 'Service-User', detail: 'Only API keys can act on behalf of an end-user.' });
    if ((def.tenant ?? 'org') !== 'space') throw problem('forbidden', { detail: 'End-user tokens cannot call platform routes outside the space allowlist.' });
    // the context is the token's; a contradicting header or query is refused by refuseOtherTenant
    req.ctx.org = { id: claims.org, role: 'guest', apiVersion: facts.orgApiVersion };
    if (facts.orgDeleting && req.method !== 'GET') throw problem('org_deleting');
    req.ctx.space = { id: claims.spc, kind: facts.spaceKind };
    req.ctx.endUserId = claims.sub;
    authorize(req, def, SPACE_TOKEN_SCOPES);
    return principal;
  }

  return async function verifyOidc(token: string, req: Request, def: RouteDef<any, any, any>): Promise<Principal | null> {
    const claims = await claimsOf(token, req);
    if (!claims) return null;
    checkAudience(claims, req, def);
    const scopes = (claims.scope ?? '').split(' ').filter(Boolean);

    if (def.sessionOnly) throw problem('forbidden', { detail: 'OAuth access tokens cannot call this operation: it needs a signed-in session.' });
    if (claims.lvl === 'space') return endUser(claims, scopes, req, def);

    const sse = def.sse === true;
    const tenant = def.tenant ?? 'org';
    const orgParam = sse ? 'orgId' : 'X-Org-Id';
    const spaceParam = sse ? 'spaceId' : 'X-Space-Id';
    const sent = (sse ? (typeof req.query.orgId === 'string' ? req.query.orgId : undefined) : undefined) ?? headerValue(req, 'x-org-id');
    if (sent !== undefined && !UUID.test(sent)) throw problem('invalid_request', { param: orgParam, detail: `${orgParam} must be an organization UUID.` });
    let orgId: string | undefined = sent;
    if (claims.lvl === 'org') {
      if (sent !== undefined && sent.toLowerCase() !== claims.org) throw problem('forbidden', { param: orgParam, detail: 'This access token is bound to another organization.' });
      orgId = claims.org;
    }
    const spaceId = tenant === 'space' ? ((sse && typeof req.query.spaceId === 'string' ? req.query.spaceId : undefined) ?? headerValue(req, 'x-space-id')) : undefined;
    const facts = await authCache.through(
      `oidc:${claims.gid}:${claims.sub}:${tenant === 'none' ? '' : orgId ?? ''}:${spaceId ?? ''}`,
      () => loadPersonFacts(pool, claims.sub, claims.gid, tenant === 'none' ? null : orgId ?? null, spaceId ?? null),
    );
    if (!facts || !facts.grantLive) throw unauthorized('The access token has been revoked.');
    const principal: Principal = {
      kind: 'oidc', userId: claims.sub, email: facts.email ?? undefined, realm: 'platform',
      oauthClientId: claims.client_id, oauthLevel: claims.lvl, tokenScopes: scopes, grantId: claims.gid,
      ceiling: new Set(scopes),
      ...(claims.lvl === 'org' && claims.org ? { boundOrgId: claims.org } : {}),
    };
    req.ctx.principal = principal;
    if (tenant === 'none') {
      authorizeOutsideTenant(req, def);
      return principal;
    }
    if (!orgId) throw problem('invalid_request', { param: orgParam, detail: `This route needs ${orgParam}.` });
    if (!facts.orgRole || !facts.orgId) throw problem('forbidden', { param: orgParam, detail: 'You are not a member of this organization.' });
    let viewAs;
    if (claims.lvl === 'instance') {
      viewAs = await resolveViewAs(req, facts.orgRole, pool, facts.orgId, sse);
    } else if (headerValue(req, 'x-view-as') || (sse && req.query.view_as !== undefined)) {
      throw problem('view_as_unsupported', { param: sse ? 'view_as' : 'X-View-As', detail: 'Role preview is not available with a third-party application\'s token.' });
    }
    req.ctx.org = { id: facts.orgId, role: viewAs?.orgRole ?? facts.orgRole, apiVersion: facts.orgApiVersion };
    if (facts.orgDeleting && req.method !== 'GET') throw problem('org_deleting');
    const { permissions, spaceMember } = computePermissions(facts, claims.sub, viewAs);
    if (tenant === 'space') {
      if (!spaceId) throw problem('invalid_request', { param: spaceParam, detail: `This route needs ${spaceParam}.` });
      if (!spaceMember) throw problem('not_a_space_member', { param: spaceParam, detail: 'You hold no role in this space.' });
      req.ctx.space = { id: facts.spaceId!, kind: facts.spaceKind ?? 'team' };
    }
    authorize(req, def, permissions);
    return principal;
  };
}
