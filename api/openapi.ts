// The OpenAPI 3.1 document, generated from the same zod schemas that validate requests, so it
// cannot drift from the code. Built once after the modules load; served with a strong ETag.
import { createHash } from 'node:crypto';
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { errorCatalog } from '../lib/error-catalog.ts';
import { SPACE_TOKEN_SCOPES } from '../lib/permissions.ts';
import { CURRENT_API_VERSION } from './middleware/api-version.ts';
import type { RouteDef } from './route.ts';

/** The effective-permission rule per credential kind and the end-user allowlist, as the README states them. */
const BEARER_DESCRIPTION = [
  'An API key (apst_...) or an OIDC access token. Every operation declares what it needs (x-permission: a permission, several joined by | of which any one suffices, or signed-in);',
  'the effective permissions are the person\'s current role cut to what the credential was granted:',
  'API key: its scopes ∩ its creator\'s role, bound to its organization and space;',
  'API key with Service-User: eu_...: the same permissions as the key, acting as that end-user of its space (their own runs, files and connections);',
  'organization-level token: consented scopes ∩ the person\'s role, bound to the client\'s organization;',
  'instance-level token: consented scopes ∩ the person\'s role, in the organization and space of X-Org-Id / X-Space-Id;',
  `space-level (end-user) token: the allowlist ${SPACE_TOKEN_SCOPES.join(', ')} ∩ the consented scopes, acting as that end-user`,
  '(their own runs, their own files, the realtime streams of their own runs) in the client\'s space only.',
  'A credential bound to an organization or space is refused (403) when the path, a header, the query or the body names another one.',
  'Operations secured by the session scheme only refuse every API key and every token.',
].join(' ');

export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    instance: z.string(),
    code: z.string(),
    request_id: z.string(),
    param: z.string().optional(),
    retry_after: z.number().int().optional(),
    errors: z.array(z.object({
      field: z.string(),
      code: z.string(),
      message: z.string(),
      title: z.string().optional(),
      // run-launch readiness failures (missing_integration_connection)
      packageId: z.string().optional(),
      auth_key: z.string().nullable().optional(),
      required_auth_key: z.string().optional(),
      available_auth_keys: z.array(z.string()).optional(),
      connection_id: z.string().nullable().optional(),
      owned_by_actor: z.boolean().optional(),
      candidate_connections: z.array(z.object({ id: z.string(), label: z.string(), account_id: z.string(), owned_by_actor: z.boolean(), needs_reconnection: z.boolean() })).optional(),
      required_scopes: z.array(z.string()).optional(),
      missing_scopes: z.array(z.string()).optional(),
      connect_url: z.string().nullable().optional(),
      expiresAt: z.string().nullable().optional(),
    }).passthrough()).optional(),
  })
  .meta({ id: 'Problem' });

const PROBLEM_STATUSES = [400, 401, 403, 404, 409, 413, 429, 500, 503];

// the project declares no license (package.json is private): all rights reserved until it picks one
const LICENSE = { name: 'UNLICENSED' };

const problemContent = { 'application/problem+json': { schema: ProblemSchema } };

// Response headers, declared once and referenced by every response of the families that carry them.
const RESPONSE_HEADERS: Record<string, { description: string; schema: Record<string, unknown> }> = {
  'Request-Id': { description: 'Identifier of this request (req_<uuid>), also in problem documents.', schema: { type: 'string', pattern: '^req_' } },
  RateLimit: { description: 'limit=<n>, remaining=<n>, reset=<seconds> of this route and caller.', schema: { type: 'string' } },
  'RateLimit-Policy': { description: '<n>;w=<window seconds>: the limit of this route.', schema: { type: 'string' } },
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 0 } },
  Link: { description: 'RFC 8288 links to the next, prev, first and last pages where they apply.', schema: { type: 'string' } },
  ETag: { description: 'Strong validator of the returned representation.', schema: { type: 'string' } },
  'Idempotent-Replayed': { description: 'true when this is the stored response of an earlier request with the same Idempotency-Key.', schema: { type: 'string', enum: ['true'] } },
  Location: { description: 'Path of the created resource.', schema: { type: 'string' } },
  'Service-Version': { description: 'The API version (YYYY-MM-DD) this answer follows.', schema: { type: 'string' } },
  'WWW-Authenticate': { description: 'The Bearer challenge of a request without a valid credential.', schema: { type: 'string' } },
  'Proxy-Status': { description: '<service>; received-status=<upstream status> (RFC 9209) on proxied answers.', schema: { type: 'string' } },
};

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** The response headers of one status of a route, from the families it belongs to. */
function responseHeaders(def: DocumentedRoute, status: number, declared: string[] = []): Record<string, unknown> {
  const names = ['Request-Id'];
  if ((def.stage ?? 'protected') === 'protected') names.push('Service-Version');
  if (status === 401) names.push('WWW-Authenticate');
  if (def.rateLimit) names.push('RateLimit', 'RateLimit-Policy');
  if (status === 429 || status === 503) names.push('Retry-After');
  if (status === 200 && isList(def)) names.push('Link');
  // replays follow authentication, permissions and the rate limit, and 5xx answers are not stored
  if (def.idempotent && status < 500 && ![401, 403, 429].includes(status)) names.push('Idempotent-Replayed');
  if (status === 201 && def.location) names.push('Location');
  for (const name of declared) if (!names.includes(name)) names.push(name);
  return Object.fromEntries(names.map((n) => [n, headerRef(n)]));
}

