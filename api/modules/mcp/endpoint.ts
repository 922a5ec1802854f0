// POST /api/mcp/o/{org}: one streamable-HTTP exchange with a fresh, stateless MCP server. The
// pipeline has authenticated the caller; here the organization is checked, the envelopes counted
// against the caller's bucket and validated (every refusal a problem document), and the exchange
// answered as JSON.
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { JSONRPCMessageSchema, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { problem } from '../../../lib/problem.ts';
import type { AppDeps } from '../../deps.ts';
import type { Request, Response } from '../../http.ts';
import { readJsonBody } from '../../middleware/body.ts';
import { rateLimitIdentity } from '../../middleware/rate-limit.ts';
import { handled, type Reply } from '../../route.ts';
import type { CatalogLoader } from './catalog.ts';
import { callerOf } from './dispatch.ts';
import { originAllowed } from './protected-resource.ts';
import { buildServer } from './tools.ts';

/** The newest revision the SDK speaks and the one before it; initialize negotiates between them. */
export const PROTOCOL_VERSIONS = [LATEST_PROTOCOL_VERSION, '2025-06-18'] as const;
export const ENVELOPES_PER_MINUTE = 120;
export const MCP_ROUTE = '/api/mcp/o/{org}';
const WINDOW_MS = 60_000;
const MAX_BATCH = 100;

/** The route's limiter counted this request once; a batch counts each of its envelopes. */
async function countEnvelopes(deps: AppDeps, req: Request, res: Response, extra: number): Promise<void> {
  if (extra <= 0) return;
  const key = `rl:POST:${MCP_ROUTE}:${rateLimitIdentity(req, 'caller')}`;
  let last = { count: 0, resetMs: WINDOW_MS };
  for (let i = 0; i < extra; i++) last = await deps.cache.increment(key, WINDOW_MS);
  const reset = Math.max(1, Math.ceil(last.resetMs / 1000));
  res.setHeader('RateLimit', `limit=${ENVELOPES_PER_MINUTE}, remaining=${Math.max(0, ENVELOPES_PER_MINUTE - last.count)}, reset=${reset}`);
  if (last.count > ENVELOPES_PER_MINUTE) {
    throw problem('rate_limited', { retryAfter: reset, detail: `Limit of ${ENVELOPES_PER_MINUTE} MCP envelopes per minute reached.` });
  }
}

function envelopesOf(json: unknown): unknown[] {
  if (json === undefined) throw problem('invalid_request', { detail: 'The body must be a JSON-RPC 2.0 message or a batch of them.' });
  const list = Array.isArray(json) ? json : [json];
  if (list.length === 0 || list.length > MAX_BATCH) throw problem('invalid_request', { detail: `A batch holds from 1 to ${MAX_BATCH} messages.` });
  return list;
}

function validate(list: unknown[]): void {
  const bad = list.findIndex((m) => !JSONRPCMessageSchema.safeParse(m).success);
  if (bad >= 0) throw problem('invalid_request', { detail: `Message ${bad} is not a valid JSON-RPC 2.0 message.` });
  const inits = list.filter((m) => (m as { method?: unknown }).method === 'initialize');
  if (inits.length && list.length > 1) throw problem('invalid_request', { detail: 'An initialize request travels alone.' });
  // a revision the endpoint does not speak is answered with the newest one it does (the client decides)
  for (const m of inits) {
    const params = (m as { params?: { protocolVersion?: unknown } }).params;
    if (params && !PROTOCOL_VERSIONS.includes(params.protocolVersion as never)) params.protocolVersion = LATEST_PROTOCOL_VERSION;
  }
}

export function createMcpExchange(deps: AppDeps, catalog: CatalogLoader) {
  return async function exchange(req: Request, res: Response, org: string): Promise<Reply> {
    // the organization is the path's: a credential bound elsewhere finds nothing here
    if (!req.ctx.org || req.ctx.org.id !== org) throw problem('not_found', { detail: 'No MCP endpoint for this organization is within your reach.' });
    const origin = req.headers.origin;
    if (typeof origin === 'string' && !originAllowed(deps.config, origin)) {
      throw problem('forbidden', { param: 'Origin', detail: 'The MCP endpoint refuses requests from this origin.' });
    }
    const version = req.headers['mcp-protocol-version'];
    if (version !== undefined && !PROTOCOL_VERSIONS.includes(version as never)) {
      throw problem('invalid_request', { param: 'MCP-Protocol-Version', detail: `Supported MCP revisions: ${PROTOCOL_VERSIONS.join(', ')}.` });
    }
    const json = await readJsonBody(req, deps.config.API_BODY_LIMIT_BYTES);
    const list = envelopesOf(json);
    await countEnvelopes(deps, req, res, list.length - 1);
    validate(list);

    const caller = callerOf(req, org);
    const server = buildServer({
      caller,
      catalog: () => catalog(caller),
      permissions: req.ctx.permissions,
      requestId: req.ctx.requestId,
      typeBase: deps.config.ERROR_TYPE_BASE,
    });
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    try {
      await server.connect(transport);
      const headers: Record<string, string> = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
      if (typeof version === 'string') headers['mcp-protocol-version'] = version;
      const answer = await transport.handleRequest(new globalThis.Request(`http://mcp.invalid${req.path}`, { method: 'POST', headers }), { parsedBody: json });
      const body = await answer.text();
      if (answer.status >= 400) {
        let detail = `The MCP exchange was refused (${answer.status}).`;
        try {
          detail = JSON.parse(body).error?.message ?? detail;
        } catch { /* not JSON: keep the status */ }
        throw problem('invalid_request', { detail });
      }
      res.statusCode = answer.status;
      if (body) {
        res.setHeader('Content-Type', 'application/json; charset=utf-8');
        res.end(body);
      } else res.end();
      return handled();
    } finally {
      await server.close().catch(() => {});
    }
  };
}
