// Sandboxes do not depend on their workflow to be stopped: a workflow killed in the engine runs
// no teardown. Every sweep, this worker stops the sandboxes whose run has ended or is unknown
// (the reconciler finalizes runs whose workflow is gone, so their sandboxes follow a sweep later),
// and those whose run is placed on another worker (it was lost meanwhile and the run booted again
// elsewhere: the sandbox, adopted when the worker came back, no longer reports for it).
import type pg from 'pg';
import type { Logger } from '../../lib/log.ts';
import { runEvery, type Periodic } from '../../lib/periodic.ts';
import type { SandboxAdapter } from './adapter.ts';

/**
 * Stops the sandboxes whose run is no longer pending or running, or (given this worker's id) is
 * placed on another worker; answers their ids.
 */
export async function reapEndedSandboxes(pool: pg.Pool, adapter: Pick<SandboxAdapter, 'sandboxes' | 'stop'>, workerId?: string): Promise<string[]> {
  const live = adapter.sandboxes();
  if (live.length === 0) return [];
  const { rows } = await pool.query<{ id: string }>(
    `SELECT id FROM runs WHERE id = ANY($1::text[]) AND status IN ('pending', 'running')
       AND ($2::text IS NULL OR worker_id IS NULL OR worker_id = $2)`,
    [[...new Set(live.map((s) => s.runId))], workerId ?? null],
  );
  const open = new Set(rows.map((r) => r.id));
  const ended = live.filter((s) => !open.has(s.runId));
  await Promise.all(ended.map((s) => adapter.stop(s.sandboxId)));
  return ended.map((s) => s.sandboxId);
}

/** Reaps every `everySeconds`, one pass at a time. */
export function startSandboxReaper(pool: pg.Pool, adapter: SandboxAdapter, everySeconds: number, log: Logger, workerId?: string): Periodic {
  return runEvery(everySeconds * 1000, async () => {
    const ids = await reapEndedSandboxes(pool, adapter, workerId);
    if (ids.length) log.info('sandboxes of ended runs stopped by the reaper', { sandbox_ids: ids });
  }, (err) => log.warn('sandbox reaping failed', { error: String(err) }));
}
