// The run an LLM proxy call is made for (X-Run-Id) and its money: the run's and the organization's
// budgets checked before the provider is called, the call's usage written to the run's cost ledger
// after (record_proxy_usage), and the run ended once its own budget is used up. Every endpoint of
// the proxy goes through these, whatever shape its provider's usage takes.
import { budgetPeriod, orgOverBudget, readOrgBudget, runOverBudget, type BudgetLimits, type OrgBudgetState } from '../../../db/budgets.ts';
import { finalizeRun } from '../../../db/run-finalization.ts';
import { problem } from '../../../lib/problem.ts';
import type { AppDeps } from '../../deps.ts';

export interface OpenRun {
  id: string;
  org_id: string;
  space_id: string;
  model_id: string | null;
  /** the run's own model settings (launch model_settings), the defaults before the model's */
  model_settings: { temperature?: number | null; reasoning_effort?: string | null } | null;
  prompt_tokens: string;
  completion_tokens: string;
  cost_usd: number;
}

export interface CallUsage {
  prompt: number;
  completion: number;
  cost: number;
}

/** The open run X-Run-Id names in the caller's space, or usage_context_required. */
export async function usageContext(deps: AppDeps, header: string | string[] | undefined, orgId: string, spaceId: string): Promise<OpenRun> {
  const runId = typeof header === 'string' ? header.trim() : '';
  if (!/^run_[A-Za-z0-9_-]{1,100}$/.test(runId)) {
    throw problem('usage_context_required', { param: 'X-Run-Id', detail: 'Platform model calls need X-Run-Id naming a run of this space.' });
  }
  const { rows } = await deps.database.pool.query<OpenRun>(
    `SELECT id, org_id, space_id, model_id, model_settings, prompt_tokens, completion_tokens, cost_usd FROM runs
      WHERE id = $1 AND org_id = $2 AND space_id = $3 AND status IN ('pending', 'running')`,
    [runId, orgId, spaceId],
  );
  if (!rows[0]) throw problem('usage_context_required', { param: 'X-Run-Id', detail: 'X-Run-Id names no open run of this space.' });
  return rows[0];
}

const count = (v: unknown) => Math.max(0, Math.trunc(Number(v) || 0));

/**
 * A provider's usage object as the ledger counts it: chat completions and embeddings say
 * prompt_tokens (and completion_tokens), the Responses API input_tokens and output_tokens;
 * `cost` where the provider gives one (OpenRouter).
 */
export function usageOf(value: unknown): CallUsage | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const u = value as Record<string, unknown>;
  return {
    prompt: count(u.prompt_tokens ?? u.input_tokens),
    completion: count(u.completion_tokens ?? u.output_tokens),
    cost: typeof u.cost === 'number' && Number.isFinite(u.cost) ? u.cost : 0,
  };
}

/**
 * Before the provider is called: a run over its own budget ends (run_budget_exceeded); an
 * organization over its month is refused (org_budget_exceeded), its runs going on.
 */
export async function checkBudgets(deps: AppDeps, run: OpenRun): Promise<OrgBudgetState> {
  const budget = await readOrgBudget(deps.database.pool, run.org_id);
  if (runOverBudget(budget.limits, Number(run.prompt_tokens) + Number(run.completion_tokens), run.cost_usd)) {
    await endOverBudget(deps, run, budget.limits);
    throw problem('run_budget_exceeded', { detail: `The run ${run.id} used up its model budget and has ended.` });
  }
  if (orgOverBudget(budget)) {
    throw problem('org_budget_exceeded', { detail: `The organization used up its monthly model budget; it resets at ${budgetPeriod().resetsAt.toISOString()}.` });
  }
  return budget;
}

/** After an answered call: its usage in the run's ledger; the call that crossed the run's budget ends the run. */
export async function recordUsage(deps: AppDeps, run: OpenRun, budget: OrgBudgetState, model: string, used: CallUsage): Promise<void> {
  const { rows } = await deps.database.pool.query<{ prompt_tokens: string; completion_tokens: string; cost_usd: number }>(
    'SELECT * FROM record_proxy_usage($1, $2, $3, $4, $5)',
    [run.id, model, used.prompt, used.completion, used.cost],
  );
  deps.runReads?.changed(run.space_id);
  const total = rows[0];
  if (total && runOverBudget(budget.limits, Number(total.prompt_tokens) + Number(total.completion_tokens), Number(total.cost_usd))) {
    await endOverBudget(deps, run, budget.limits);
  }
}

/** Fails the run run_budget_exceeded (once) and tells its workflow to tear down. */
async function endOverBudget(deps: AppDeps, run: OpenRun, limits: BudgetLimits): Promise<void> {
  const message = `The run used up its model budget (${describeLimits(limits)}).`;
  const { finalized } = await finalizeRun(deps.database.pool, run.id, { status: 'failed', error: { code: 'run_budget_exceeded', message } });
  if (!finalized) return;
  deps.runReads?.changed(run.space_id);
  await deps.runs?.cancel(run.id, 'run_budget_exceeded').catch(() => {});
}

function describeLimits(limits: BudgetLimits): string {
  const parts = [];
  if (limits.run_max_tokens !== null) parts.push(`${limits.run_max_tokens} tokens`);
  if (limits.run_max_cost_usd !== null) parts.push(`${limits.run_max_cost_usd} USD`);
  return parts.join(', ');
}
