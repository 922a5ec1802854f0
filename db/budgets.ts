// Model-usage budgets: an organization's optional limits per run and per calendar month (UTC), and
// what is left of them. Usage is what the runs' cost ledgers recorded (run_usage, counted per
// organization and month by a trigger in db/functions.sql).
import type pg from 'pg';

export interface BudgetLimits {
  run_max_tokens: number | null;
  run_max_cost_usd: number | null;
  monthly_max_tokens: number | null;
  monthly_max_cost_usd: number | null;
}

export interface SpendLimit {
  /** tokens (prompt + completion) still allowed; null: no limit */
  maxTokens: number | null;
  maxCostUsd: number | null;
}

export const NO_LIMITS: BudgetLimits = { run_max_tokens: null, run_max_cost_usd: null, monthly_max_tokens: null, monthly_max_cost_usd: null };

/** The first instant of the calendar month (UTC) `at` falls in, and of the next one. */
export function budgetPeriod(at: Date = new Date()): { start: Date; resetsAt: Date } {
  return {
    start: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1)),
    resetsAt: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1)),
  };
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export interface OrgBudgetState {
  limits: BudgetLimits;
  /** this month's usage */
  tokens: number;
  costUsd: number;
  periodStart: Date;
  resetsAt: Date;
}

/** The organization's limits and this month's usage, in one query. */
export async function readOrgBudget(pool: pg.Pool, orgId: string): Promise<OrgBudgetState> {
  const { start, resetsAt } = budgetPeriod();
  const { rows } = await pool.query(
    `SELECT b.run_max_tokens, b.run_max_cost_usd, b.monthly_max_tokens, b.monthly_max_cost_usd, u.tokens, u.cost_usd
       FROM (SELECT $1::uuid AS org_id) o
       LEFT JOIN org_budgets b ON b.org_id = o.org_id
       LEFT JOIN org_model_usage u ON u.org_id = o.org_id AND u.period_start = $2::date`,
    [orgId, start.toISOString().slice(0, 10)],
  );
  const r = rows[0] ?? {};
  return {
    limits: {
      run_max_tokens: num(r.run_max_tokens),
      run_max_cost_usd: num(r.run_max_cost_usd),
      monthly_max_tokens: num(r.monthly_max_tokens),
      monthly_max_cost_usd: num(r.monthly_max_cost_usd),
    },
    tokens: Number(r.tokens ?? 0),
    costUsd: Number(r.cost_usd ?? 0),
    periodStart: start,
    resetsAt,
  };
}

/** Whether the month's usage has reached a monthly limit. */
export function orgOverBudget(state: OrgBudgetState): boolean {
  const { monthly_max_tokens: tokens, monthly_max_cost_usd: cost } = state.limits;
  return (tokens !== null && state.tokens >= tokens) || (cost !== null && state.costUsd >= cost);
}

/** Whether a run's recorded usage has reached the per-run limits. */
export function runOverBudget(limits: BudgetLimits, tokens: number, costUsd: number): boolean {
  return (limits.run_max_tokens !== null && tokens >= limits.run_max_tokens) || (limits.run_max_cost_usd !== null && costUsd >= limits.run_max_cost_usd);
}

/** What a run's sidecar enforces: the per-run limits, and what the organization has left this month. */
export async function runBudgetAtBoot(pool: pg.Pool, orgId: string): Promise<{ run: SpendLimit | null; org: SpendLimit | null }> {
  const state = await readOrgBudget(pool, orgId);
  const { limits } = state;
  const run = limits.run_max_tokens === null && limits.run_max_cost_usd === null ? null : { maxTokens: limits.run_max_tokens, maxCostUsd: limits.run_max_cost_usd };
  const org = limits.monthly_max_tokens === null && limits.monthly_max_cost_usd === null
    ? null
    : {
      maxTokens: limits.monthly_max_tokens === null ? null : Math.max(0, limits.monthly_max_tokens - state.tokens),
      maxCostUsd: limits.monthly_max_cost_usd === null ? null : Math.max(0, limits.monthly_max_cost_usd - state.costUsd),
    };
  return { run, org };
}

/** Sets (or, with every limit null, removes) the organization's budget. */
export async function writeOrgBudget(pool: pg.Pool, orgId: string, limits: BudgetLimits): Promise<void> {
  if (Object.values(limits).every((v) => v === null)) {
    await pool.query('DELETE FROM org_budgets WHERE org_id = $1', [orgId]);
    return;
  }
  await pool.query(
    `INSERT INTO org_budgets (org_id, run_max_tokens, run_max_cost_usd, monthly_max_tokens, monthly_max_cost_usd, updated_at)
     VALUES ($1, $2, $3, $4, $5, now())
     ON CONFLICT (org_id) DO UPDATE SET run_max_tokens = EXCLUDED.run_max_tokens, run_max_cost_usd = EXCLUDED.run_max_cost_usd,
       monthly_max_tokens = EXCLUDED.monthly_max_tokens, monthly_max_cost_usd = EXCLUDED.monthly_max_cost_usd, updated_at = now()`,
    [orgId, limits.run_max_tokens, limits.run_max_cost_usd, limits.monthly_max_tokens, limits.monthly_max_cost_usd],
  );
}
