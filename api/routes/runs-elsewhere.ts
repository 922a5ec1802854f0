// Runs of agents not stored as packages (inline) and runs executed elsewhere (remote).
import { z } from 'zod';
import { spaceScopeOf } from '../../db/tenant.ts';
import { created, ok, route } from '../route.ts';
import { launchInlineRun, validateInlineRun } from '../services/runs/launch-inline.ts';
import { launchRemoteRun } from '../services/runs/launch-remote.ts';
import { launchContext, runChanged } from './runs.ts';
import { LaunchModelSettingsBody, RunSchema } from './run-schemas.ts';

const InlineBody = z.object({
  manifest: z.record(z.string(), z.unknown()).describe('an AFPS 0.3 agent manifest'),
  prompt: z.string(),
  input: z.record(z.string(), z.unknown()).optional(),
  model_id: z.string().optional(),
  model_settings: LaunchModelSettingsBody.optional(),
}).strict();
const RemoteSink = z.object({
  events_url: z.string(),
  secret: z.string(),
  expiresAt: z.string(),
  connections_url: z.string().describe("GET {connections_url}/{connection_id}?integration=<id>, signed with the secret like an event: a bound connection's current credential"),
  connections: z.array(z.object({
    integration_package_id: z.string(),
    integration_version: z.string(),
    auth_key: z.string().nullable(),
    connection_id: z.string().nullable().describe('null: the integration declares no auths and is used without a connection'),
  })).describe('the connections the run bound to its integrations at creation (as an agent run of the caller would use)'),
});
const INLINE_LIMIT = { perMinute: (c: { INLINE_RUN_LIMITS: { rate_per_min: number } }) => c.INLINE_RUN_LIMITS.rate_per_min };

export const runsElsewhereRoutes = [
  route({
    method: 'post', path: '/api/runs/inline', summary: 'Run an agent given inline (manifest and prompt)', tag: 'Runs',
    location: (b) => `/api/runs/${b.id}`,
    permission: 'agents:run', rateLimit: INLINE_LIMIT, idempotent: true, body: InlineBody,
    responses: { 201: { description: 'The run, pending', schema: RunSchema } },
    handler: async ({ ctx, body, deps }) => created(runChanged(deps, ctx, await launchInlineRun(spaceScopeOf(ctx, deps.database), launchContext(ctx, deps), body))),
  }),
  route({
    method: 'post', path: '/api/runs/inline/validate', summary: 'Check an inline run without launching it', tag: 'Runs',
    permission: 'agents:run', rateLimit: INLINE_LIMIT, body: InlineBody,
    responses: { 200: { description: 'Valid: the normalized manifest and input', schema: z.object({ valid: z.literal(true), manifest: z.unknown(), input: z.unknown() }) } },
    handler: async ({ ctx, body, deps }) => {
      const { manifest, input } = await validateInlineRun(spaceScopeOf(ctx, deps.database), launchContext(ctx, deps), body);
      return ok({ valid: true, manifest, input });
    },
  }),
  route({
    method: 'post', path: '/api/runs/remote', summary: 'Create a run executed elsewhere; answers its event sink once', tag: 'Runs',
    location: (b) => `/api/runs/${b.id}`,
    permission: 'agents:run', idempotent: true,
    rateLimit: { perMinute: (c) => c.PLATFORM_RUN_LIMITS.per_org_global_rate_per_min },
    body: z.object({
      packageId: z.string(),
      version: z.string().optional(),
      input: z.record(z.string(), z.unknown()).optional(),
      timeout_seconds: z.number().int().positive().optional(),
    }).strict(),
    responses: { 201: { description: 'The run and its sink (the secret is shown once)', schema: RunSchema.extend({ sink: RemoteSink }) } },
    handler: async ({ ctx, body, deps }) => {
      const base = deps.config.PUBLIC_URL ?? deps.config.INTERNAL_API_URL ?? `http://${deps.config.HOST}:${deps.config.PORT}`;
      return created(runChanged(deps, ctx, await launchRemoteRun(spaceScopeOf(ctx, deps.database), launchContext(ctx, deps), body, base.replace(/\/+$/, ''))));
    },
  }),
];