/** A paged list: its query takes a page size. */
function isList(def: DocumentedRoute): boolean {
  const shape = (def.query as { shape?: Record<string, unknown> } | undefined)?.shape;
  return Boolean(shape && 'limit' in shape) && def.method === 'get';
}

/** Security as the server enforces it: session-only routes refuse API keys. */
function securityOf(def: DocumentedRoute): Array<Record<string, string[]>> {
  if (def.security) return def.security;
  const stage = def.stage ?? 'protected';
  // /api/auth/* routes that act on the signed-in session read only its cookie
  if (stage === 'auth') return def.sessionOnly ? [{ session: [] }] : [];
  if (stage !== 'protected') return [];
  return def.sessionOnly ? [{ session: [] }] : [{ bearer: [] }, { session: [] }];
}

/** Query, path and header values are strings on the wire: a coerced parameter is never null. */
function dropNull(schema: Record<string, any>): void {
  if (Array.isArray(schema.type)) {
    const types = schema.type.filter((t: string) => t !== 'null');
    schema.type = types.length === 1 ? types[0] : types;
  }
  if (Array.isArray(schema.anyOf)) {
    schema.anyOf = schema.anyOf.filter((s: Record<string, any>) => s.type !== 'null');
    for (const s of schema.anyOf) dropNull(s);
  }
}

/**
 * An operation as the document declares it. Routes of the route table are these; a module's
 * handler serves others (the OpenID provider's endpoints), declared without a handler.
 */
export type DocumentedRoute = Omit<RouteDef<any, any, any>, 'handler'> & {
  /** security as the operation enforces it, when the stage's rule does not say it */
  security?: Array<Record<string, string[]>>;
};

export interface OpenApiDocument {
  json: string;
  etag: string;
  document: Record<string, unknown>;
}

export interface DocumentInfo {
  version: string;
  /** PUBLIC_URL; without it the server is relative to where the document was fetched */
  serverUrl?: string;
  /** the session cookie's real name (<SESSION_COOKIE_PREFIX>.session_token) */
  sessionCookie: string;
}

function requestBodyOf(def: DocumentedRoute) {
  if (def.bodyContent) return { content: Object.fromEntries(Object.entries(def.bodyContent).map(([type, schema]) => [type, { schema }])), required: true };
  if (def.body) return { content: { 'application/json': { schema: def.body } }, required: true };
  return undefined;
}

