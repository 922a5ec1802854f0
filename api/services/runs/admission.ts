// Admission: a run is inserted only if the organization is under its concurrency cap and launch
// rate, decided atomically in the database (db/functions.sql admit_run), so every replica shares
// the same count.
import type { Config } from '../../../lib/config.ts';
import { problem } from '../../../lib/problem.ts';
import type { OrgScope } from '../../../db/tenant.ts';

/** The run row as admit_run inserts it (every NOT NULL column, snake_case as in the table). */
export type NewRunRow = Record<string, unknown> & { id: string; org_id: string };

export async function admitRun(scope: OrgScope, config: Config, row: NewRunRow): Promise<void> {
  const limits = config.PLATFORM_RUN_LIMITS;
  const now = Date.now();
  const minute = Math.floor(now / 60_000);
  const { rows } = await scope.pool.query<{ outcome: string }>('SELECT admit_run($1, $2, $3, $4, $5::jsonb) AS outcome', [
    scope.orgId,
    limits.max_concurrent_per_org,
    limits.per_org_global_rate_per_min,
    minute,
    JSON.stringify(row),
  ]);
  const outcome = rows[0].outcome;
  if (outcome === 'concurrency') {
    throw problem('org_run_concurrency_exceeded', {
      detail: `The organization already has ${limits.max_concurrent_per_org} runs pending or running.`,
      retryAfter: 5,
    });
  }
  if (outcome === 'rate') {
    const retryAfter = Math.max(1, Math.ceil(((minute + 1) * 60_000 - now) / 1000));
    throw problem('org_run_rate_limited', {
      detail: `The organization launched ${limits.per_org_global_rate_per_min} runs this minute.`,
      retryAfter,
    });
  }
}
