// Checkpoints as the runner routes take and give them: a run's sidecar posts one after each
// completed step (signed with the run's secret), and a resumed run's sidecar reads the checkpoint
// it starts from. db/run-checkpoints.ts stores them, sealed.
import type pg from 'pg';
import type { SecretBox } from '../../../lib/crypto.ts';
import { problem } from '../../../lib/problem.ts';
import { parseCheckpointState } from '../../../lib/run-checkpoints.ts';
import { startingCheckpoint, storeCheckpoint } from '../../../db/run-checkpoints.ts';
import { openSink } from './events.ts';
import { isTerminal } from './records.ts';

interface CheckpointDeps {
  pool: pg.Pool;
  secrets: SecretBox;
}

const SINK_CLOSED = 'The run has ended; it records no more checkpoints.';

/** Verifies, checks and keeps a checkpoint the run's sidecar posted (the latest step wins). */
export async function recordRunCheckpoint(deps: CheckpointDeps, runId: string, headers: Record<string, string | undefined>, raw: Buffer): Promise<void> {
  const { sink } = await openSink(deps, runId, headers, raw);
  if (isTerminal(sink.status)) throw problem('run_sink_closed', { detail: SINK_CLOSED });
  if (sink.sink_expires_at.getTime() < Date.now()) throw problem('run_sink_expired', { detail: 'The run event sink has expired.' });
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw problem('invalid_request', { detail: 'The checkpoint is not valid JSON.' });
  }
  let state;
  try {
    state = parseCheckpointState(body);
  } catch (err) {
    throw problem('invalid_request', { detail: (err as Error).message });
  }
  if (!(await storeCheckpoint(deps.pool, deps.secrets, runId, state, raw.length))) throw problem('run_sink_closed', { detail: SINK_CLOSED });
}

/**
 * What a resumed run's agent starts from: the conversation of the checkpoint it was resumed from,
 * and which workspace paths that checkpoint restored or removed (boot already wrote the files).
 * null for a run that starts afresh.
 */
export async function checkpointToResumeFrom(deps: CheckpointDeps, runId: string, headers: Record<string, string | undefined>) {
  await openSink(deps, runId, headers, Buffer.alloc(0));
  const found = await startingCheckpoint(deps.pool, deps.secrets, runId);
  if (!found) return null;
  const { state } = found;
  return { object: 'run_checkpoint' as const, from_run: found.fromRunId, step: state.step, messages: state.messages, files: state.files.map((f) => f.path), removed: state.removed,
    ...(state.pending ? { pending: state.pending } : {}) };
}
