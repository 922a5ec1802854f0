// Integrations and connections (spec: Integrations and connections, Connection record, Proxies):
// the integrations usable in a space, connect flows (fields with login, connect links with the
// hosted form, OAuth 2), the caller's connections, governance, run readiness and the credential
// proxy. Connections are space-scoped resources under /api/connections.
import type { AppDeps } from '../deps.ts';
import type { SpaceScope } from '../../db/tenant.ts';
import { publishConnectionUpdate } from '../services/realtime/publish.ts';
import { z } from 'zod';
import { spaceScopeOf } from '../../db/tenant.ts';
import { problem } from '../../lib/problem.ts';
import { readRawBody } from '../middleware/body.ts';
import { CursorQuery, cursorList, cursorPage, limitParam, integerParam, MAX_OFFSET, offsetList, offsetPage } from '../lists.ts';
import { created, ok, noContent, route, type Reply, type RouteDef } from '../route.ts';
import { resolveRunnableAgent } from '../services/packages/dependencies.ts';
import { listIntegrations } from '../services/integrations/catalog.ts';
import { completeOAuth, connectFields, createConnectSession, openConnectLink, submitConnectForm } from '../services/integrations/connect.ts';
import { CONNECT_PAGE_HEADERS, connectedPage, connectFormPage, typedFields } from '../services/integrations/connect-page.ts';
import { ownConnection, pageVisibleConnections, renameConnection, toConnectionWire, visibleConnection } from '../services/integrations/connections.ts';
import { integrationDepsOf, integrationScopeOf } from '../services/integrations/context.ts';
import { proxyCredentialCall } from '../services/integrations/credential-proxy.ts';
import { changeSettings, deleteConnection, setPins, setShared } from '../services/integrations/governance.ts';
import { planConnections } from '../services/integrations/readiness.ts';
import { PackageParams, packageIdOf } from './package-wire.ts';

const TAG = 'Integrations';
const INTEGRATIONS_PAGE = { def: 100, max: 100 };
const READ_LIMIT = { perMinute: 300 };
const WRITE_LIMIT = { perMinute: 60 };
const CONNECT_LIMIT = { perMinute: 30 };
const PUBLIC_LIMIT = { perMinute: 30, by: 'ip' as const };

const Connection = z.object({
  id: z.string().describe('UUID'),
  object: z.literal('connection'),
  integration_package_id: z.string(),
  auth_key: z.string(),
  account_id: z.string(),
  label: z.string(),
  needs_reconnection: z.boolean(),
  shared_with_org: z.boolean(),
  owned_by_actor: z.boolean(),
  owner_kind: z.enum(['member', 'end_user']),
  scopes: z.array(z.string()),
  createdAt: z.string(),
  updatedAt: z.string(),
}).meta({ id: 'Connection' });

const Integration = z.object({
  packageId: z.string(),
  object: z.literal('integration'),
  display_name: z.string().nullable(),
  description: z.string().nullable(),
  version: z.string(),
  source_kind: z.enum(['none', 'local', 'remote']),
  placement: z.enum(['home', 'placed']),
  tools: z.array(z.string()),
  auths: z.array(z.object({
    key: z.string(),
    type: z.string(),
    credentials_schema: z.record(z.string(), z.unknown()).nullable(),
    scopes: z.array(z.string()),
    login: z.boolean(),
    connections: z.array(Connection),
  })),
}).meta({ id: 'Integration' });

const ListMeta = { object: z.literal('list'), hasMore: z.boolean(), total: z.number().int().optional(), total_capped: z.boolean().optional(), limit: z.number().int().optional() };
const IntegrationList = z.object({ ...ListMeta, data: z.array(Integration) });
const ConnectionList = z.object({ ...ListMeta, data: z.array(Connection) });

const ConnectLink = z.object({ connect_url: z.string().describe('single-use link, valid ten minutes'), expiresAt: z.string() }).meta({ id: 'ConnectLink' });

const Settings = z.object({
  integration_package_id: z.string(),
  personal_connections_disabled: z.boolean(),
  default_connection_id: z.string().nullable(),
  enforce_default: z.boolean(),
  oauth_clients: z.array(z.object({ auth_key: z.string(), client_id: z.string() })),
}).meta({ id: 'IntegrationSettings' });

