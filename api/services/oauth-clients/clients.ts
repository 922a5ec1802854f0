// OAuth clients registered over the API (/api/oauth/clients): organization-level clients (bound to
// the caller's organization, acting for its members) and space-level clients (bound to one team
// space, acting for its end-users). Authority follows the client's level: an organization-level
// row needs oauth-clients:* from the organization role (never from an API key, which is pinned to
// a space); a space-level row needs oauth-clients:* in its own space. Instance clients are not
// creatable here (the platform has no instance administrator): they come from dynamic
// registration and client ID metadata documents only.
import { randomBytes } from 'node:crypto';
import type { OrgScope } from '../../../db/tenant.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import { newId } from '../../../lib/ids.ts';
import type { Permission } from '../../../lib/permissions.ts';
import { isProblem, problem, type FieldError } from '../../../lib/problem.ts';
import type { RequestContext } from '../../context.ts';
import { cursorCondition, type CursorPage } from '../../lists.ts';
import { reachSpace } from '../space-access.ts';
import { grantTypesProblem, nameProblem, redirectUrisProblem, scopesProblem, unique } from './client-metadata.ts';
import type { TokenEndpointAuthMethod } from './store.ts';
import { inTransaction } from '../../../db/transaction.ts';
import { AUTH_CHANGED_CHANNEL } from '../auth-cache.ts';

export type ApiClientLevel = 'org' | 'space';

export interface OAuthClient {
  id: string;
  object: 'oauth_client';
  level: ApiClientLevel;
  spaceId?: string;
  name: string;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  grant_types: string[];
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  scopes: string[];
  allowSignup: boolean;
  createdAt: string;
  updatedAt: string;
}

export type OAuthClientWithSecret = OAuthClient & { client_secret?: string };

