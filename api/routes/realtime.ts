// Realtime (spec: Realtime (Server-Sent Events)): three streams of run events. Each route checks
// what a read of the same resource checks, then hands the response to the hub (services/realtime).
import { z } from 'zod';
import { spaceScopeOf } from '../../db/tenant.ts';
import { problem } from '../../lib/problem.ts';
import type { RequestContext } from '../context.ts';
import type { AppDeps } from '../deps.ts';
import type { Request, Response } from '../http.ts';
import { handled, route, type Reply } from '../route.ts';
import { streamAccess } from '../services/realtime/access.ts';
import { EVENT_NAMES } from '../services/realtime/stream.ts';
import { getRunWire } from '../services/runs/records.ts';
import { sessionCookieName } from '../services/session-cookie.ts';
import { requireAgentInSpace } from './runs.ts';

const TAG = 'Realtime';
const PACKAGE_ID = /^@[a-z0-9][a-z0-9-]*\/[a-z0-9][a-z0-9._-]*$/;

const StreamQuery = z.object({
  token: z.string().optional().describe('an API key (apst_...), for clients that cannot send headers; OIDC tokens are not accepted here'),
  orgId: z.string().optional().describe('the organization, with a session cookie (instead of X-Org-Id)'),
  spaceId: z.string().optional().describe('the space, with a session cookie (instead of X-Space-Id)'),
  channels: z.string().optional().describe(`comma list of event names (${EVENT_NAMES.join(', ')}); unknown names are ignored; none left means every event`),
  verbose: z.enum(['true', 'false']).optional().describe('true: run_update carries the whole run and run_log its data; false (the default): summaries'),
  view_as: z.string().optional().describe('role preview (<org role> or <org role>:<space role key>), for owners and admins with a session; X-View-As is refused here'),
});
type StreamQuery = z.infer<typeof StreamQuery>;

const STREAM = {
  200: {
    description: 'A text/event-stream of run_update, run_log, run_metric, connection_update and ping events; frame ids are <subscriber>:<n>',
    contentType: 'text/event-stream',
    schema: z.string(),
  },
};

/** The names asked for that exist; null (every event) when none is left. */
export function parseChannels(raw: string | undefined): ReadonlySet<string> | null {
  if (!raw) return null;
  const known = new Set<string>(EVENT_NAMES);
  const asked = raw.split(',').map((s) => s.trim()).filter((s) => known.has(s));
  return asked.length ? new Set(asked) : null;
}

function openStream(
  { ctx, query, req, res, deps }: { ctx: RequestContext; query: StreamQuery; req: Request; res: Response; deps: AppDeps },
  filter: { runId?: string; agentId?: string },
  snapshot?: () => Promise<Record<string, unknown>>,
): Promise<Reply> {
  const hub = deps.realtime;
  if (!hub) throw problem('starting', { retryAfter: 1, detail: 'Realtime streams are not served yet.' });
  // a stream opened now would be cut at once: the client is better served by another instance
  if (deps.lifecycle.draining) throw problem('shutting_down', { retryAfter: deps.lifecycle.drainSeconds, detail: 'The server is shutting down; reconnect to another instance.' });
  const access = streamAccess(req, deps.database.pool, sessionCookieName(deps.config));
  const stream = hub.open(res, {
    audience: { orgId: ctx.org!.id, spaceId: ctx.space!.id, userId: ctx.principal!.userId, endUserId: ctx.endUserId ?? null, permissions: ctx.permissions },
    ...filter,
    channels: parseChannels(query.channels),
    verbose: query.verbose === 'true',
    ...access,
  });
  // registered first, read second: a change committed in between is held, not lost
  return (snapshot ? snapshot() : Promise.resolve(undefined)).then((s) => {
    stream.start(s);
    return handled();
  });
}

export const realtimeRoutes = [
  route({
    method: 'get', path: '/api/realtime/runs/{id}', summary: 'Stream one run; opens with a run_update snapshot', tag: TAG,
    sse: true, tenant: 'space', permission: 'runs:read', params: z.object({ id: z.string() }), query: StreamQuery,
    responses: STREAM,
    handler: async (input) => {
      const { ctx, params, deps } = input;
      const scope = spaceScopeOf(ctx, deps.database);
      // out of reach and missing look the same, before anything is streamed
      await getRunWire(scope, ctx.permissions, params.id);
      return openStream(input, { runId: params.id }, async () => JSON.parse((await getRunWire(scope, ctx.permissions, params.id)).json));
    },
  }),
  route({
    method: 'get', path: '/api/realtime/agents/{packageId}/runs', summary: "Stream every run of an agent (the package id as one encoded path segment, e.g. %40acme%2Fbot)", tag: TAG,
    sse: true, tenant: 'space', permission: 'runs:read', params: z.object({ packageId: z.string() }), query: StreamQuery,
    responses: STREAM,
    handler: async (input) => {
      const { ctx, params, deps } = input;
      if (!PACKAGE_ID.test(params.packageId)) throw problem('agent_not_found', { detail: `No agent ${params.packageId} is reachable in this space.` });
      await requireAgentInSpace(spaceScopeOf(ctx, deps.database), params.packageId);
      return openStream(input, { agentId: params.packageId });
    },
  }),
  route({
    method: 'get', path: '/api/realtime/runs', summary: 'Stream every run of the space the caller may read', tag: TAG,
    sse: true, tenant: 'space', permission: 'runs:read', query: StreamQuery,
    responses: STREAM,
    handler: async (input) => openStream(input, {}),
  }),
];
