// Runs (spec: Agents and runs). Launch answers 201 at once; reads are offset-paged; GET one run
// long-polls with ?wait; logs are sequence-paged.
import { z } from 'zod';
import { spaceScopeOf } from '../../db/tenant.ts';
import { OffsetQuery, limitParam, SequenceQuery, listText, offsetList, offsetPage, sequenceList, sequencePage } from '../lists.ts';
import type { RequestContext } from '../context.ts';
import type { AppDeps } from '../deps.ts';
import { created, noContent, ok, route } from '../route.ts';
import { cancelRun, deleteRun, extendSink, readRun, readRunLogs, waitSeconds } from '../services/runs/control.ts';
import { launchAgentRun, type LaunchContext } from '../services/runs/launch.ts';
import { resumeRun } from '../services/runs/resume.ts';
import { integrationDepsOf } from '../services/integrations/context.ts';
import { listRunWire } from '../services/runs/records.ts';
import { requirePackageInSpace } from '../services/packages/placement.ts';
import { packageScopeOf } from '../services/packages/access.ts';
import { isProblem, problem } from '../../lib/problem.ts';
import type { SpaceScope } from '../../db/tenant.ts';
import { RunSchema, RunListSchema, RunLogListSchema, AgentParams, agentIdOf, LaunchModelSettingsBody } from './run-schemas.ts';

const IdParams = z.object({ id: z.string() });

/** After this process changed a run of the caller's space: its next read must show the change. */
export function runChanged<T>(deps: AppDeps, ctx: RequestContext, result: T): T {
  if (ctx.space) deps.runReads?.changed(ctx.space.id);
  return result;
}

export function launchContext(ctx: RequestContext, deps: AppDeps): LaunchContext {
  return {
    config: deps.config, secrets: deps.secrets, permissions: ctx.permissions, submitter: deps.submitter ?? null,
    packageScope: () => packageScopeOf(ctx, deps), integrations: integrationDepsOf(deps),
  };
}

/** An agent that lives or is placed in the space (switched off still lists its past runs). */
export async function requireAgentInSpace(scope: SpaceScope, agentId: string): Promise<void> {
  const notFound = () => problem('agent_not_found', { detail: `No agent ${agentId} is reachable in this space.` });
  try {
    const pkg = await requirePackageInSpace(scope, agentId);
    if (pkg.type !== 'agent') throw notFound();
  } catch (err) {
    if (isProblem(err) && err.code === 'package_not_active_in_space') return;
    if (isProblem(err) && (err.code === 'package_not_found' || err.code === 'package_not_placed')) throw notFound();
    throw err;
  }
}

function callerKey(ctx: RequestContext): string {
  const p = ctx.principal!;
  return p.apiKeyId ? `key:${p.apiKeyId}` : `user:${p.userId}`;
}

