// The run's model budget as its sidecar enforces it: the run's own limit, and what its
// organization had left of the month when the run started. Every model call passes here, so the
// usage counted is the run's whole usage. Reaching a limit ends the run failed with its code.
import type { RunMetricData } from '../lib/run-events.ts';
import type { SpendLimit } from './assignment.ts';

export type BudgetCode = 'run_budget_exceeded' | 'org_budget_exceeded';

export interface BudgetReached {
  code: BudgetCode;
  message: string;
}

function reachedLimit(limit: SpendLimit | null, tokens: number, costUsd: number): string | null {
  if (!limit) return null;
  if (limit.maxTokens !== null && tokens >= limit.maxTokens) return `${tokens} of ${limit.maxTokens} tokens`;
  if (limit.maxCostUsd !== null && costUsd >= limit.maxCostUsd) return `${costUsd} of ${limit.maxCostUsd} USD`;
  return null;
}

export class ModelBudget {
  private tokens = 0;
  private costUsd = 0;

  constructor(private readonly limits: { run: SpendLimit | null; org: SpendLimit | null }) {}

  count(metric: RunMetricData): void {
    this.tokens += (metric.prompt_tokens ?? 0) + (metric.completion_tokens ?? 0);
    this.costUsd += metric.cost_usd ?? 0;
  }

  /** The limit the run has reached, or null while it may call its model. */
  reached(): BudgetReached | null {
    const run = reachedLimit(this.limits.run, this.tokens, this.costUsd);
    if (run) return { code: 'run_budget_exceeded', message: `The run used up its model budget (${run}).` };
    const org = reachedLimit(this.limits.org, this.tokens, this.costUsd);
    if (org) return { code: 'org_budget_exceeded', message: `The organization's monthly model budget is used up (this run: ${org} left at its start).` };
    return null;
  }
}
