// The run record as stored and as it goes on the wire, and the visibility rules for reading it:
// runs:read-all sees every run of the space, runs:read only the caller's own, an end-user only
// theirs.
import type pg from 'pg';
import type { Permission } from '../../../lib/permissions.ts';
import { problem } from '../../../lib/problem.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { TOTAL_WINDOW, type ListTotal } from '../../lists.ts';
import type { RunReadCache } from './read-cache.ts';

export const TERMINAL_STATUSES = ['success', 'failed', 'timeout', 'cancelled'] as const;
export type RunStatus = 'pending' | 'running' | (typeof TERMINAL_STATUSES)[number];

export interface RunRow {
  id: string;
  org_id: string;
  space_id: string;
  agent_id: string;
  agent_version: string;
  status: RunStatus;
  input: unknown;
  output: unknown;
  error: { code: string; message: string; details?: unknown } | null;
  trigger_kind: 'member' | 'end_user' | 'schedule' | 'api_key';
  actor_user_id: string | null;
  api_key_id: string | null;
  end_user_id: string | null;
  schedule_id: string | null;
  rerun_of: string | null;
  /** the failed or timed-out run whose last checkpoint this run starts from */
  resumed_from: string | null;
  kind: 'agent' | 'inline' | 'remote';
  model_id: string | null;
  timeout_seconds: number;
  prompt_tokens: number;
  completion_tokens: number;
  cost_usd: number;
  sink_expires_at: Date;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  /** set on a run of an agent's draft: the draft's tree integrity at launch */
  draft_integrity: string | null;
  /** the run's own model settings (model-settings.ts); absent where a query does not read them */
  model_settings?: { temperature: number | null; reasoning_effort: string | null } | null;
}

export const RUN_COLUMNS = `id, org_id, space_id, agent_id, agent_version, status, input, output, error, trigger_kind,
  actor_user_id, api_key_id, end_user_id, schedule_id, rerun_of, resumed_from, kind, model_id, timeout_seconds, prompt_tokens,
  completion_tokens, cost_usd, sink_expires_at, created_at, started_at, finished_at, draft_integrity, model_settings`;

export interface RunWire {
  id: string;
  object: 'run';
  status: RunStatus;
  kind: RunRow['kind'];
  packageId: string;
  agent_version: string;
  /** what an agent run executed: its draft or a published version (null for inline runs) */
  source: 'draft' | 'published' | null;
  /** the content hash of the draft a draft run executed */
  draft_integrity: string | null;
  spaceId: string;
  input: unknown;
  result: { output: unknown } | null;
  error: RunRow['error'];
  triggered_by: { kind: RunRow['trigger_kind']; userId: string | null; api_key_id: string | null; end_user_id: string | null; schedule_id: string | null };
  rerun_of: string | null;
  resumed_from: string | null;
  model_id: string | null;
  timeout_seconds: number;
  cost: { usd: number; prompt_tokens: number; completion_tokens: number };
  createdAt: string;
  started_at: string | null;
  finished_at: string | null;
  duration_ms: number | null;
}

export function isTerminal(status: string): boolean {
  return (TERMINAL_STATUSES as readonly string[]).includes(status);
}

export function toRunWire(r: RunRow): RunWire {
  return {
    id: r.id,
    object: 'run',
    status: r.status,
    kind: r.kind,
    packageId: r.agent_id,
    agent_version: r.agent_version,
    source: r.kind === 'inline' ? null : r.draft_integrity ? 'draft' : 'published',
    draft_integrity: r.draft_integrity ?? null,
    spaceId: r.space_id,
    input: r.input ?? null,
    result: r.status === 'success' ? { output: r.output ?? null } : null,
    error: r.error ?? null,
    triggered_by: { kind: r.trigger_kind, userId: r.actor_user_id, api_key_id: r.api_key_id, end_user_id: r.end_user_id, schedule_id: r.schedule_id },
    rerun_of: r.rerun_of,
    resumed_from: r.resumed_from ?? null,
    model_id: r.model_id,
    timeout_seconds: r.timeout_seconds,
    cost: { usd: Number(r.cost_usd), prompt_tokens: Number(r.prompt_tokens), completion_tokens: Number(r.completion_tokens) },
    createdAt: r.created_at.toISOString(),
    started_at: r.started_at?.toISOString() ?? null,
    finished_at: r.finished_at?.toISOString() ?? null,
    duration_ms: r.started_at && r.finished_at ? r.finished_at.getTime() - r.started_at.getTime() : null,
  };
}

