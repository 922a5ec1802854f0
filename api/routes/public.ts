// Credential-free routes: health, the OpenAPI document, the interactive reference, /llms.txt.
import { z } from 'zod';
import { ok, route, type Reply, type RouteDef } from '../route.ts';
import type { OpenApiDocument } from '../openapi.ts';

export interface PublicDocs {
  openapi?: OpenApiDocument;
  llms?: string;
  llmsFull?: string;
}

const Health = z.object({ status: z.enum(['ok', 'starting', 'draining']) });
const Readiness = z.object({
  status: z.enum(['ok', 'starting', 'draining', 'unavailable']),
  /** present when a part the API depends on does not answer */
  checks: z.record(z.string(), z.enum(['ok', 'unreachable'])).optional(),
  /** present while the instance serves below what it should (`sandbox_unconfined`: agents run without confinement) */
  warnings: z.array(z.object({ code: z.string(), detail: z.string() })).optional(),
});

const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Agent Platform API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/api/docs/assets/swagger-ui.css"></head>
<body><div id="reference"></div>
<script src="/api/docs/assets/swagger-ui-bundle.js"></script>
<script src="/api/docs/reference.js"></script>
</body></html>`;
// Tags start closed: Swagger UI (5.x) windows a list of 150 rows (tags plus open operations) or
// more, keeping only those near the viewport in the page, which showed as three tags and a blank
// stretch. Closed, the 26 tags are all there, and an opened tag shows every operation it holds.
const DOCS_JS = `window.ui = SwaggerUIBundle({ url: '/api/openapi.json', dom_id: '#reference', deepLinking: true, docExpansion: 'none', filter: true });`;

export function publicRoutes(docs: PublicDocs): RouteDef<any, any, any>[] {
  return [
    route({
      method: 'get', path: '/health/live', summary: 'Liveness: the process answers', tag: 'Health', stage: 'public',
      responses: { 200: { description: 'Alive', schema: Health } },
      handler: async () => ok({ status: 'ok' }),
    }),
    route({
      method: 'get', path: '/health/ready', summary: 'Readiness: boot completed, not draining, and the database and workflow engine answer', tag: 'Health', stage: 'public',
      responses: { 200: { description: 'Ready', schema: Readiness }, 503: { description: 'Starting, draining, or a dependency does not answer', schema: Readiness } },
      handler: async ({ deps }): Promise<Reply> => {
        const lc = deps.lifecycle;
        if (!lc.ready) return { status: 503, body: { status: 'starting' }, headers: { 'Retry-After': '1' } };
        if (lc.draining) return { status: 503, body: { status: 'draining' } };
        const answers = await lc.dependencies();
        const warnings = lc.warnings.length ? { warnings: lc.warnings } : {};
        if (Object.values(answers).every(Boolean)) return ok({ status: 'ok', ...warnings });
        const checks = Object.fromEntries(Object.entries(answers).map(([name, up]) => [name, up ? 'ok' : 'unreachable']));
        return { status: 503, body: { status: 'unavailable', checks, ...warnings }, headers: { 'Retry-After': '1' } };
      },
    }),
    route({
      method: 'get', path: '/api/openapi.json', summary: 'The OpenAPI 3.1 document of this instance', tag: 'Meta', stage: 'public',
      responses: { 200: { description: 'OpenAPI document', contentType: 'application/json', headers: ['ETag'] }, 304: { description: 'Not modified', headers: ['ETag'] } },
      handler: async ({ req }): Promise<Reply> => {
        const doc = docs.openapi!;
        const inm = req.headers['if-none-match'];
        // If-None-Match compares weakly (RFC 9110): W/"x" matches "x".
        if (inm && inm.split(',').some((t) => t.trim().replace(/^W\//, '') === doc.etag || t.trim() === '*')) {
          return { status: 304, headers: { ETag: doc.etag } };
        }
        return { status: 200, body: doc.json, headers: { ETag: doc.etag, 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-cache' } };
      },
    }),
    route({
      method: 'get', path: '/api/docs', summary: 'Interactive API reference', tag: 'Meta', stage: 'public',
      responses: { 200: { description: 'HTML page', contentType: 'text/html' } },
      handler: async () => ({ status: 200, body: DOCS_HTML, headers: { 'Content-Type': 'text/html; charset=utf-8' } }),
    }),
    route({
      method: 'get', path: '/api/docs/reference.js', summary: 'Script of the interactive reference', tag: 'Meta', stage: 'public',
      responses: { 200: { description: 'JavaScript', contentType: 'text/javascript' } },
      handler: async () => ({ status: 200, body: DOCS_JS, headers: { 'Content-Type': 'text/javascript; charset=utf-8' } }),
    }),
    route({
      method: 'get', path: '/llms.txt', summary: 'Index of this API for language models', tag: 'Meta', stage: 'public',
      responses: { 200: { description: 'Markdown index', contentType: 'text/plain' } },
      handler: async () => ({ status: 200, body: docs.llms ?? '', headers: { 'Content-Type': 'text/plain; charset=utf-8' } }),
    }),
    route({
      method: 'get', path: '/llms-full.txt', summary: 'Every operation with its schemas in compact form, for language models', tag: 'Meta', stage: 'public',
      responses: { 200: { description: 'Markdown', contentType: 'text/plain' } },
      handler: async () => ({ status: 200, body: docs.llmsFull ?? '', headers: { 'Content-Type': 'text/plain; charset=utf-8' } }),
    }),
  ];
}
