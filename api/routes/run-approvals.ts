// Approvals of a run's tool calls (issue 33): the requests of a run, oldest first, and a person's
// decision on one. Reading needs the run to be readable; deciding needs runs:approve as well.
import { z } from 'zod';
import { spaceScopeOf } from '../../db/tenant.ts';
import { ok, route } from '../route.ts';
import { decideApproval, listApprovals, MAX_REASON } from '../services/runs/approvals.ts';
import { ApprovalListSchema, ApprovalSchema } from './run-schemas.ts';
import { runChanged } from './runs.ts';

const RunParams = z.object({ id: z.string() });
const ApprovalParams = z.object({ id: z.string(), approval_id: z.string() });

export const runApprovalRoutes = [
  route({
    method: 'get', path: '/api/runs/{id}/approvals', summary: "List a run's approval requests, oldest first", tag: 'Runs',
    permission: 'runs:read', params: RunParams,
    responses: { 200: { description: 'The approval requests of the run', schema: ApprovalListSchema } },
    handler: async ({ ctx, params, deps }) =>
      ok({ object: 'list', data: await listApprovals(spaceScopeOf(ctx, deps.database), ctx.permissions, params.id), hasMore: false }),
  }),
  route({
    method: 'post', path: '/api/runs/{id}/approvals/{approval_id}', summary: 'Approve or reject a pending tool call of a running run', tag: 'Runs',
    permission: 'runs:approve', rateLimit: { perMinute: 60 }, idempotent: true, params: ApprovalParams,
    body: z.object({
      decision: z.enum(['approve', 'reject']),
      reason: z.string().max(MAX_REASON).optional().describe('told to the agent with a rejection, and kept on the request'),
    }).strict(),
    responses: {
      200: { description: 'The decided request', schema: ApprovalSchema },
      404: { description: 'not_found: no such run readable by the caller, or no such request of it' },
      409: { description: 'approval_already_decided: the request was decided or expired; run_not_running: the run has ended' },
    },
    handler: async ({ ctx, params, body, deps }) =>
      ok(runChanged(deps, ctx, await decideApproval(spaceScopeOf(ctx, deps.database), ctx.permissions, params.id, params.approval_id, body, deps.runs))),
  }),
];