/** The SQL filter that limits a query to the runs the caller may read, appended to `params`. */
export function visibilityFilter(scope: SpaceScope, permissions: ReadonlySet<Permission>, params: unknown[]): string {
  if (scope.actor.endUserId) {
    params.push(scope.actor.endUserId);
    return ` AND end_user_id = $${params.length}`;
  }
  if (permissions.has('runs:read-all')) return '';
  params.push(scope.actor.userId);
  return ` AND actor_user_id = $${params.length} AND end_user_id IS NULL`;
}

export async function getRunRow(scope: SpaceScope, permissions: ReadonlySet<Permission>, runId: string): Promise<RunRow> {
  const params: unknown[] = [runId, scope.orgId, scope.spaceId];
  const filter = visibilityFilter(scope, permissions, params);
  const { rows } = await scope.pool.query<RunRow>(`SELECT ${RUN_COLUMNS} FROM runs WHERE id = $1 AND org_id = $2 AND space_id = $3${filter}`, params);
  if (!rows[0]) throw problem('not_found', { detail: 'No such run in this space.' });
  return rows[0];
}

/**
 * A run as the wire shows it, written by PostgreSQL (run_wire), with its status; through `cache`
 * when given (a read that may be served from before a change not yet heard: never right after
 * this process changed the run).
 */
export async function getRunWire(
  scope: SpaceScope, permissions: ReadonlySet<Permission>, runId: string, cache?: RunReadCache | null,
): Promise<{ status: RunStatus; json: string }> {
  const params: unknown[] = [runId, scope.orgId, scope.spaceId];
  const filter = visibilityFilter(scope, permissions, params);
  const sql = `SELECT status, run_wire(runs)::text AS json FROM runs WHERE id = $1 AND org_id = $2 AND space_id = $3${filter}`;
  const load = async () => {
    const row = (await scope.pool.query<{ status: RunStatus; json: string }>(sql, params)).rows[0];
    return row ? { status: row.status, json: compactWire(row.json) } : null;
  };
  // Stryker disable next-line LogicalOperator: an entry's weight bounds the cache's memory; no reader sees it
  const row = cache ? await cache.through(scope.spaceId, cacheKey(sql, params), load, (r) => r?.json.length ?? 0) : await load();
  if (!row) throw problem('not_found', { detail: 'No such run in this space.' });
  return row;
}

/**
 * run_wire()'s text as the launch writes it: PostgreSQL's json text spaces its tokens (`"id" : ...`)
 * and keeps numeric scale (`0.001250`), so it is read once and written again by JSON.stringify,
 * the launch's writer (same key order, same number forms), before it is cached or sent.
 */
export function compactWire(text: string): string {
  return JSON.stringify(JSON.parse(text));
}

function cacheKey(sql: string, params: unknown[]): string {
  return `${sql}\0${JSON.stringify(params)}`;
}

/**
 * A page of runs (limit + 1 fetched, so the caller knows whether more follow), each as its wire
 * JSON text, newest first, with the total (counted up to TOTAL_WINDOW past the offset).
 */
