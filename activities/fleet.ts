// The fleet of sandbox hosts in the database (migration 0036): each worker records itself and
// beats; a run is placed on a fresh, undrained worker with the fewest runs in flight, and the
// placement is recorded on the run (`runs.worker_id`), so every later step reaches that worker.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import type { FleetActivities } from '../workflows/run-types.ts';

export interface FleetSettings {
  heartbeatSeconds: number;
  lostHeartbeats: number;
}

/** Seconds without a heartbeat after which a worker is lost (and takes no runs). */
export function lossWindowSeconds(s: FleetSettings): number {
  return s.heartbeatSeconds * s.lostHeartbeats;
}

/** The configured id, else the one kept in the data directory (made at the first start). */
export function workerIdFor(dataDir: string, configured: string | undefined): string {
  if (configured) return configured;
  const file = path.join(dataDir, 'worker-id');
  if (fs.existsSync(file)) {
    const kept = fs.readFileSync(file, 'utf8').trim();
    if (/^[A-Za-z0-9]{1,32}$/.test(kept)) return kept;
  }
  const id = `w${randomBytes(6).toString('hex')}`;
  fs.writeFileSync(file, id, { mode: 0o600 });
  return id;
}

/** Records the worker as alive (and not draining) at its endpoint; a worker coming back keeps its row. */
export async function joinFleet(pool: pg.Pool, workerId: string, endpointUrl: string): Promise<void> {
  await pool.query(
    `INSERT INTO workers (id, endpoint_url) VALUES ($1, $2)
     ON CONFLICT (id) DO UPDATE SET endpoint_url = EXCLUDED.endpoint_url, started_at = now(), heartbeat_at = now(), draining = false`,
    [workerId, endpointUrl],
  );
}

export async function beat(pool: pg.Pool, workerId: string): Promise<void> {
  await pool.query('UPDATE workers SET heartbeat_at = now() WHERE id = $1', [workerId]);
}

/** A draining worker takes no new runs; its runs go on to their end. */
export async function setDraining(pool: pg.Pool, workerId: string, draining: boolean): Promise<void> {
  await pool.query('UPDATE workers SET draining = $2 WHERE id = $1', [workerId, draining]);
}

/** The fresh worker whose id the deployment at this address belongs to, if any. */
export async function liveWorkerAt(pool: pg.Pool, endpointUrl: string, s: FleetSettings): Promise<string | null> {
  const { rows } = await pool.query<{ id: string }>(
    `SELECT id FROM workers WHERE rtrim(endpoint_url, '/') = rtrim($1, '/') AND heartbeat_at > now() - make_interval(secs => $2) ORDER BY heartbeat_at DESC LIMIT 1`,
    [endpointUrl, lossWindowSeconds(s)],
  );
  return rows[0]?.id ?? null;
}

export function fleetActivities(pool: pg.Pool, selfId: string, s: FleetSettings): FleetActivities {
  const window = lossWindowSeconds(s);
  return {
    selfId,
    checkMs: s.heartbeatSeconds * 1000,
    async place(runId) {
      // Ties go to chance, so placements made at the same instant spread rather than pile on one worker.
      const { rows } = await pool.query<{ worker_id: string }>(
        `WITH chosen AS (
           SELECT w.id FROM workers w
           WHERE w.heartbeat_at > now() - make_interval(secs => $2) AND NOT w.draining
           ORDER BY (SELECT count(*) FROM runs r WHERE r.worker_id = w.id AND r.status IN ('pending', 'running') AND r.id <> $1), random()
           LIMIT 1)
         UPDATE runs SET worker_id = chosen.id FROM chosen WHERE runs.id = $1 RETURNING runs.worker_id`,
        [runId, window],
      );
      if (rows[0]) return { workerId: rows[0].worker_id };
      const run = await pool.query('SELECT 1 FROM runs WHERE id = $1', [runId]);
      return { error: run.rowCount ? 'no worker of the fleet is taking runs (every one is draining or lost)' : `run ${runId} is unknown` };
    },
    async workerLost(workerId) {
      const { rows } = await pool.query<{ lost: boolean }>(
        'SELECT heartbeat_at < now() - make_interval(secs => $2) AS lost FROM workers WHERE id = $1',
        [workerId, window],
      );
      return rows[0]?.lost ?? true;
    },
    async runStatus(runId) {
      const { rows } = await pool.query<{ status: string }>('SELECT status FROM runs WHERE id = $1', [runId]);
      const status = rows[0]?.status;
      return !status ? 'gone' : status === 'pending' || status === 'running' ? status : 'ended';
    },
  };
}

/** Whether the run is placed on this worker: a worker acts only on the sandboxes of its own runs. */
export async function placedOn(pool: pg.Pool, runId: string, workerId: string): Promise<boolean> {
  const { rows } = await pool.query<{ worker_id: string | null }>('SELECT worker_id FROM runs WHERE id = $1', [runId]);
  return rows[0]?.worker_id === workerId;
}
