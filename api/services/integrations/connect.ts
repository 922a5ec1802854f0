// Connect flows: fields (validated against credentials.schema, the login run at once), the
// single-use ten-minute connect link with its hosted form, and OAuth 2 (authorization code with
// PKCE and state, completed at the callback). Every path ends in storeConnection. The login and the
// code exchange go through the organization's default proxy when it has one.
import { randomBytes } from 'node:crypto';
import type { IntegrationAuth } from '../../../lib/afps/manifest-types.ts';
import { sha256Hex } from '../../../lib/crypto.ts';
import type { OrgRole } from '../../../lib/permissions.ts';
import { problem } from '../../../lib/problem.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { schemaErrors, UnusableSchemaError } from '../runs/schema-check.ts';
import type { Queryable } from '../packages/store.ts';
import { isUuid, ownConnection, storeConnection, toConnectionWire, type ConnectionWire } from './connections.ts';
import { authOf, integrationInSpace, literalHosts, type IntegrationDeps, type UsableIntegration } from './context.ts';
import { readSettings } from './governance.ts';
import { performLogin } from './login.ts';
import { claimedIdentity } from './identity-claims.ts';
import { authorizationUrl, exchangeCode, newPkce, tokenSecrets } from './oauth.ts';
import { proxyRouteOf } from './outbound.ts';

export const CONNECT_LINK_SECONDS = 600;
const IDENTITY_FIELDS = ['account_id', 'username', 'email', 'login', 'user'];

export interface ConnectBody {
  credentials: Record<string, unknown>;
  connection_id?: string;
}

/** Personal connections switched off: only organization owners and admins connect (to share). */
async function checkPersonalAllowed(scope: SpaceScope, deps: IntegrationDeps, integrationId: string, orgRole: OrgRole | null): Promise<void> {
  const settings = await readSettings(scope.pool, deps.secrets, scope.orgId, integrationId);
  if (!settings.personal_connections_disabled) return;
  if (!scope.actor.endUserId && (orgRole === 'owner' || orgRole === 'admin')) return;
  throw problem('connection_blocked_by_admin', { detail: `Personal ${integrationId} connections are disabled in this organization; use the shared connection.` });
}

function refuseUnsupported(auth: IntegrationAuth, authKey: string, flow: 'fields' | 'session'): void {
  if (auth.type === 'mtls') throw problem('connect_unavailable', { detail: `Auth "${authKey}" uses mTLS, which this deployment does not support.` });
  if (flow === 'fields' && auth.type === 'oauth2') {
    throw problem('validation_failed', { detail: `Auth "${authKey}" is OAuth 2: start it with connect/session.`, errors: [{ field: 'credentials', code: 'invalid_value', message: 'an OAuth 2 auth is connected through connect/session' }] });
  }
}

function identityOf(values: Record<string, unknown>): string | null {
  for (const name of IDENTITY_FIELDS) {
    const v = values[name];
    if (typeof v === 'string' && v.trim() !== '') return v.trim().slice(0, 200);
  }
  return null;
}

/** Credentials as stored: every field as text (numbers and booleans written out). */
function asText(values: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined || v === null) continue;
    out[k] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  return out;
}

async function completeFields(scope: SpaceScope, deps: IntegrationDeps, orgRole: OrgRole | null, integration: UsableIntegration, authKey: string, body: ConnectBody): Promise<ConnectionWire> {
  const auth = authOf(integration, authKey);
  refuseUnsupported(auth, authKey, 'fields');
  const reconnect = body.connection_id === undefined ? undefined : await ownConnection(scope, body.connection_id);
  if (reconnect && (reconnect.integration_package_id !== integration.id || reconnect.auth_key !== authKey)) {
    throw problem('validation_failed', { detail: `Connection ${reconnect.id} is not a ${integration.id} ${authKey} connection.`, errors: [{ field: 'connection_id', code: 'invalid_value', message: 'belongs to another integration or auth' }] });
  }
  if (!reconnect) await checkPersonalAllowed(scope, deps, integration.id, orgRole);
  const schema = auth.credentials?.schema;
  if (schema) {
    let errors;
    try {
      errors = schemaErrors(schema, body.credentials, 'credentials');
    } catch (err) {
      if (err instanceof UnusableSchemaError) throw problem('bundle_invalid', { detail: err.message });
      throw err;
    }
    if (errors.length) throw problem('validation_failed', { detail: 'The credentials do not satisfy the auth\'s credentials.schema.', errors });
  }
  let stored: Record<string, string>;
  let accountId = identityOf(body.credentials);
  let label: string | null = null;
  if (auth.connect?.login) {
    const via = await proxyRouteOf(scope, deps);
    const login = await performLogin(auth.connect.login, body.credentials, { ...deps.egress, authorizedHosts: literalHosts(auth) }, via);
    stored = login.outputs;
    // neither a login output nor a typed field (but those that name the account already) may become its visible name
    const typedSecrets = Object.entries(asText(body.credentials)).filter(([name]) => !IDENTITY_FIELDS.includes(name)).map(([, v]) => v);
    const claimed = claimedIdentity(auth, login.answer, [...Object.values(stored), ...typedSecrets]);
    accountId = claimed.accountId ?? stored.account_id ?? accountId;
    label = claimed.label;
  } else {
    stored = asText(body.credentials);
  }
  const row = await storeConnection(scope, deps.secrets, { integrationId: integration.id, authKey, accountId, label, credentials: stored }, reconnect);
  return toConnectionWire(row, scope.actor);
}

