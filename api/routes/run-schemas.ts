// Wire schemas of runs, shared by the run routes (documented in the OpenAPI document).
import { z } from 'zod';
import { problem } from '../../lib/problem.ts';
import { TOTAL_WINDOW } from '../lists.ts';

export const AgentParams = z.object({ scope: z.string(), name: z.string() });

/** `@scope` + `name` from the path, as the package id `@scope/name`. */
export function agentIdOf(params: { scope: string; name: string }): string {
  const scope = params.scope.startsWith('@') ? params.scope : `@${params.scope}`;
  if (!/^@[a-z0-9][a-z0-9-]*$/.test(scope) || !/^[a-z0-9][a-z0-9._-]*$/.test(params.name)) {
    throw problem('agent_not_found', { detail: `No agent ${scope}/${params.name} is reachable in this space.` });
  }
  return `${scope}/${params.name}`;
}

/** A launch's own model settings, checked against the run's model (its defaults fill what is unset). */
export const LaunchModelSettingsBody = z.object({
  temperature: z.number().min(0).max(2).optional(),
  reasoning_effort: z.string().min(1).max(32).optional().describe('one of the reasoning levels the model accepts'),
}).strict().describe(
  'per-run model settings, the defaults of every model call of the run (a call that sets its own is checked the same way); '
  + 'refused with 400 reasoning_unsupported, reasoning_level_unsupported, temperature_unsupported or '
  + 'temperature_with_reasoning_unsupported when the run\'s model does not accept them together with its own defaults',
);

const RunError = z.object({ code: z.string(), message: z.string(), details: z.unknown().optional() });

export const RunSchema = z.object({
  id: z.string(),
  object: z.literal('run'),
  status: z.enum(['pending', 'running', 'success', 'failed', 'timeout', 'cancelled']),
  kind: z.enum(['agent', 'inline', 'remote']),
  packageId: z.string(),
  agent_version: z.string().describe('the version run; for a draft run, the version its draft manifest declares'),
  source: z.enum(['draft', 'published']).nullable().describe('what an agent run executed: its draft (launched with source: draft) or a published version; null for inline runs'),
  draft_integrity: z.string().nullable().describe('for a draft run, the content hash (sha256-<base64> tree integrity) of the draft as launched; else null'),
  spaceId: z.string(),
  input: z.unknown(),
  result: z.object({ output: z.unknown() }).nullable(),
  error: RunError.nullable(),
  triggered_by: z.object({
    kind: z.enum(['member', 'end_user', 'schedule', 'api_key']),
    userId: z.string().nullable(),
    api_key_id: z.string().nullable(),
    end_user_id: z.string().nullable(),
    schedule_id: z.string().nullable(),
  }),
  rerun_of: z.string().nullable(),
  resumed_from: z.string().nullable().describe('the failed or timed-out run this one was resumed from (POST /api/runs/{id}/resume): it started from that run\'s last checkpoint; else null'),
  model_id: z.string().nullable(),
  model_settings: z.object({ temperature: z.number().nullable(), reasoning_effort: z.string().nullable() }).nullable()
    .describe('the model settings the launch asked for (null: none, the model\'s defaults apply)'),
  timeout_seconds: z.number().int(),
  cost: z.object({ usd: z.number(), prompt_tokens: z.number().int(), completion_tokens: z.number().int() }),
  createdAt: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  duration_ms: z.number().nullable(),
  awaiting: z.object({
    kind: z.literal('approval'),
    approval_id: z.string(),
    since: z.string(),
    parked: z.boolean().describe('always false on this platform: the sandbox is held while the run waits'),
  }).optional().describe('what the running run waits for (a person\'s approval of a tool call); absent when nothing is awaited'),
}).meta({ id: 'Run' });

export const ApprovalSchema = z.object({
  id: z.string().describe('apr_...'),
  object: z.literal('approval'),
  run_id: z.string(),
  tool: z.string().describe('the tool as the agent sees it'),
  arguments: z.unknown().describe('the arguments of the call awaiting approval'),
  status: z.enum(['pending', 'approved', 'rejected', 'expired']),
  requested_at: z.string(),
  decided_at: z.string().nullable(),
  decided_by: z.object({ userId: z.string().nullable(), api_key_id: z.string().nullable(), end_user_id: z.string().nullable() }).nullable()
    .describe('who decided; null while pending and when the request expired'),
  reason: z.string().nullable(),
}).meta({ id: 'Approval' });

export const ApprovalListSchema = z.object({ object: z.literal('list'), data: z.array(ApprovalSchema), hasMore: z.boolean() });

export const RunListSchema = z.object({
  object: z.literal('list'), data: z.array(RunSchema), hasMore: z.boolean(),
  total: z.number().int().optional().describe(
    `runs matching the list's filter, counted up to ${TOTAL_WINDOW} past the page's offset: exact unless total_capped is true, `
    + `in which case at least this many match (offset + ${TOTAL_WINDOW}) and no rel="last" link is given`,
  ),
  total_capped: z.literal(true).optional().describe('present when total is a lower bound rather than the exact count'),
  limit: z.number().int().optional(),
});

export const RunLogSchema = z.object({ sequence: z.number().int(), level: z.enum(['debug', 'info', 'warn', 'error']), message: z.string(), data: z.unknown(), createdAt: z.string() });
export const RunLogListSchema = z.object({ object: z.literal('list'), data: z.array(RunLogSchema), hasMore: z.boolean(), limit: z.number().int(), next_since: z.number().int() });