export async function listRunWire(
  scope: SpaceScope,
  permissions: ReadonlySet<Permission>,
  page: { limit: number; offset: number },
  filter: { agentId?: string; scheduleId?: string; status?: string } = {},
  cache?: RunReadCache | null,
): Promise<{ items: string[]; total: ListTotal }> {
  const params: unknown[] = [scope.orgId, scope.spaceId];
  let where = 'org_id = $1 AND space_id = $2';
  if (filter.agentId) {
    params.push(filter.agentId);
    where += ` AND agent_id = $${params.length}`;
  }
  if (filter.scheduleId) {
    params.push(filter.scheduleId);
    where += ` AND schedule_id = $${params.length}`;
  }
  if (filter.status) {
    params.push(filter.status);
    where += ` AND status = $${params.length}`;
  }
  where += visibilityFilter(scope, permissions, params);
  // Every filter has an index led by (org, space, <filter>) and ending (created_at, id), so the
  // page is a walk of that index in list order that stops at its limit. A deep page first finds
  // its first key by an index-only walk over the skipped entries, then reads only its own rows.
  const order = 'ORDER BY created_at DESC, id DESC';
  const pageParams = [...params, page.limit + 1];
  const columns = 'created_at::text AS at, id, run_wire(runs)::text AS json';
  let sql = `SELECT ${columns} FROM runs WHERE ${where} ${order} LIMIT $${pageParams.length}`;
  // Stryker disable next-line ConditionalExpression,EqualityOperator: at offset 0 the first-key form gives the same rows (its key is the first row); the plain form is the cheaper plan
  if (page.offset > 0) {
    pageParams.push(page.offset);
    sql = `WITH first_key AS (SELECT created_at, id FROM runs WHERE ${where} ${order} OFFSET $${pageParams.length} LIMIT 1)
      SELECT ${columns} FROM runs
       WHERE ${where} AND (created_at, id) <= ((SELECT created_at FROM first_key), (SELECT id FROM first_key))
       ${order} LIMIT $${pageParams.length - 1}`;
  }
  const load = async () => {
    const { rows } = await scope.pool.query<{ at: string; id: string; json: string }>(sql, pageParams);
    const items = rows.map((r) => compactWire(r.json));
    // The total is known from the page itself unless more rows follow it (or it lies past the end).
    // Stryker disable next-line ConditionalExpression,EqualityOperator,LogicalOperator: a shortcut; counting gives the same total
    if (items.length <= page.limit && (items.length > 0 || page.offset === 0)) return { items, total: { n: page.offset + items.length, capped: false } };
    // Counted from the page's first key (exact text of its timestamp), so the skipped rows are not
    // walked again; past the end, from the start up to the same bound.
    const countParams = [...params, TOTAL_WINDOW + 1];
    let from = '';
    if (rows.length) {
      countParams.push(rows[0].at, rows[0].id);
      from = ` AND (created_at, id) <= ($${countParams.length - 1}::timestamptz, $${countParams.length})`;
    } else {
      // Stryker disable next-line ArithmeticOperator: past the end fewer rows than the offset match, far below either bound
      countParams[params.length] = page.offset + TOTAL_WINDOW + 1;
    }
    const count = await scope.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT 1 FROM runs WHERE ${where}${from} LIMIT $${params.length + 1}) matching`,
      countParams,
    );
    const counted = count.rows[0].n + (rows.length ? page.offset : 0);
    const bound = page.offset + TOTAL_WINDOW;
    return { items, total: { n: Math.min(counted, bound), capped: counted > bound } };
  };
  if (!cache) return load();
  // Stryker disable next-line ArithmeticOperator: a page's weight bounds the cache's memory; no reader sees it
  return cache.through(scope.spaceId, cacheKey(sql, pageParams), load, (p) => p.items.reduce((n, item) => n + item.length, 0));
}

/** Runs pending and running, platform-wide, for the metrics gauge: one count over the open runs' partial index. */
export async function runsInFlight(pool: pg.Pool): Promise<Array<{ value: number; labels: { status: string } }>> {
  const { rows } = await pool.query<{ status: string; n: string }>(
    `SELECT status, count(*) AS n FROM runs WHERE status IN ('pending', 'running') GROUP BY status`,
  );
  const count = (status: string) => Number(rows.find((r) => r.status === status)?.n ?? 0);
  return [{ value: count('pending'), labels: { status: 'pending' } }, { value: count('running'), labels: { status: 'running' } }];
}
