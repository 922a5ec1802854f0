// Human approval of tool calls. A run's sidecar asks (signed like its events) before it makes a
// call its manifest gates; the request is stored, the run shows it in `awaiting`, and the run's
// workflow hears of it (it waits on a durable promise named for the approval, with the request's
// timeout as a durable timer). A person decides through the API, or the timer expires it; the
// sidecar reads the decision and makes the call, or tells the model it was refused.
// Every change here announces the run (run_update on the realtime streams) and writes the
// webhook deliveries of run.approval_requested / run.approval_decided in its own transaction.
import { newId } from '../../../lib/ids.ts';
import { problem } from '../../../lib/problem.ts';
import type { Permission } from '../../../lib/permissions.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { inTransaction } from '../../../db/transaction.ts';
import { claimParkedRequest } from '../../../db/run-parking.ts';
import { APPROVAL_WIRE as WIRE, signalApproval, stopAwaiting, type Approval, type ApprovalStatus } from '../../../db/run-approvals.ts';
import type { RunWorkflowClient } from '../../../workflows/run-client.ts';
import { refuseBadJson } from '../../middleware/clean-input.ts';
import { openSink, type IngestDeps } from './events.ts';
import { SINK_TTL_SECONDS } from './launch.ts';
import { getRunRow } from './records.ts';

export type { Approval, ApprovalStatus };

/** The longest a tool name and a reason may be. */
export const MAX_TOOL_NAME = 200;
export const MAX_REASON = 2000;
const MAX_ARGUMENT_BYTES = 256 * 1024;

function parseRequest(raw: Buffer): { tool: string; arguments: Record<string, unknown>; timeoutSeconds: number } {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw problem('invalid_request', { detail: 'The approval request is not valid JSON.' });
  }
  refuseBadJson(body);
  const b = body as { tool?: unknown; arguments?: unknown; timeout_seconds?: unknown };
  if (typeof b?.tool !== 'string' || b.tool === '' || b.tool.length > MAX_TOOL_NAME) {
    throw problem('invalid_request', { detail: `An approval request names its tool (1 to ${MAX_TOOL_NAME} characters).` });
  }
  if (typeof b.arguments !== 'object' || b.arguments === null || Array.isArray(b.arguments)) {
    throw problem('invalid_request', { detail: "An approval request carries the call's arguments as an object." });
  }
  if (!Number.isInteger(b.timeout_seconds) || (b.timeout_seconds as number) < 1) {
    throw problem('invalid_request', { detail: 'An approval request carries its timeout_seconds (a positive integer).' });
  }
  return { tool: b.tool, arguments: b.arguments as Record<string, unknown>, timeoutSeconds: b.timeout_seconds as number };
}

/**
 * The sidecar's request (signed with the run's secret): stored pending, the run's `awaiting` set,
 * the launcher notified, then the workflow told (it starts the expiry timer and pauses the run's
 * timeout). Answers the request.
 */
export async function requestApproval(
  deps: IngestDeps & { log: { warn(message: string, fields?: Record<string, unknown>): void } }, runId: string,
  headers: Record<string, string | undefined>, raw: Buffer,
): Promise<Approval> {
  if (raw.length > MAX_ARGUMENT_BYTES) throw problem('payload_too_large', { detail: `An approval request is at most ${MAX_ARGUMENT_BYTES} bytes.` });
  await openSink(deps, runId, headers, raw);
  const request = parseRequest(raw);
  const id = newId('apr');
  const { approval, sequence } = await inTransaction(deps.pool, async (db): Promise<{ approval: Approval; sequence: number | null }> => {
    const { rows } = await db.query<{ status: string; org_id: string; space_id: string; agent_id: string; actor_user_id: string | null; end_user_id: string | null }>(
      'SELECT status, org_id, space_id, agent_id, actor_user_id, end_user_id FROM runs WHERE id = $1 FOR UPDATE', [runId]);
    const run = rows[0];
    if (!run) throw problem('not_found', { detail: 'No such run.' });
    if (run.status !== 'running') throw problem('run_not_running', { detail: `The run is ${run.status}.` });
    // a run woken from its park makes again the calls it held: each takes the request it made then
    const claimed = await claimParkedRequest(db, runId, request.tool, request.arguments);
    if (claimed) return { approval: claimed, sequence: null };
    const next = await db.query<{ n: number }>('SELECT COALESCE(MAX(sequence), 0) + 1 AS n FROM run_approvals WHERE run_id = $1', [runId]);
    const seq = next.rows[0].n;
    const inserted = await db.query<{ a: Approval; since: string }>(
      `INSERT INTO run_approvals AS a (id, org_id, space_id, run_id, sequence, tool, arguments, timeout_seconds)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${WIRE} AS a, wire_time(a.requested_at) AS since`,
      [id, run.org_id, run.space_id, runId, seq, request.tool, JSON.stringify(request.arguments), request.timeoutSeconds],
    );
    // the sink outlives the longest wait by its usual span, so the run's events are taken after it
    await db.query(
      `UPDATE runs SET awaiting = $2, sink_expires_at = GREATEST(sink_expires_at, now() + make_interval(secs => $3::int + $4::int)) WHERE id = $1`,
      [runId, JSON.stringify({ kind: 'approval', approval_id: id, since: inserted.rows[0].since, parked: false }), request.timeoutSeconds, SINK_TTL_SECONDS],
    );
    if (run.actor_user_id && !run.end_user_id) {
      await db.query(
        `INSERT INTO notifications (id, org_id, space_id, user_id, kind, title, body, subject)
         VALUES (sorted_id('ntf'), $1, $2, $3, 'approval_requested', $4, $5, $6)`,
        [run.org_id, run.space_id, run.actor_user_id, `Run of ${run.agent_id} waits for approval`,
          `Run ${runId} of ${run.agent_id} asks to call ${request.tool}; approve or reject it (${id}).`,
          JSON.stringify({ run_id: runId, package_id: run.agent_id, approval_id: id })],
      );
    }
    await signalApproval(db, runId, id, 'run.approval_requested');
    return { approval: inserted.rows[0].a, sequence: seq };
  });
  // a claimed request: the workflow heard of it when it was made
  if (sequence === null) return approval;
  try {
    await deps.runs?.approvalRequested(runId, { sequence, approvalId: id, timeoutSeconds: request.timeoutSeconds });
  } catch (err) {
    // the request stands and can be decided; only its expiry and the paused timeout depend on the engine
    deps.log.warn('the run workflow could not be told of an approval request', { runId, approvalId: id, error: String(err) });
  }
  return approval;
}