interface Row {
  id: string;
  level: ApiClientLevel;
  space_id: string | null;
  name: string;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  grant_types: string[];
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  scopes: string[];
  allow_signup: boolean;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, level, space_id, name, redirect_uris, post_logout_redirect_uris, grant_types, token_endpoint_auth_method, scopes, allow_signup, created_at, updated_at';
// rows of the routes: instance clients (dynamic, metadata documents) have no organization and never match
const MANAGED = "org_id = $2 AND level IN ('org', 'space')";

function toWire(r: Row): OAuthClient {
  const out: OAuthClient = {
    id: r.id, object: 'oauth_client', level: r.level, name: r.name, redirect_uris: r.redirect_uris,
    post_logout_redirect_uris: r.post_logout_redirect_uris, grant_types: r.grant_types,
    token_endpoint_auth_method: r.token_endpoint_auth_method, scopes: r.scopes, allowSignup: r.allow_signup,
    createdAt: r.created_at.toISOString(), updatedAt: r.updated_at.toISOString(),
  };
  if (r.space_id) out.spaceId = r.space_id;
  return out;
}

/** A client secret: 256 random bits, shown once. */
export function newClientSecret(): string {
  return `oacs_${randomBytes(32).toString('base64url')}`;
}

type Action = 'read' | 'write' | 'delete';
const notFound = () => problem('not_found', { detail: 'No such OAuth client.' });

/** What the caller holds for rows of this level; null when such rows are out of its reach. */
async function held(scope: OrgScope, ctx: RequestContext, spaceId: string | null): Promise<ReadonlySet<Permission> | null> {
  if (spaceId === null) return ctx.principal?.boundSpaceId === undefined ? ctx.permissions : null;
  try {
    return (await reachSpace(scope, ctx, spaceId)).permissions;
  } catch (err) {
    if (isProblem(err) && err.code === 'not_found') return null;
    throw err;
  }
}

function requireAction(perms: ReadonlySet<Permission>, action: Action, spaceId: string | null): void {
  const needed: Permission = `oauth-clients:${action}`;
  if (!perms.has(needed)) throw problem('forbidden', { detail: `This operation needs the ${needed} permission${spaceId ? " in the client's space" : ' in the organization'}.` });
}

/** A row the caller cannot read is out of reach (404); one it reads but may not change is 403. */
async function reachable(scope: OrgScope, ctx: RequestContext, id: string, action: Action): Promise<Row> {
  const { rows } = await scope.pool.query<Row>(`SELECT ${COLUMNS} FROM oauth_clients WHERE id = $1 AND ${MANAGED}`, [id, scope.orgId]);
  if (!rows[0]) throw notFound();
  const perms = await held(scope, ctx, rows[0].space_id);
  if (!perms?.has('oauth-clients:read')) throw notFound();
  if (action !== 'read') requireAction(perms, action, rows[0].space_id);
  return rows[0];
}

function invalid(field: string, reason: string, code = 'invalid_value'): never {
  const errors: FieldError[] = [{ field, code, message: reason }];
  throw problem('validation_failed', { detail: `${field} ${reason}.`, errors });
}

interface Shape {
  redirect_uris?: string[];
  post_logout_redirect_uris?: string[];
  grant_types?: string[];
  scopes?: string[];
  name?: string;
}

/** The rules of client-metadata.ts, as problem documents. */
function vet(level: ApiClientLevel, s: Shape, current?: Row): void {
  if (s.name !== undefined) {
    const why = nameProblem(s.name);
    if (why) invalid('name', why);
  }
  for (const field of ['redirect_uris', 'post_logout_redirect_uris'] as const) {
    if (s[field] === undefined) continue;
    const bad = redirectUrisProblem(s[field], field);
    if (bad) invalid(bad.field, bad.reason, 'invalid_redirect_uri');
  }
  if (s.grant_types !== undefined || s.redirect_uris !== undefined) {
    const why = grantTypesProblem(s.grant_types ?? current?.grant_types, s.redirect_uris ?? current?.redirect_uris ?? []);
    if (why) invalid(s.grant_types !== undefined ? 'grant_types' : 'redirect_uris', why);
  }
  if (s.scopes !== undefined) {
    const why = scopesProblem(level, s.scopes);
    if (why) invalid('scopes', why, 'invalid_scope');
  }
}

/** The space a space-level client is bound to: X-Space-Id, or the space an API key is pinned to. */
async function bindingSpace(scope: OrgScope, ctx: RequestContext, spaceHeader: string | undefined): Promise<{ id: string; perms: ReadonlySet<Permission> }> {
  const spaceId = ctx.principal?.boundSpaceId ?? spaceHeader;
  if (!spaceId) throw problem('invalid_request', { param: 'X-Space-Id', detail: 'A space-level client is bound to the space named by X-Space-Id.' });
  let access;
  try {
    access = await reachSpace(scope, ctx, spaceId);
  } catch (err) {
    if (isProblem(err) && err.code === 'not_found') throw problem('not_a_space_member', { param: 'X-Space-Id', detail: 'You hold no role in this space.' });
    throw err;
  }
  if (access.space.kind === 'personal') throw problem('personal_space_takes_no_oauth_clients', { detail: 'Register clients in a team space.' });
  return { id: spaceId, perms: access.permissions };
}

export interface CreateInput {
  level: ApiClientLevel;
  name: string;
  redirect_uris?: string[];
  post_logout_redirect_uris?: string[];
  grant_types?: string[];
  token_endpoint_auth_method?: TokenEndpointAuthMethod;
  scopes: string[];
  allowSignup?: boolean;
}

export async function createClient(scope: OrgScope, ctx: RequestContext, secrets: SecretBox, spaceHeader: string | undefined, input: CreateInput): Promise<OAuthClientWithSecret> {
  let spaceId: string | null = null;
  if (input.level === 'space') {
    const space = await bindingSpace(scope, ctx, spaceHeader);
    requireAction(space.perms, 'write', space.id);
    spaceId = space.id;
  } else {
    if (ctx.principal?.boundSpaceId !== undefined) throw problem('forbidden', { detail: 'An API key is pinned to a space: organization-level clients need a session.' });
    requireAction(ctx.permissions, 'write', null);
    if (input.allowSignup !== undefined) invalid('allowSignup', 'applies to space-level clients only');
  }
  const redirectUris = unique(input.redirect_uris ?? []);
  const grantTypes = unique(input.grant_types ?? ['authorization_code', 'refresh_token']);
  vet(input.level, { ...input, redirect_uris: redirectUris, grant_types: grantTypes });
  const method = input.token_endpoint_auth_method ?? 'client_secret_basic';
  const secret = method === 'none' ? undefined : newClientSecret();
  const { rows } = await scope.pool.query<Row>(
    `INSERT INTO oauth_clients (id, level, org_id, space_id, name, redirect_uris, post_logout_redirect_uris, grant_types,
                                token_endpoint_auth_method, secret_sealed, scopes, allow_signup, registration, created_by)
     VALUES ($1, $3, $2, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'api', $13) RETURNING ${COLUMNS}`,
    [newId('oac'), scope.orgId, input.level, spaceId, input.name.trim(), redirectUris, unique(input.post_logout_redirect_uris ?? []),
      grantTypes, method, secret ? secrets.seal(secret) : null, unique(input.scopes), input.allowSignup ?? false, scope.actor.userId],
  );
  return secret ? { ...toWire(rows[0]), client_secret: secret } : toWire(rows[0]);
}

export async function getClient(scope: OrgScope, ctx: RequestContext, id: string): Promise<OAuthClient> {
  return toWire(await reachable(scope, ctx, id, 'read'));
}

/**
 * Organization-level clients the caller may read, then the clients of the space it acts in
 * (X-Space-Id or its key's space) when it may read them there. Others are left out: a shorter
 * page, not 403.
 */
export async function listClients(scope: OrgScope, ctx: RequestContext, spaceHeader: string | undefined, page: CursorPage): Promise<OAuthClient[]> {
  const params: unknown[] = [page.limit + 1, scope.orgId];
  const reach: string[] = [];
  const orgPerms = await held(scope, ctx, null);
  if (orgPerms?.has('oauth-clients:read')) reach.push("level = 'org'");
  const spaceId = ctx.principal?.boundSpaceId ?? spaceHeader;
  if (spaceId) {
    const perms = await held(scope, ctx, spaceId);
    if (perms?.has('oauth-clients:read')) {
      params.push(spaceId);
      reach.push(`space_id = $${params.length}`);
    }
  }
  if (reach.length === 0) return [];
  let where = `${MANAGED} AND (${reach.join(' OR ')})`;
  const { condition, order } = cursorCondition(page, params);
  where += condition;
  const { rows } = await scope.pool.query<Row>(`SELECT ${COLUMNS} FROM oauth_clients WHERE ${where} ORDER BY id COLLATE "C" ${order} LIMIT $1`, params);
  return rows.map(toWire);
}

export interface UpdateInput {
  name?: string;
  redirect_uris?: string[];
  post_logout_redirect_uris?: string[];
  grant_types?: string[];
  scopes?: string[];
  allowSignup?: boolean;
}

export async function updateClient(scope: OrgScope, ctx: RequestContext, id: string, patch: UpdateInput): Promise<OAuthClient> {
  const current = await reachable(scope, ctx, id, 'write');
  if (patch.allowSignup !== undefined && current.level !== 'space') invalid('allowSignup', 'applies to space-level clients only');
  const next = {
    ...patch,
    redirect_uris: patch.redirect_uris && unique(patch.redirect_uris),
    post_logout_redirect_uris: patch.post_logout_redirect_uris && unique(patch.post_logout_redirect_uris),
    grant_types: patch.grant_types && unique(patch.grant_types),
    scopes: patch.scopes && unique(patch.scopes),
  };
  vet(current.level, next, current);
  const { rows } = await scope.pool.query<Row>(
    `UPDATE oauth_clients SET
       name = COALESCE($3, name),
       redirect_uris = COALESCE($4, redirect_uris),
       post_logout_redirect_uris = COALESCE($5, post_logout_redirect_uris),
       grant_types = COALESCE($6, grant_types),
       scopes = COALESCE($7, scopes),
       allow_signup = COALESCE($8, allow_signup),
       updated_at = now()
     WHERE id = $1 AND ${MANAGED} RETURNING ${COLUMNS}`,
    [id, scope.orgId, next.name?.trim() ?? null, next.redirect_uris ?? null, next.post_logout_redirect_uris ?? null,
      next.grant_types ?? null, next.scopes ?? null, patch.allowSignup ?? null],
  );
  if (!rows[0]) throw notFound();
  return toWire(rows[0]);
}

/** Deletes the client and everything the provider issued to it (grants, tokens, codes). */
export async function deleteClient(scope: OrgScope, ctx: RequestContext, id: string): Promise<void> {
  await reachable(scope, ctx, id, 'delete');
  await inTransaction(scope.pool, async (client) => {
    await client.query(`DELETE FROM oauth_clients WHERE id = $1 AND ${MANAGED}`, [id, scope.orgId]);
    await client.query("DELETE FROM oidc_payloads WHERE payload->>'clientId' = $1", [id]);
    // every instance drops the access tokens it had vouched for under the client's grants
    await client.query(`NOTIFY ${AUTH_CHANGED_CHANNEL}`);
  });
}

/** A new secret replaces the old one at once; public clients have none to rotate. */
export async function rotateClientSecret(scope: OrgScope, ctx: RequestContext, secrets: SecretBox, id: string): Promise<OAuthClientWithSecret> {
  const current = await reachable(scope, ctx, id, 'write');
  if (current.token_endpoint_auth_method === 'none') {
    throw problem('invalid_request', { detail: 'A public client (token_endpoint_auth_method none) has no secret to rotate.' });
  }
  const secret = newClientSecret();
  const { rows } = await scope.pool.query<Row>(
    `UPDATE oauth_clients SET secret_sealed = $3, updated_at = now() WHERE id = $1 AND ${MANAGED} RETURNING ${COLUMNS}`,
    [id, scope.orgId, secrets.seal(secret)],
  );
  if (!rows[0]) throw notFound();
  return { ...toWire(rows[0]), client_secret: secret };
}