export function buildOpenApiDocument(routes: DocumentedRoute[], info: DocumentInfo): OpenApiDocument {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer', description: BEARER_DESCRIPTION });
  registry.registerComponent('securitySchemes', 'session', { type: 'apiKey', in: 'cookie', name: info.sessionCookie, description: 'The session cookie set by sign-in.' });
  for (const [name, header] of Object.entries(RESPONSE_HEADERS)) registry.registerComponent('headers', name, header as never);

  for (const def of routes) {
    // runner-only routes are verified by signature and are no part of the public contract
    if (def.stage === 'internal' || def.path.startsWith('/internal/')) continue;
    const stage = def.stage ?? 'protected';
    const pathParams = [...def.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    const paramsSchema = def.params ?? (pathParams.length ? z.object(Object.fromEntries(pathParams.map((p) => [p, z.string()]))) : undefined);
    const headers = [...(def.headers ?? [])];
    if (stage === 'protected') {
      headers.push({ name: 'Service-Version', description: `API version (YYYY-MM-DD); current ${CURRENT_API_VERSION}.` });
      if (def.tenant !== 'none') headers.push({ name: 'X-Org-Id', description: 'Organization (sessions and instance tokens).' });
      if ((def.tenant ?? 'space') === 'space') headers.push({ name: 'X-Space-Id', description: 'Space (sessions and instance tokens).' });
      if (!def.sessionOnly) headers.push({ name: 'Service-User', description: 'An end-user id (eu_...): an API key acts on behalf of that end-user of its space.' });
      headers.push({ name: 'X-View-As', description: 'Owners and admins with a session: preview this operation as a lesser role, <org role> or <org role>:<space role key> (refused with an API key).' });
    }
    if (def.idempotent) headers.push({ name: 'Idempotency-Key', description: 'Replays the stored response for 24 hours (up to 255 characters).' });

    const responses: Record<string, unknown> = {};
    for (const [status, spec] of Object.entries(def.responses)) {
      const headers = responseHeaders(def, Number(status), spec.headers);
      if (spec.schema) responses[status] = { description: spec.description, headers, content: { [spec.contentType ?? 'application/json']: { schema: spec.schema } } };
      // every error leaves as a problem document, declared with a schema or not, but for the
      // OpenID provider's browser pages, which declare their HTML
      else if (Number(status) >= 400 && spec.contentType !== 'text/html') responses[status] = { description: spec.description, headers, content: problemContent };
      else if (spec.contentType) responses[status] = { description: spec.description, headers, content: { [spec.contentType]: { schema: /json/.test(spec.contentType) ? { type: 'object' } : { type: 'string' } } } };
      else responses[status] = { description: spec.description, headers };
    }
    const takesBody = Boolean(def.body || def.rawBody || def.idempotent);
    for (const status of PROBLEM_STATUSES) {
      if (responses[status]) continue;
      if (status === 401 && stage !== 'protected') continue;
      if (status === 429 && !def.rateLimit) continue;
      if (status === 413 && !takesBody) continue;
      // the starting and draining gates stand before every route but the public ones
      if (status === 503 && stage === 'public') continue;
      responses[status] = { description: 'Problem document (RFC 9457).', headers: responseHeaders(def, status), content: problemContent };
    }
    // a key reused with another request, on the routes that honour keys
    if (def.idempotent && !responses[422]) responses[422] = { description: 'idempotency_conflict', headers: responseHeaders(def, 422), content: problemContent };
    const parameterObjects = headers.map((h) => ({ name: h.name, in: 'header' as const, required: h.required ?? false, schema: { type: 'string' as const }, description: h.description }));

    registry.registerPath({
      method: def.method,
      path: def.path,
      summary: def.summary,
      tags: [def.tag],
      operationId: `${def.method}_${def.path.replace(/[{}]/g, '').replace(/[^a-zA-Z0-9]+/g, '_').replace(/^_|_$/g, '')}`,
      security: securityOf(def),
      parameters: parameterObjects,
      request: {
        params: paramsSchema as never,
        query: def.query as never,
        body: requestBodyOf(def),
      },
      responses: responses as never,
      // one permission, signed-in, or several joined with " | " (any one of them, also listed in x-permission-any-of)
      ...(def.permission ? { 'x-permission': typeof def.permission === 'string' ? def.permission : def.permission.anyOf.join(' | ') } : {}),
      ...(def.permission && typeof def.permission !== 'string' ? { 'x-permission-any-of': def.permission.anyOf } : {}),
      ...(def.authority ? { 'x-authority': def.authority } : {}),
      ...(def.rateLimit && typeof def.rateLimit.perMinute === 'number' ? { 'x-rate-limit-per-minute': def.rateLimit.perMinute } : {}),
    } as never);
  }

  const generator = new OpenApiGeneratorV31(registry.definitions);
  const document = generator.generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Agent Platform API',
      version: info.version,
      description: `Multi-tenant API for packaging, running and scheduling AI agents. Errors are RFC 9457 problem documents; ${Object.keys(errorCatalog).length} codes are catalogued.`,
      license: LICENSE,
    },
    servers: [{ url: info.serverUrl ?? '/' }],
  }) as unknown as Record<string, unknown>;
  for (const ops of Object.values(document.paths as Record<string, Record<string, { parameters?: Array<{ schema?: Record<string, unknown> }> }>>)) {
    for (const op of Object.values(ops)) for (const p of op.parameters ?? []) if (p.schema) dropNull(p.schema);
  }
  const json = JSON.stringify(document);
  const etag = `"${createHash('sha256').update(json).digest('base64url')}"`;
  return { json, etag, document };
}