/**
 * The sidecar's read of one of its run's requests (signed, empty body). `park`: the workflow asks
 * the sidecar to hand over the run's pending state (the run is about to be parked).
 */
export async function approvalForSidecar(deps: IngestDeps, runId: string, headers: Record<string, string | undefined>, approvalId: string): Promise<Approval & { park: boolean }> {
  await openSink(deps, runId, headers, Buffer.alloc(0));
  const { rows } = await deps.pool.query<{ a: Approval; park: boolean }>(
    `SELECT ${WIRE} AS a, (a.park_requested_at IS NOT NULL AND a.status = 'pending') AS park FROM run_approvals a WHERE a.run_id = $1 AND a.id = $2`, [runId, approvalId]);
  if (!rows[0]) throw problem('not_found', { detail: 'No such approval request of this run.' });
  return { ...rows[0].a, park: rows[0].park };
}

/** The requests of a run the caller can read, oldest first. */
export async function listApprovals(scope: SpaceScope, permissions: ReadonlySet<Permission>, runId: string): Promise<Approval[]> {
  await getRunRow(scope, permissions, runId);
  const { rows } = await scope.pool.query<{ a: Approval }>(
    `SELECT ${WIRE} AS a FROM run_approvals a WHERE a.org_id = $1 AND a.space_id = $2 AND a.run_id = $3 ORDER BY a.sequence`,
    [scope.orgId, scope.spaceId, runId],
  );
  return rows.map((r) => r.a);
}

/**
 * A person's decision on a pending request of a run they can read: recorded once (a second is
 * approval_already_decided), only while the run runs; the workflow and the sidecar hear of it.
 */
export async function decideApproval(
  scope: SpaceScope, permissions: ReadonlySet<Permission>, runId: string, approvalId: string,
  decision: { decision: 'approve' | 'reject'; reason?: string }, runs: RunWorkflowClient | undefined,
): Promise<Approval> {
  const run = await getRunRow(scope, permissions, runId);
  const status: ApprovalStatus = decision.decision === 'approve' ? 'approved' : 'rejected';
  const decidedBy = { userId: scope.actor.endUserId ? null : scope.actor.userId, api_key_id: scope.actor.apiKeyId ?? null, end_user_id: scope.actor.endUserId ?? null };
  const approval = await inTransaction(scope.pool, async (db) => {
    const { rows } = await db.query<{ a: Approval }>(
      `SELECT ${WIRE} AS a FROM run_approvals a WHERE a.org_id = $1 AND a.space_id = $2 AND a.run_id = $3 AND a.id = $4 FOR UPDATE`,
      [scope.orgId, scope.spaceId, runId, approvalId],
    );
    if (!rows[0]) throw problem('not_found', { detail: 'No such approval request of this run.' });
    const current = await db.query<{ status: string }>('SELECT status FROM runs WHERE id = $1', [runId]);
    const runStatus = current.rows[0]?.status ?? run.status;
    if (runStatus !== 'running') throw problem('run_not_running', { detail: `The run is ${runStatus}; its approval requests can no longer be decided.` });
    if (rows[0].a.status !== 'pending') {
      throw problem('approval_already_decided', { detail: `The approval request is already ${rows[0].a.status}.` });
    }
    const updated = await db.query<{ a: Approval }>(
      `UPDATE run_approvals a SET status = $2, decided_at = now(), decided_by = $3, reason = $4 WHERE a.id = $1 RETURNING ${WIRE} AS a`,
      [approvalId, status, JSON.stringify(decidedBy), decision.reason ?? null],
    );
    await stopAwaiting(db, runId, approvalId);
    await signalApproval(db, runId, approvalId, 'run.approval_decided');
    return updated.rows[0].a;
  });
  // The sidecar reads the decision from the database; the workflow's wait ends here (or, should the
  // engine not hear it now, at the request's expiry, which then finds it decided and changes nothing).
  await runs?.approvalDecided(runId, approvalId, status).catch(() => {});
  return approval;
}