export const runRoutes = [
  route({
    method: 'post', path: '/api/agents/{scope}/{name}/run', summary: 'Launch a run of an agent', tag: 'Runs',
    location: (b) => `/api/runs/${b.id}`,
    permission: 'agents:run', rateLimit: { perMinute: 20 }, idempotent: true, params: AgentParams,
    body: z.object({
      input: z.record(z.string(), z.unknown()).optional(),
      rerun_from: z.string().optional().describe('a run of the same agent whose input, model and model settings are reused where the body omits them'),
      version: z.string().optional().describe('exact version, dist-tag or semver range; default: the latest'),
      source: z.string().optional().describe(
        'draft: run the agent\'s draft as it is at launch (needs agents:write in its home space; not with version); '
        + 'published (default): a published version. Anything else is 400 invalid_source',
      ),
      model_id: z.string().optional(),
      model_settings: LaunchModelSettingsBody.optional(),
    }).strict(),
    responses: { 201: { description: 'The run, pending', schema: RunSchema } },
    handler: async ({ ctx, params, body, deps }) =>
      created(runChanged(deps, ctx, await launchAgentRun(spaceScopeOf(ctx, deps.database), launchContext(ctx, deps), agentIdOf(params), body))),
  }),
  route({
    method: 'get', path: '/api/agents/{scope}/{name}/runs', summary: "List an agent's runs (offset-paged, default 50)", tag: 'Runs',
    permission: 'runs:read', params: AgentParams, query: OffsetQuery.extend({ limit: limitParam({ def: 50, max: 100 }) }),
    responses: { 200: { description: 'A page of runs', schema: RunListSchema } },
    handler: async ({ ctx, params, query, req, deps }) => {
      const page = offsetPage(query, { def: 50, max: 100 });
      const scope = spaceScopeOf(ctx, deps.database);
      const agentId = agentIdOf(params);
      await requireAgentInSpace(scope, agentId);
      const { items, total } = await listRunWire(scope, ctx.permissions, page, { agentId }, deps.runReads);
      const { body, headers } = offsetList(req, page, items, total);
      return ok(listText(body), headers);
    },
  }),
  route({
    method: 'get', path: '/api/runs', summary: 'List runs of the space (offset-paged)', tag: 'Runs',
    permission: 'runs:read', query: OffsetQuery.extend({ status: z.enum(['pending', 'running', 'success', 'failed', 'timeout', 'cancelled']).optional() }),
    responses: { 200: { description: 'A page of runs', schema: RunListSchema } },
    handler: async ({ ctx, query, req, deps }) => {
      const page = offsetPage(query);
      const { items, total } = await listRunWire(spaceScopeOf(ctx, deps.database), ctx.permissions, page, { status: query.status }, deps.runReads);
      const { body, headers } = offsetList(req, page, items, total);
      return ok(listText(body), headers);
    },
  }),
  route({
    method: 'get', path: '/api/runs/{id}', summary: 'Read a run; ?wait=<seconds>|true long-polls up to 55 s for a terminal status', tag: 'Runs',
    permission: 'runs:read', params: IdParams, query: z.object({
      wait: z.union([z.literal('true'), z.coerce.number().min(0)]).optional().describe('seconds to wait for a terminal status, or true for the maximum (55)'),
    }),
    responses: { 200: { description: 'The run', schema: RunSchema } },
    handler: async ({ ctx, params, query, req, res, deps }) => {
      const seconds = waitSeconds(query.wait);
      // Only a long poll needs to notice the client leaving early.
      let signal: AbortSignal | undefined;
      if (seconds > 0) {
        const aborted = new AbortController();
        req.once('close', () => {
          if (!res.writableEnded) aborted.abort();
        });
        signal = aborted.signal;
      }
      return ok(await readRun(spaceScopeOf(ctx, deps.database), ctx.permissions, params.id, seconds, deps.runFeed ?? null, deps.runReads ?? null, callerKey(ctx), signal));
    },
  }),
  route({
    method: 'get', path: '/api/runs/{id}/logs', summary: "Read a run's log entries after a sequence", tag: 'Runs',
    permission: 'runs:read', rateLimit: { perMinute: 120 }, params: IdParams, query: SequenceQuery,
    responses: { 200: { description: 'Log entries in sequence order', schema: RunLogListSchema } },
    handler: async ({ ctx, params, query, req, deps }) => {
      const page = sequencePage(query);
      const rows = await readRunLogs(spaceScopeOf(ctx, deps.database), ctx.permissions, params.id, page);
      const { body, headers } = sequenceList(req, page, rows);
      return ok(body, headers);
    },
  }),
  route({
    method: 'post', path: '/api/runs/{id}/cancel', summary: 'Cancel a pending or running run', tag: 'Runs',
    permission: 'runs:cancel', params: IdParams,
    body: z.object({ reason: z.string().max(500).optional() }).strict(),
    responses: { 200: { description: 'The cancelled run', schema: RunSchema } },
    handler: async ({ ctx, params, body, deps }) =>
      ok(runChanged(deps, ctx, await cancelRun(spaceScopeOf(ctx, deps.database), ctx.permissions, params.id, deps.runs, body.reason))),
  }),
  route({
    method: 'post', path: '/api/runs/{id}/resume', tag: 'Runs',
    summary: 'Resume a failed or timed-out run from its last checkpoint, as a new run (resumed_from)',
    location: (b) => `/api/runs/${b.id}`,
    // the authority of a launch, in the run's space (a run is found only in the request's space)
    permission: 'agents:run', rateLimit: { perMinute: 20 }, idempotent: true, params: IdParams,
    body: z.object({}).strict().optional(),
    responses: {
      201: { description: 'The new run, pending: same agent version, input, model, model settings and actor; resumed_from names the original', schema: RunSchema },
      409: { description: 'no_checkpoint: the run completed no step; run_in_progress: it is pending or running; run_not_resumable: it ended success or cancelled' },
    },
    handler: async ({ ctx, params, deps }) =>
      created(runChanged(deps, ctx, await resumeRun(spaceScopeOf(ctx, deps.database), launchContext(ctx, deps), params.id))),
  }),
  route({
    method: 'delete', path: '/api/runs/{id}', summary: 'Delete a finished run and its logs', tag: 'Runs',
    permission: 'runs:delete', params: IdParams,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ ctx, params, deps }) => {
      await deleteRun(spaceScopeOf(ctx, deps.database), ctx.permissions, params.id);
      runChanged(deps, ctx, null);
      return noContent();
    },
  }),
  route({
    method: 'patch', path: '/api/runs/{id}/sink/extend', summary: "Extend the run's event sink", tag: 'Runs',
    permission: 'agents:run', rateLimit: { perMinute: 30 }, params: IdParams,
    body: z.object({ seconds: z.number().int().min(60).max(86_400).default(3600) }).strict(),
    responses: { 200: { description: 'The new expiry', schema: z.object({ expiresAt: z.string() }) } },
    handler: async ({ ctx, params, body, deps }) => ok(await extendSink(spaceScopeOf(ctx, deps.database), ctx.permissions, params.id, body.seconds)),
  }),
];
