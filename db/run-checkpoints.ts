// A run's latest checkpoint: the step it completed, the conversation so far and the workspace files
// it changed since its start. One row per run, replaced by each later step; the state is sealed
// with the instance key, since tool results and workspace files can hold secrets.
import type pg from 'pg';
import type { SecretBox } from '../lib/crypto.ts';
import type { CheckpointState } from '../lib/run-checkpoints.ts';
import { PARK_ASKED } from './run-parking.ts';

export type { CheckpointState };

/**
 * Keeps the checkpoint unless the run already holds one of a later step; false when the run is not
 * running. A parked run's checkpoint (with pending calls) is kept only while a park was asked, and
 * a completed step's checkpoint of the same step arriving late does not replace it.
 */
export async function storeCheckpoint(pool: pg.Pool, secrets: SecretBox, runId: string, state: CheckpointState, bytes: number): Promise<boolean> {
  const pendingCalls = state.pending?.length ?? 0;
  const { rowCount } = await pool.query(
    `INSERT INTO run_checkpoints (run_id, org_id, space_id, step, state, bytes, pending_calls)
     SELECT id, org_id, space_id, $2, $3, $4, $5 FROM runs WHERE id = $1 AND status IN ('pending', 'running') AND ($5 = 0 OR ${PARK_ASKED})
     ON CONFLICT (run_id) DO UPDATE SET step = EXCLUDED.step, state = EXCLUDED.state, bytes = EXCLUDED.bytes, pending_calls = EXCLUDED.pending_calls, created_at = clock_timestamp()
       WHERE run_checkpoints.step < EXCLUDED.step
          OR (run_checkpoints.step = EXCLUDED.step AND (EXCLUDED.pending_calls > 0 OR run_checkpoints.pending_calls = 0))`,
    [runId, state.step, secrets.seal(JSON.stringify(state)), bytes, pendingCalls],
  );
  // a checkpoint of an earlier step than the stored one changes nothing, and is no failure
  if (rowCount === 0) {
    const { rows } = await pool.query(`SELECT 1 FROM runs WHERE id = $1 AND status IN ('pending', 'running')`, [runId]);
    return rows.length > 0;
  }
  return true;
}

/** The run's latest checkpoint's step, looked up within its organization and space; null when none. */
export async function checkpointStep(pool: pg.Pool, where: { orgId: string; spaceId: string }, runId: string): Promise<number | null> {
  const { rows } = await pool.query<{ step: number }>(
    'SELECT step FROM run_checkpoints WHERE run_id = $1 AND org_id = $2 AND space_id = $3', [runId, where.orgId, where.spaceId]);
  return rows[0]?.step ?? null;
}

/** The run's latest checkpoint, opened; null when none (looked up within its organization and space). */
export async function readCheckpoint(pool: pg.Pool, secrets: SecretBox, where: { orgId: string; spaceId: string }, runId: string): Promise<CheckpointState | null> {
  const { rows } = await pool.query<{ state: string }>(
    'SELECT state FROM run_checkpoints WHERE run_id = $1 AND org_id = $2 AND space_id = $3', [runId, where.orgId, where.spaceId]);
  return rows[0] ? (JSON.parse(secrets.open(rows[0].state)) as CheckpointState) : null;
}

/**
 * The checkpoint a run starts from, and whose it is: for a resumed run, the last checkpoint of the
 * run it resumes; null when the run starts afresh. Boot restores its files and the agent continues
 * its conversation: this is the one place that decides, so a run booted again from its own
 * checkpoint (parked, then woken) needs only a rule here.
 */
export async function startingCheckpoint(pool: pg.Pool, secrets: SecretBox, runId: string): Promise<{ fromRunId: string; state: CheckpointState } | null> {
  const { rows } = await pool.query<{ org_id: string; space_id: string; resumed_from: string | null; parked: boolean }>(
    'SELECT org_id, space_id, resumed_from, parked_at IS NOT NULL AS parked FROM runs WHERE id = $1', [runId]);
  const run = rows[0];
  // a run that parked starts its next sandbox from its own latest checkpoint
  if (run?.parked) {
    const own = await readCheckpoint(pool, secrets, { orgId: run.org_id, spaceId: run.space_id }, runId);
    if (own) return { fromRunId: runId, state: own };
  }
  if (!run?.resumed_from) return null;
  const state = await readCheckpoint(pool, secrets, { orgId: run.org_id, spaceId: run.space_id }, run.resumed_from);
  return state ? { fromRunId: run.resumed_from, state } : null;
}
