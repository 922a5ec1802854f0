// Reading with a long poll, cancelling, deleting runs and extending a run's event sink.
import type { Permission } from '../../../lib/permissions.ts';
import { problem } from '../../../lib/problem.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { finalizeRun } from '../../../db/run-finalization.ts';
import type { RunWorkflowClient } from '../../../workflows/run-client.ts';
import { JsonText } from '../../route.ts';
import type { RunReadCache } from './read-cache.ts';
import { getRunRow, getRunWire, isTerminal } from './records.ts';
import type { RunStatusFeed } from './status-feed.ts';

export const MAX_WAIT_SECONDS = 55;
export const MAX_WAITS_PER_CALLER = 10;
const waitsByCaller = new Map<string, number>();

/** `wait` is seconds or true; values are capped at 55; anything else means no wait. */
export function waitSeconds(raw: unknown): number {
  if (raw === 'true' || raw === true) return MAX_WAIT_SECONDS;
  if (typeof raw === 'number') return raw >= 0 ? Math.min(raw, MAX_WAIT_SECONDS) : 0;
  if (typeof raw === 'string' && /^\d+(\.\d+)?$/.test(raw)) return Math.min(Number(raw), MAX_WAIT_SECONDS);
  return 0;
}

/**
 * The run, after waiting up to `seconds` for a terminal status. A caller already holding the
 * maximum number of waits gets the current state at once.
 */
export async function readRun(
  scope: SpaceScope, permissions: ReadonlySet<Permission>, runId: string, seconds: number,
  feed: RunStatusFeed | null, cache: RunReadCache | null, caller: string, signal?: AbortSignal,
): Promise<JsonText> {
  // A long poll's later reads go to the database: they follow a change just heard.
  let run = await getRunWire(scope, permissions, runId, cache);
  if (seconds <= 0 || isTerminal(run.status) || !feed) return new JsonText(run.json);
  const holding = waitsByCaller.get(caller) ?? 0;
  if (holding >= MAX_WAITS_PER_CALLER) return new JsonText(run.json);
  waitsByCaller.set(caller, holding + 1);
  try {
    const deadline = Date.now() + seconds * 1000;
    while (!isTerminal(run.status) && Date.now() < deadline && !signal?.aborted) {
      // Listen first, then re-read, so a change between the two is not missed.
      const next = feed.next(runId, deadline - Date.now(), signal);
      run = await getRunWire(scope, permissions, runId);
      if (isTerminal(run.status)) break;
      if (!(await next)) break;
      run = await getRunWire(scope, permissions, runId);
    }
  } finally {
    const n = (waitsByCaller.get(caller) ?? 1) - 1;
    if (n <= 0) waitsByCaller.delete(caller);
    else waitsByCaller.set(caller, n);
  }
  return new JsonText(run.json);
}

export async function cancelRun(scope: SpaceScope, permissions: ReadonlySet<Permission>, runId: string, runs: RunWorkflowClient | undefined, reason?: string): Promise<JsonText> {
  const row = await getRunRow(scope, permissions, runId);
  if (isTerminal(row.status)) throw problem('not_cancellable', { detail: `The run is already ${row.status}.` });
  const message = reason ? `Cancelled: ${reason}` : 'Cancelled on request.';
  const { finalized } = await finalizeRun(scope.pool, runId, { status: 'cancelled', error: { code: 'run_cancelled', message } });
  if (!finalized) throw problem('not_cancellable', { detail: 'The run ended meanwhile.' });
  // The workflow tears the sandbox down; if the engine cannot be told now, its liveness check
  // sees the run finalized and stops the sandbox.
  await runs?.cancel(runId, reason).catch(() => {});
  return new JsonText((await getRunWire(scope, permissions, runId)).json);
}

export async function deleteRun(scope: SpaceScope, permissions: ReadonlySet<Permission>, runId: string): Promise<void> {
  const row = await getRunRow(scope, permissions, runId);
  if (!isTerminal(row.status)) throw problem('run_in_progress', { detail: 'A pending or running run cannot be deleted; cancel it first.' });
  await scope.pool.query('DELETE FROM runs WHERE id = $1 AND org_id = $2 AND space_id = $3', [runId, scope.orgId, scope.spaceId]);
}

export async function extendSink(scope: SpaceScope, permissions: ReadonlySet<Permission>, runId: string, seconds: number): Promise<{ expiresAt: string }> {
  const row = await getRunRow(scope, permissions, runId);
  if (isTerminal(row.status)) throw problem('run_not_running', { detail: `The run is ${row.status}.` });
  const { rows } = await scope.pool.query<{ sink_expires_at: Date }>(
    `UPDATE runs SET sink_expires_at = GREATEST(sink_expires_at, now() + make_interval(secs => $2)) WHERE id = $1 RETURNING sink_expires_at`,
    [runId, seconds],
  );
  return { expiresAt: rows[0].sink_expires_at.toISOString() };
}

export interface RunLogEntry {
  sequence: number;
  level: string;
  message: string;
  data: unknown;
  createdAt: string;
}

export async function readRunLogs(scope: SpaceScope, permissions: ReadonlySet<Permission>, runId: string, page: { since: number; limit: number }): Promise<RunLogEntry[]> {
  await getRunRow(scope, permissions, runId);
  const debug = permissions.has('runs:delete') ? '' : ` AND level <> 'debug'`;
  const { rows } = await scope.pool.query<{ sequence: number; level: string; message: string; data: unknown; created_at: Date }>(
    `SELECT sequence, level, message, data, created_at FROM run_logs WHERE run_id = $1 AND sequence > $2${debug} ORDER BY sequence LIMIT $3`,
    [runId, page.since, page.limit + 1],
  );
  return rows.map((r) => ({ sequence: r.sequence, level: r.level, message: r.message, data: r.data, createdAt: r.created_at.toISOString() }));
}