export async function connectFields(scope: SpaceScope, deps: IntegrationDeps, orgRole: OrgRole, integrationId: string, authKey: string, body: ConnectBody): Promise<ConnectionWire> {
  const integration = await integrationInSpace(scope.pool, scope.orgId, scope.spaceId, integrationId);
  return completeFields(scope, deps, orgRole, integration, authKey, body);
}

// ------------------------------------------------------------------ connect links

interface SessionRow {
  token_hash: string;
  org_id: string;
  space_id: string;
  integration_package_id: string;
  auth_key: string;
  owner_user_id: string;
  owner_end_user_id: string | null;
  connection_id: string | null;
  scopes: string[];
  oauth_state: string | null;
  oauth_verifier: string | null;
  expires_at: Date;
  used_at: Date | null;
}

export interface ConnectLink {
  connect_url: string;
  expiresAt: string;
}

/** Issues a single-use link, valid ten minutes, that completes the connect flow in a browser. */
export async function createConnectSession(scope: SpaceScope, deps: IntegrationDeps, orgRole: OrgRole | null, integrationId: string, authKey: string, body: { connection_id?: string; scopes?: string[] }, q: Queryable = scope.pool): Promise<ConnectLink> {
  const integration = await integrationInSpace(q, scope.orgId, scope.spaceId, integrationId);
  const auth = authOf(integration, authKey);
  refuseUnsupported(auth, authKey, 'session');
  if (body.connection_id !== undefined) {
    const row = await ownConnection(scope, body.connection_id, q);
    if (row.integration_package_id !== integrationId || row.auth_key !== authKey) {
      throw problem('validation_failed', { detail: `Connection ${row.id} is not a ${integrationId} ${authKey} connection.`, errors: [{ field: 'connection_id', code: 'invalid_value', message: 'belongs to another integration or auth' }] });
    }
  } else {
    await checkPersonalAllowed(scope, deps, integrationId, orgRole);
  }
  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date(Date.now() + CONNECT_LINK_SECONDS * 1000);
  const scopes = body.scopes ?? auth.oauth2?.scopes ?? [];
  await q.query(
    `INSERT INTO integration_connect_sessions (token_hash, org_id, space_id, integration_package_id, auth_key, owner_user_id, owner_end_user_id, connection_id, scopes, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [sha256Hex(token), scope.orgId, scope.spaceId, integrationId, authKey, scope.actor.userId, scope.actor.endUserId ?? null, body.connection_id ?? null, scopes, expiresAt],
  );
  return { connect_url: `${deps.publicBase}/api/integrations/connect/start?token=${token}`, expiresAt: expiresAt.toISOString() };
}

function linkGone(): never {
  throw problem('connect_link_invalid', { detail: 'This connect link is unknown, expired or already used; ask for a new one.' });
}

async function liveSession(q: Queryable, token: string, lock = false): Promise<SessionRow> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) linkGone();
  const { rows } = await q.query<SessionRow>(
    `SELECT * FROM integration_connect_sessions WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()${lock ? ' FOR UPDATE' : ''}`,
    [sha256Hex(token)],
  );
  return rows[0] ?? linkGone();
}

function sessionScope(base: Pick<SpaceScope, 'pool' | 'db'>, s: SessionRow): SpaceScope {
  return { pool: base.pool, db: base.db, orgId: s.org_id, spaceId: s.space_id, actor: { userId: s.owner_user_id, endUserId: s.owner_end_user_id ?? undefined } };
}

async function orgRoleOf(q: Queryable, orgId: string, userId: string): Promise<OrgRole | null> {
  const { rows } = await q.query('SELECT role FROM org_members WHERE org_id = $1 AND user_id = $2', [orgId, userId]);
  return (rows[0]?.role as OrgRole | undefined) ?? null;
}

export type StartPage =
  | { kind: 'redirect'; location: string }
  | { kind: 'form'; integrationId: string; authKey: string; schema: Record<string, unknown> | undefined };

/** What the link opens: the provider's consent (OAuth 2, the link is spent) or the hosted form. */
export async function openConnectLink(base: Pick<SpaceScope, 'pool' | 'db'>, deps: IntegrationDeps, token: string): Promise<StartPage> {
  const session = await liveSession(base.pool, token);
  const integration = await integrationInSpace(base.pool, session.org_id, session.space_id, session.integration_package_id);
  const auth = authOf(integration, session.auth_key);
  if (auth.type !== 'oauth2') return { kind: 'form', integrationId: integration.id, authKey: session.auth_key, schema: auth.credentials?.schema };

  const settings = await readSettings(base.pool, deps.secrets, session.org_id, integration.id);
  const client = settings.oauth_clients[session.auth_key];
  if (!client) throw problem('connect_unavailable', { detail: `The organization has not registered an OAuth client for ${integration.id} (${session.auth_key}).` });
  const state = randomBytes(24).toString('base64url');
  const pkce = newPkce();
  const { rowCount } = await base.pool.query(
    `UPDATE integration_connect_sessions SET used_at = now(), oauth_state = $2, oauth_verifier = $3
      WHERE token_hash = $1 AND used_at IS NULL AND expires_at > now()`,
    [session.token_hash, state, deps.secrets.seal(pkce.verifier)],
  );
  if (!rowCount) linkGone();
  return { kind: 'redirect', location: authorizationUrl(auth, client, { redirectUri: `${deps.publicBase}/api/integrations/connect/callback`, state, challenge: pkce.challenge, scopes: session.scopes }) };
}

/** The hosted form's submission: the same flow as connect/fields, on behalf of the link's creator. */
export async function submitConnectForm(
  base: Pick<SpaceScope, 'pool' | 'db'>, deps: IntegrationDeps, token: string,
  readFields: (schema: Record<string, unknown> | undefined) => Record<string, unknown>,
): Promise<ConnectionWire> {
  const session = await liveSession(base.pool, token);
  const scope = sessionScope(base, session);
  const integration = await integrationInSpace(base.pool, session.org_id, session.space_id, session.integration_package_id);
  const fields = readFields(authOf(integration, session.auth_key).credentials?.schema);
  const orgRole = await orgRoleOf(base.pool, session.org_id, session.owner_user_id);
  // spend the link first: two submissions cannot both connect
  const { rowCount } = await base.pool.query('UPDATE integration_connect_sessions SET used_at = now() WHERE token_hash = $1 AND used_at IS NULL', [session.token_hash]);
  if (!rowCount) linkGone();
  try {
    return await completeFields(scope, deps, orgRole, integration, session.auth_key, { credentials: fields, connection_id: session.connection_id ?? undefined });
  } catch (err) {
    // a refused attempt (wrong password, invalid field) leaves the link usable until it expires
    await base.pool.query('UPDATE integration_connect_sessions SET used_at = NULL WHERE token_hash = $1', [session.token_hash]);
    throw err;
  }
}

/** The provider's redirect back: the state names the session (once), the code is exchanged with the PKCE verifier. */
export async function completeOAuth(base: Pick<SpaceScope, 'pool' | 'db'>, deps: IntegrationDeps, query: { state?: string; code?: string; error?: string }): Promise<ConnectionWire> {
  if (!query.state) throw problem('invalid_request', { param: 'state', detail: 'The callback carries no state.' });
  const { rows } = await base.pool.query<SessionRow>(
    `UPDATE integration_connect_sessions SET oauth_state = NULL WHERE oauth_state = $1 AND expires_at > now() RETURNING *`,
    [query.state],
  );
  const session = rows[0] ?? linkGone();
  if (query.error || !query.code) throw problem('invalid_request', { param: 'code', detail: `The provider did not grant access${query.error ? ` (${query.error.slice(0, 100)})` : ''}.` });
  const scope = sessionScope(base, session);
  const integration = await integrationInSpace(base.pool, session.org_id, session.space_id, session.integration_package_id);
  const auth = authOf(integration, session.auth_key);
  const settings = await readSettings(base.pool, deps.secrets, session.org_id, integration.id);
  const client = settings.oauth_clients[session.auth_key];
  if (!client || !session.oauth_verifier) throw problem('connect_unavailable', { detail: 'The OAuth client of this integration was removed.' });
  const via = await proxyRouteOf(scope, deps);
  const tokens = await exchangeCode(auth, client, { code: query.code, verifier: deps.secrets.open(session.oauth_verifier), redirectUri: `${deps.publicBase}/api/integrations/connect/callback` }, deps.egress, via);
  const reconnect = session.connection_id && isUuid(session.connection_id) ? await ownConnection(scope, session.connection_id) : undefined;
  const claimed = claimedIdentity(auth, tokens.answer, tokenSecrets(tokens));
  const row = await storeConnection(scope, deps.secrets, {
    integrationId: integration.id, authKey: session.auth_key, accountId: claimed.accountId ?? tokens.accountId, label: claimed.label, credentials: tokens.credentials,
    scopes: tokens.scopes ?? session.scopes, tokenExpiresAt: tokens.expiresAt,
  }, reconnect);
  return toConnectionWire(row, scope.actor);
}

/** Removes connect links that expired a day ago or more (they only refuse by then); in batches. */
export async function purgeConnectSessions(q: Queryable): Promise<number> {
  const { rowCount } = await q.query(
    `DELETE FROM integration_connect_sessions WHERE token_hash IN (
       SELECT token_hash FROM integration_connect_sessions WHERE expires_at < now() - interval '1 day' LIMIT 1000)`,
  );
  return rowCount ?? 0;
}
