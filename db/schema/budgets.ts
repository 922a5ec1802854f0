// Model-usage budgets of an organization (optional) and its model usage per calendar month (UTC).
import { bigint, date, doublePrecision, pgTable, primaryKey, timestamp, uuid } from 'drizzle-orm/pg-core';
import { organizations } from './identity.ts';

export const orgBudgets = pgTable('org_budgets', {
  orgId: uuid('org_id').primaryKey().references(() => organizations.id, { onDelete: 'cascade' }),
  /** each run's model tokens (prompt + completion); null: no limit */
  runMaxTokens: bigint('run_max_tokens', { mode: 'number' }),
  runMaxCostUsd: doublePrecision('run_max_cost_usd'),
  /** the organization's tokens per calendar month (UTC); null: no limit */
  monthlyMaxTokens: bigint('monthly_max_tokens', { mode: 'number' }),
  monthlyMaxCostUsd: doublePrecision('monthly_max_cost_usd'),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});

/** Counted by a trigger on run_usage (db/functions.sql): every model call of every run. */
export const orgModelUsage = pgTable('org_model_usage', {
  orgId: uuid('org_id').notNull().references(() => organizations.id, { onDelete: 'cascade' }),
  periodStart: date('period_start').notNull(),
  tokens: bigint('tokens', { mode: 'number' }).notNull().default(0),
  costUsd: doublePrecision('cost_usd').notNull().default(0),
}, (t) => [primaryKey({ name: 'org_model_usage_pk', columns: [t.orgId, t.periodStart] })]);
