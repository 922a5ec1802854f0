// What the rest of the platform calls to put an event on the realtime streams of every instance.
// Publishing never fails the change it reports: a lost realtime event is logged, not raised.
import type pg from 'pg';
import type { Logger } from '../../../lib/log.ts';
import type { RecordedRunEvent } from '../runs/events.ts';
import type { RealtimeHub } from './hub.ts';

interface PublishDeps {
  realtime?: RealtimeHub;
  log: Logger;
}

/** A log entry or usage the run's sidecar just reported (run_log, run_metric). */
export async function publishRunEvent(deps: PublishDeps & { database: { pool: pg.Pool } }, runId: string, recorded: RecordedRunEvent): Promise<void> {
  const hub = deps.realtime;
  if (!hub) return;
  try {
    if (recorded.type === 'log') {
      const d = recorded.data;
      const entry = { sequence: recorded.sequence, level: String(d.level), message: String(d.message), createdAt: new Date().toISOString(), ...(d.data === undefined ? {} : { data: d.data }) };
      await hub.publish({ kind: 'run_log', spaceId: recorded.spaceId, runId, entry });
      return;
    }
    // the running total, as committed (the metric's own figures were added in the same statement)
    const { rows } = await deps.database.pool.query<{ usd: number; prompt_tokens: number; completion_tokens: number }>(
      'SELECT cost_usd AS usd, prompt_tokens, completion_tokens FROM runs WHERE id = $1',
      [runId],
    );
    if (!rows[0]) return;
    const cost = { usd: Number(rows[0].usd), prompt_tokens: Number(rows[0].prompt_tokens), completion_tokens: Number(rows[0].completion_tokens) };
    await hub.publish({ kind: 'run_metric', spaceId: recorded.spaceId, runId, cost });
  } catch (err) {
    deps.log.warn('realtime publish failed', { runId, type: recorded.type, error: String(err) });
  }
}

export interface ConnectionChange {
  orgId: string;
  spaceId: string;
  /** the connection's owner: a member (userId) or an end-user (endUserId) */
  userId: string | null;
  endUserId: string | null;
  /** the connection as its own routes show it (never its secrets) */
  connection: Record<string, unknown>;
}

/**
 * connection_update: one of a caller's own integration connections changed. Call it after the
 * change commits; every stream of the owner in that space, on every instance, receives it.
 */
export async function publishConnectionUpdate(deps: PublishDeps, change: ConnectionChange): Promise<void> {
  if (!deps.realtime) return;
  try {
    await deps.realtime.publish({ kind: 'connection_update', ...change });
  } catch (err) {
    deps.log.warn('realtime publish failed', { type: 'connection_update', error: String(err) });
  }
}

export interface ChatSessionChange {
  orgId: string;
  spaceId: string;
  /** the session's owner */
  userId: string;
  /** what changed: the session record as its routes show it, with the change's name */
  session: Record<string, unknown>;
}

/** chat_session_update: one of a member's chat sessions changed; their session streams hear it. */
export async function publishChatSessionUpdate(deps: PublishDeps, change: ChatSessionChange): Promise<void> {
  if (!deps.realtime) return;
  try {
    await deps.realtime.publish({ kind: 'chat_session_update', ...change });
  } catch (err) {
    deps.log.warn('realtime publish failed', { type: 'chat_session_update', error: String(err) });
  }
}
