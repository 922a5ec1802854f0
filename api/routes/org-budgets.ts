// An organization's model-usage budget (beyond the spec): optional token and cost limits per run
// and per calendar month (UTC), enforced where model traffic passes (each run's sidecar and the
// LLM proxy). Beside the other /api/orgs/{orgId} routes; membership is checked against the path.
import { z } from 'zod';
import { readOrgBudget, writeOrgBudget, type OrgBudgetState } from '../../db/budgets.ts';
import { ok, route } from '../route.ts';
import { reachOrg } from '../services/org-access.ts';

const TAG = 'Organizations';
const OrgParams = z.object({ orgId: z.string() });
const Tokens = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullable();
const Usd = z.number().min(0).max(1e12).nullable();

const OrgBudget = z.object({
  run_max_tokens: Tokens.describe('model tokens (prompt + completion) one run may use; null: no limit'),
  run_max_cost_usd: Usd.describe('model cost in USD one run may incur; null: no limit'),
  monthly_max_tokens: Tokens.describe('model tokens the organization may use per calendar month (UTC); null: no limit'),
  monthly_max_cost_usd: Usd.describe('model cost in USD the organization may incur per calendar month (UTC); null: no limit'),
  usage: z.object({
    period_start: z.string().describe('the first instant of the current month (UTC)'),
    resets_at: z.string().describe('when the monthly usage starts again from zero'),
    tokens: z.number().int(),
    cost_usd: z.number(),
  }),
}).meta({ id: 'OrgBudget' });

function wire(state: OrgBudgetState) {
  return {
    ...state.limits,
    usage: { period_start: state.periodStart.toISOString(), resets_at: state.resetsAt.toISOString(), tokens: state.tokens, cost_usd: state.costUsd },
  };
}

export const orgBudgetRoutes = [
  route({
    method: 'get', path: '/api/orgs/{orgId}/budget', summary: 'The organization\'s model budget and this month\'s usage', tag: TAG,
    tenant: 'none', permission: 'org:read', params: OrgParams,
    responses: { 200: { description: 'The budget (null limits: none) and the usage counted against it', schema: OrgBudget } },
    handler: async ({ ctx, req, deps, params }) => {
      await reachOrg(ctx, req, deps, params.orgId, { permission: 'org:read' });
      return ok(wire(await readOrgBudget(deps.database.pool, params.orgId)));
    },
  }),
  route({
    method: 'put', path: '/api/orgs/{orgId}/budget', summary: 'Set the organization\'s model budget (every limit null removes it)', tag: TAG,
    tenant: 'none', permission: 'org:write', params: OrgParams,
    body: z.object({
      run_max_tokens: Tokens.default(null),
      run_max_cost_usd: Usd.default(null),
      monthly_max_tokens: Tokens.default(null),
      monthly_max_cost_usd: Usd.default(null),
    }).strict(),
    responses: { 200: { description: 'The budget now in force', schema: OrgBudget } },
    handler: async ({ ctx, req, deps, params, body }) => {
      await reachOrg(ctx, req, deps, params.orgId, { permission: 'org:write', write: true });
      await writeOrgBudget(deps.database.pool, params.orgId, body);
      return ok(wire(await readOrgBudget(deps.database.pool, params.orgId)));
    },
  }),
];
