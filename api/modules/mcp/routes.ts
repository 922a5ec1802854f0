// The mcp module's routes: the endpoint (POST only), its protected-resource metadata, and the 405
// every other method of the endpoint answers.
import { z } from 'zod';
import { problem } from '../../../lib/problem.ts';
import type { AppDeps } from '../../deps.ts';
import type { ModuleHandler } from '../../app.ts';
import { ok, route, type RouteDef } from '../../route.ts';
import { createCatalogLoader } from './catalog.ts';
import { createMcpExchange, ENVELOPES_PER_MINUTE, MCP_ROUTE } from './endpoint.ts';
import { challengeFor, MCP_PATH_PREFIX, METADATA_PREFIX, protectedResourceMetadata } from './protected-resource.ts';

const TAG = 'MCP';
const OrgParams = z.object({ org: z.uuid() });

const JsonRpcId = z.union([z.string(), z.number().int()]);
const JsonRpcMessage = z.object({
  jsonrpc: z.literal('2.0'),
  id: JsonRpcId.optional(),
  method: z.string().optional(),
  params: z.record(z.string(), z.unknown()).optional(),
  result: z.record(z.string(), z.unknown()).optional(),
  error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
}).meta({ id: 'JsonRpcMessage', description: 'A JSON-RPC 2.0 request, notification or response (MCP).' });
const JsonRpcResponse = z.object({
  jsonrpc: z.literal('2.0'),
  id: JsonRpcId.nullable(),
  result: z.record(z.string(), z.unknown()).optional(),
  error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
}).meta({ id: 'JsonRpcResponse', description: 'A JSON-RPC 2.0 response (MCP).' });

const Metadata = z.object({
  resource: z.string(),
  authorization_servers: z.array(z.string()),
  scopes_supported: z.array(z.string()),
  bearer_methods_supported: z.array(z.string()),
  resource_name: z.string(),
}).meta({ id: 'ProtectedResourceMetadata', description: 'OAuth 2.0 protected-resource metadata (RFC 9728).' });

const ENDPOINT = /^\/api\/mcp\/o\/[^/]+\/?$/;

export function mcpRoutes(deps: AppDeps): RouteDef<any, any, any>[] {
  const exchange = createMcpExchange(deps, createCatalogLoader());
  return [
    route({
      method: 'post', path: MCP_ROUTE, tag: TAG,
      summary: 'The organization\'s MCP endpoint (streamable HTTP, stateless): search, describe and invoke the API\'s operations under your own permissions',
      tenant: 'org', permission: 'mcp:read', orgParam: 'org',
      rateLimit: { perMinute: ENVELOPES_PER_MINUTE },
      challenge: (req) => challengeFor(deps.config, req, req.params.org ?? ''),
      params: OrgParams,
      rawBody: true,
      bodyContent: { 'application/json': z.union([JsonRpcMessage, z.array(JsonRpcMessage)]) },
      headers: [{ name: 'MCP-Protocol-Version', description: 'The negotiated MCP revision (2025-11-25 or 2025-06-18), after initialize.' }],
      responses: {
        200: { description: 'The JSON-RPC responses to the requests sent', schema: z.union([JsonRpcResponse, z.array(JsonRpcResponse)]) },
        202: { description: 'Notifications or responses accepted; nothing to answer' },
      },
      handler: async ({ req, res, params }) => exchange(req, res, params.org),
    }),
    route({
      method: 'get', path: `${METADATA_PREFIX}${MCP_PATH_PREFIX}{org}`, tag: TAG, stage: 'public', tenant: 'none',
      summary: 'OAuth protected-resource metadata of the organization\'s MCP endpoint (RFC 9728)',
      params: OrgParams,
      responses: { 200: { description: 'The metadata', schema: Metadata } },
      handler: async ({ req, params }) => ok(protectedResourceMetadata(deps.config, req, params.org)),
    }),
  ];
}

/** Every method of the endpoint but POST (which the route table serves) answers 405. */
export function mcpMethodGuard(): ModuleHandler {
  return async (req) => {
    if (!ENDPOINT.test(req.path) || req.method === 'POST') return false;
    throw problem('method_not_allowed', { detail: 'The MCP endpoint answers POST only (stateless streamable HTTP).', headers: { Allow: 'POST' } });
  };
}