const Candidate = z.object({ id: z.string(), label: z.string(), account_id: z.string(), owned_by_actor: z.boolean(), needs_reconnection: z.boolean() });
const Readiness = z.object({
  packageId: z.string(),
  ready: z.boolean(),
  requires_connection: z.boolean().describe('false: the integration declares no auths; runs use it without a connection'),
  connection_id: z.string().nullable(),
  auth_key: z.string().nullable(),
  owned_by_actor: z.boolean(),
  needs_reconnection: z.boolean(),
  required_auth_key: z.string().nullable(),
  available_auth_keys: z.array(z.string()),
  required_scopes: z.array(z.string()),
  missing_scopes: z.array(z.string()),
  candidate_connections: z.array(Candidate),
});
const ReadinessReport = z.object({ agent_id: z.string(), ready: z.boolean(), integrations: z.array(Readiness) }).meta({ id: 'ConnectionReadiness' });

const AuthParams = PackageParams.extend({ auth_key: z.string() });
const IdParams = z.object({ id: z.string() });
const Html = { description: 'HTML page', contentType: 'text/html' };

const PROXY_HEADERS = [
  { name: 'X-Integration-Id', required: true, description: 'the integration package id (@scope/name)' },
  { name: 'X-Target', required: true, description: 'the full upstream URL; must fall under the auth\'s authorized_uris' },
  { name: 'X-Session-Id', required: true, description: 'UUID grouping a runner\'s calls (CREDENTIAL_PROXY_LIMITS.session_ttl_seconds)' },
  { name: 'X-Connection-Id', description: 'the connection to use (within an enforced organization default)' },
];

function proxyRoute(method: 'get' | 'post' | 'put' | 'patch' | 'delete'): RouteDef<any, any, any> {
  return route({
    method, path: '/api/credential-proxy/proxy', summary: `Proxy a ${method.toUpperCase()} request with the integration's credential injected`, tag: 'Proxies',
    tenant: 'space', permission: 'credential-proxy:call', rateLimit: { perMinute: (c) => c.CREDENTIAL_PROXY_LIMITS.rate_per_min },
    rawBody: method !== 'get' && method !== 'delete' ? true : undefined,
    bodyContent: method !== 'get' && method !== 'delete' ? { 'application/octet-stream': z.string().meta({ format: 'binary' }) } : undefined,
    headers: PROXY_HEADERS,
    responses: { 200: { description: 'The upstream\'s own answer (any status), with Proxy-Status', headers: ['Proxy-Status'] } },
    handler: async ({ ctx, req, deps }): Promise<Reply> => {
      const body = method === 'get' || method === 'delete' ? Buffer.alloc(0) : await readRawBody(req, deps.config.CREDENTIAL_PROXY_LIMITS.max_request_bytes);
      const answer = await proxyCredentialCall(spaceScopeOf(ctx, deps.database), integrationDepsOf(deps), deps.config, deps.cache, { method: method.toUpperCase(), headers: req.headers, body });
      return { status: answer.status, body: answer.body, headers: answer.headers as Record<string, string> };
    },
  });
}

