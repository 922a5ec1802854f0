// The OpenAPI 3.1 document, generated from the same zod schemas that validate requests, so it
// cannot drift from the code. Built once after the modules load; served with a strong ETag.
import { createHash } from 'node:crypto';
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { errorCatalog } from '../lib/error-catalog.ts';
import { CURRENT_API_VERSION } from './middleware/api-version.ts';
import type { RouteDef } from './route.ts';

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
    errors: z.array(z.object({ field: z.string(), code: z.string(), message: z.string() }).passthrough()).optional(),
  })
  .meta({ id: 'Problem' });

const PROBLEM_STATUSES = [400, 401, 403, 404, 409, 413, 429, 500, 503];

// the project declares no license (package.json is private): all rights reserved until it picks one
const LICENSE = { name: 'UNLICENSED' };

const problemContent = { 'application/problem+json': { schema: ProblemSchema } };

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

export function buildOpenApiDocument(routes: RouteDef<any, any, any>[], info: DocumentInfo): OpenApiDocument {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer', description: 'An API key (apst_...) or an OIDC access token.' });
  registry.registerComponent('securitySchemes', 'session', { type: 'apiKey', in: 'cookie', name: info.sessionCookie, description: 'The session cookie set by sign-in.' });

  for (const def of routes) {
    const stage = def.stage ?? 'protected';
    const pathParams = [...def.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    const paramsSchema = def.params ?? (pathParams.length ? z.object(Object.fromEntries(pathParams.map((p) => [p, z.string()]))) : undefined);
    const headers = [...(def.headers ?? [])];
    if (stage === 'protected') {
      headers.push({ name: 'Service-Version', description: `API version (YYYY-MM-DD); current ${CURRENT_API_VERSION}.` });
      if (def.tenant !== 'none') headers.push({ name: 'X-Org-Id', description: 'Organization (sessions and instance tokens).' });
      if ((def.tenant ?? 'space') === 'space') headers.push({ name: 'X-Space-Id', description: 'Space (sessions and instance tokens).' });
    }
    if (def.idempotent) headers.push({ name: 'Idempotency-Key', description: 'Replays the stored response for 24 hours (up to 255 characters).' });

    const responses: Record<string, unknown> = {};
    for (const [status, spec] of Object.entries(def.responses)) {
      if (spec.schema) responses[status] = { description: spec.description, content: { [spec.contentType ?? 'application/json']: { schema: spec.schema } } };
      // every error leaves as a problem document, declared with a schema or not
      else if (Number(status) >= 400) responses[status] = { description: spec.description, content: problemContent };
      else responses[status] = { description: spec.description };
    }
    const takesBody = Boolean(def.body || def.rawBody || def.idempotent);
    for (const status of PROBLEM_STATUSES) {
      if (responses[status]) continue;
      if (status === 401 && stage !== 'protected') continue;
      if (status === 429 && !def.rateLimit) continue;
      if (status === 413 && !takesBody) continue;
      // the starting and draining gates stand before every route but the public ones
      if (status === 503 && stage === 'public') continue;
      responses[status] = { description: 'Problem document (RFC 9457).', content: problemContent };
    }
    const parameterObjects = headers.map((h) => ({ name: h.name, in: 'header' as const, required: h.required ?? false, schema: { type: 'string' as const }, description: h.description }));

    registry.registerPath({
      method: def.method,
      path: def.path,
      summary: def.summary,
      tags: [def.tag],
      operationId: `${def.method}_${def.path.replace(/[{}]/g, '').replace(/[^a-zA-Z0-9]+/g, '_').replace(/^_|_$/g, '')}`,
      security: stage === 'protected' ? [{ bearer: [] }, { session: [] }] : [],
      parameters: parameterObjects,
      request: {
        params: paramsSchema as never,
        query: def.query as never,
        body: def.body ? { content: { 'application/json': { schema: def.body } }, required: true } : undefined,
      },
      responses: responses as never,
      ...(def.permission ? { 'x-permission': def.permission } : {}),
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
  const json = JSON.stringify(document);
  const etag = `"${createHash('sha256').update(json).digest('base64url')}"`;
  return { json, etag, document };
}