export const integrationRoutes = [
  route({
    method: 'get', path: '/api/integrations', summary: 'List the integrations usable in the space, with their auths, tools and your connections', tag: TAG,
    permission: 'integrations:read', rateLimit: READ_LIMIT,
    query: z.object({
      limit: limitParam(INTEGRATIONS_PAGE),
      offset: integerParam({ description: `rows to skip; at most ${MAX_OFFSET}`, minimum: 0, maximum: MAX_OFFSET, default: 0 }),
    }),
    responses: { 200: { description: 'A page of integrations', schema: IntegrationList } },
    handler: async ({ ctx, query, req, deps }) => {
      const page = offsetPage(query, INTEGRATIONS_PAGE);
      const { rows, total } = await listIntegrations(spaceScopeOf(ctx, deps.database), page);
      const { body, headers } = offsetList(req, page, rows, total);
      return ok(body, headers);
    },
  }),
  route({
    method: 'post', path: '/api/integrations/{scope}/{name}/auths/{auth_key}/connect/fields', summary: 'Connect with credentials (the login, if any, runs at once)', tag: TAG,
    permission: 'integrations:connect', rateLimit: CONNECT_LIMIT, params: AuthParams,
    location: (b) => `/api/connections/${b.id}`,
    body: z.object({
      credentials: z.record(z.string(), z.unknown()).describe('fields matching the auth\'s credentials.schema'),
      connection_id: z.string().optional().describe('reconnect this connection (keeps its id)'),
    }).strict(),
    responses: { 201: { description: 'Connected', schema: Connection }, 200: { description: 'Reconnected', schema: Connection } },
    handler: async ({ ctx, params, body, deps }) => {
      const scope = spaceScopeOf(ctx, deps.database);
      const connection = await connectFields(scope, integrationDepsOf(deps), ctx.org!.role, packageIdOf(params), params.auth_key, body);
      await announceConnection(deps, scope, { ...connection });
      return body.connection_id ? ok(connection) : created(connection);
    },
  }),
  route({
    method: 'post', path: '/api/integrations/{scope}/{name}/auths/{auth_key}/connect/session', summary: 'Issue a single-use connect link (hosted form or OAuth consent)', tag: TAG,
    permission: 'integrations:connect', rateLimit: CONNECT_LIMIT, params: AuthParams,
    body: z.object({
      connection_id: z.string().optional().describe('reconnect this connection'),
      scopes: z.array(z.string().min(1).max(200)).max(50).optional().describe('OAuth scopes to request'),
    }).strict(),
    responses: { 200: { description: 'The link', schema: ConnectLink } },
    handler: async ({ ctx, params, body, deps }) =>
      ok(await createConnectSession(spaceScopeOf(ctx, deps.database), integrationDepsOf(deps), ctx.org!.role, packageIdOf(params), params.auth_key, body)),
  }),
  route({
    method: 'get', path: '/api/integrations/connect/start', summary: 'Open a connect link: the hosted form, or a redirect to the provider\'s consent', tag: TAG,
    stage: 'public', rateLimit: PUBLIC_LIMIT,
    query: z.object({ token: z.string().optional().describe('the connect link\'s token') }),
    responses: { 200: Html, 302: { description: 'To the OAuth provider', headers: ['Location'] } },
    handler: async ({ query, deps }): Promise<Reply> => {
      const token = query.token ?? '';
      const opened = await openConnectLink(deps.database, integrationDepsOf(deps), token);
      if (opened.kind === 'redirect') return { status: 302, headers: { Location: opened.location, 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' } };
      return { status: 200, body: connectFormPage({ integrationId: opened.integrationId, authKey: opened.authKey, token, schema: opened.schema }), headers: CONNECT_PAGE_HEADERS };
    },
  }),
  route({
    method: 'post', path: '/api/integrations/connect/start', summary: 'Submit the hosted connect form', tag: TAG,
    stage: 'public', rateLimit: PUBLIC_LIMIT, rawBody: true,
    bodyContent: { 'application/x-www-form-urlencoded': z.object({ token: z.string() }).catchall(z.string()) },
    responses: { 200: Html },
    handler: async ({ req, deps }): Promise<Reply> => {
      const raw = await readRawBody(req, 64 * 1024);
      const type = String(req.headers['content-type'] ?? '');
      if (!type.startsWith('application/x-www-form-urlencoded')) {
        throw problem('validation_failed', { detail: 'The form is sent as application/x-www-form-urlencoded.', errors: [{ field: 'body', code: 'invalid_type', message: 'must be a urlencoded form' }] });
      }
      const form = new URLSearchParams(raw.toString('utf8'));
      const connection = await submitConnectForm(deps.database, integrationDepsOf(deps), form.get('token') ?? '', (schema) => typedFields(form, schema));
      return { status: 200, body: connectedPage(connection.integration_package_id, connection.label), headers: CONNECT_PAGE_HEADERS };
    },
  }),
  route({
    method: 'get', path: '/api/integrations/connect/callback', summary: 'OAuth 2 redirect back from the provider', tag: TAG,
    stage: 'public', rateLimit: PUBLIC_LIMIT,
    query: z.object({ state: z.string().optional(), code: z.string().optional(), error: z.string().optional() }),
    responses: { 200: Html },
    handler: async ({ query, deps }): Promise<Reply> => {
      const connection = await completeOAuth(deps.database, integrationDepsOf(deps), query);
      return { status: 200, body: connectedPage(connection.integration_package_id, connection.label), headers: CONNECT_PAGE_HEADERS };
    },
  }),
  route({
    method: 'put', path: '/api/integrations/{scope}/{name}/settings', summary: 'Govern an integration for the organization (owners and admins)', tag: TAG,
    permission: 'integrations:write', rateLimit: WRITE_LIMIT, params: PackageParams,
    body: z.object({
      personal_connections_disabled: z.boolean().optional(),
      default_connection_id: z.string().nullable().optional(),
      enforce_default: z.boolean().optional(),
      oauth_client: z.object({ auth_key: z.string().min(1), client_id: z.string().min(1).max(500), client_secret: z.string().min(1).max(2000).optional() }).strict().optional(),
    }).strict(),
    responses: { 200: { description: 'The settings (never the client secret)', schema: Settings } },
    handler: async ({ ctx, params, body, deps }) => ok(await changeSettings(integrationScopeOf(ctx, deps), deps.secrets, packageIdOf(params), body)),
  }),
  route({
    method: 'get', path: '/api/connections', summary: 'List your connections and those shared with the organization', tag: TAG,
    tenant: 'space', permission: 'integrations:read', rateLimit: READ_LIMIT,
    query: CursorQuery.extend({ integration_package_id: z.string().optional() }),
    responses: { 200: { description: 'A page of connections, oldest first (cursor-paged)', schema: ConnectionList } },
    handler: async ({ ctx, query, req, deps }) => {
      const scope = spaceScopeOf(ctx, deps.database);
      const page = cursorPage(query);
      const rows = await pageVisibleConnections(scope, { integrationId: query.integration_package_id }, page);
      const { body, headers } = cursorList(req, page, rows.map((r) => toConnectionWire(r, scope.actor)));
      return ok(body, headers);
    },
  }),
  route({
    method: 'get', path: '/api/connections/{id}', summary: 'Read a connection', tag: TAG,
    tenant: 'space', permission: 'integrations:read', rateLimit: READ_LIMIT, params: IdParams,
    responses: { 200: { description: 'The connection', schema: Connection } },
    handler: async ({ ctx, params, deps }) => {
      const scope = spaceScopeOf(ctx, deps.database);
      return ok(toConnectionWire(await visibleConnection(scope, params.id), scope.actor));
    },
  }),
  route({
    method: 'patch', path: '/api/connections/{id}', summary: 'Rename a connection or share it with the organization', tag: TAG,
    tenant: 'space', permission: 'integrations:connect', rateLimit: WRITE_LIMIT, params: IdParams,
    body: z.object({ label: z.string().trim().min(1).max(200).optional(), shared_with_org: z.boolean().optional() }).strict(),
    responses: { 200: { description: 'The connection', schema: Connection } },
    handler: async ({ ctx, params, body, deps }) => {
      const scope = spaceScopeOf(ctx, deps.database);
      let row = await ownConnection(scope, params.id);
      if (body.shared_with_org !== undefined) await setShared(scope, row, body.shared_with_org);
      if (body.label !== undefined) row = await renameConnection(scope.pool, row, body.label);
      const connection = toConnectionWire(await visibleConnection(scope, row.id), scope.actor);
      await announceConnection(deps, scope, { ...connection });
      return ok(connection);
    },
  }),
  route({
    method: 'delete', path: '/api/connections/{id}', summary: 'Disconnect (delete a connection)', tag: TAG,
    tenant: 'space', permission: 'integrations:disconnect', rateLimit: WRITE_LIMIT, params: IdParams,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ ctx, params, deps }) => {
      const scope = spaceScopeOf(ctx, deps.database);
      await deleteConnection(scope, params.id);
      await announceConnection(deps, scope, { id: params.id, object: 'connection', deleted: true });
      return noContent();
    },
  }),
  route({
    method: 'put', path: '/api/connections/{id}/pins', summary: 'Pin the connection to exactly these agents of the space', tag: TAG,
    tenant: 'space', permission: 'agents:configure', rateLimit: WRITE_LIMIT, params: IdParams,
    body: z.object({ agents: z.array(z.string().min(1).max(214)).max(100) }).strict(),
    responses: { 200: { description: 'The agents it is pinned to', schema: z.object({ connection_id: z.string(), agents: z.array(z.string()) }) } },
    handler: async ({ ctx, params, body, deps }) => ok({ connection_id: params.id, agents: await setPins(integrationScopeOf(ctx, deps), params.id, body.agents) }),
  }),
  route({
    method: 'get', path: '/api/agents/{scope}/{name}/connection-readiness', summary: 'Which connection a run by you would use, per integration', tag: 'Runs',
    permission: 'agents:read', rateLimit: READ_LIMIT, params: PackageParams,
    responses: { 200: { description: 'Readiness per integration', schema: ReadinessReport } },
    handler: async ({ ctx, params, deps }) => {
      const scope = spaceScopeOf(ctx, deps.database);
      const agentId = packageIdOf(params);
      const agent = await resolveRunnableAgent(scope, agentId);
      const plan = await planConnections(scope, integrationDepsOf(deps), {
        packageId: agentId, manifest: agent.manifest, integrations: agent.integrations.map((i) => ({ id: i.id, version: i.version, manifest: i.manifest as never })),
      });
      return ok({ agent_id: agentId, ready: plan.items.every((i) => i.ready), integrations: plan.items });
    },
  }),
  ...(['get', 'post', 'put', 'patch', 'delete'] as const).map(proxyRoute),
];

/** connection_update to the owner's realtime streams in the space, after the change committed. */
function announceConnection(deps: AppDeps, scope: SpaceScope, connection: Record<string, unknown>): Promise<void> {
  return publishConnectionUpdate(deps, {
    orgId: scope.orgId, spaceId: scope.spaceId, userId: scope.actor.endUserId ? null : scope.actor.userId,
    endUserId: scope.actor.endUserId ?? null, connection,
  });
}
