// Every list query and background sweep reads through an index that serves its tenant filter and
// its order: with enough rows in many organizations that a scan would matter, the plan
// PostgreSQL picks for each query, captured as the service issues it, holds no sequential scan
// of a tenant table and no sort (a sort means the index did not give the order: a collation or
// column-order mismatch).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';
import { listRunWire } from '../../api/services/runs/records.ts';
import { reconcileAbandonedRuns } from '../../api/services/runs/reconciler.ts';
import { sweepRunData } from '../../api/services/runs/retention.ts';
import { createRunSubmitter } from '../../api/services/runs/submitter.ts';
import { createLogger } from '../../lib/log.ts';
import type { Permission } from '../../lib/permissions.ts';
import type { RunWorkflowClient } from '../../workflows/run-client.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { SEED_AGENTS, seedEndUsers, seedRuns, seedSpaces, type SeededSpace } from '../support/scale-seed.ts';

const TENANT_TABLES = new Set(['runs', 'end_users', 'run_logs', 'run_event_ids', 'run_usage', 'packages', 'package_placements', 'package_versions']);

let app: TestApp;
let pool: pg.Pool;
let space: SeededSpace;
let key: string;

interface Captured {
  sql: string;
  params: unknown[];
}

/** Runs `work` with the pool's queries recorded (and, unless `execute`, answered empty without running). */
async function capturing(work: () => Promise<unknown>, execute = true): Promise<Captured[]> {
  const seen: Captured[] = [];
  const original = pool.query;
  const run = original.bind(pool) as (text: string, params?: unknown[]) => Promise<unknown>;
  pool.query = ((text: string, params?: unknown[]) => {
    seen.push({ sql: text, params: params ?? [] });
    return execute ? run(text, params) : Promise.resolve({ rows: [], rowCount: 0 });
  }) as typeof pool.query;
  try {
    await work();
  } finally {
    pool.query = original;
  }
  return seen;
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** tenant tables holding enough rows that a scan of them matters (the seeded ones) */
let large = new Set<string>();

function offenders(node: PlanNode, sorts: boolean, out: string[] = []): string[] {
  if (node['Node Type'] === 'Seq Scan' && large.has(node['Relation Name'] ?? '')) out.push(`Seq Scan on ${node['Relation Name']}`);
  if (sorts && (node['Node Type'] === 'Sort' || node['Node Type'] === 'Incremental Sort')) out.push(node['Node Type']);
  for (const child of node.Plans ?? []) offenders(child, sorts, out);
  return out;
}

/**
 * Asserts the plan of every captured query touching a tenant table is free of offenders: no scan
 * of a large table, and for lists (`sorts`) no sort. A sweep may sort what a partial index found.
 */
async function assertIndexed(what: string, queries: Captured[], sorts = true): Promise<number> {
  let checked = 0;
  for (const q of queries) {
    if (![...TENANT_TABLES].some((t) => new RegExp(`\\b(FROM|JOIN|UPDATE|INTO)\\s+${t}\\b`, 'i').test(q.sql))) continue;
    const { rows } = await pool.query(`EXPLAIN (FORMAT JSON) ${q.sql}`, q.params);
    const plan = (rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0].Plan;
    assert.deepEqual(offenders(plan, sorts), [], `${what}: ${q.sql.replace(/\s+/g, ' ')}\n${JSON.stringify(plan, null, 1)}`);
    checked++;
  }
  assert.ok(checked > 0, `${what}: no query captured`);
  return checked;
}

before(async () => {
  app = await startTestApp();
  pool = app.deps.database.pool;
  const spaces = await seedSpaces(pool, 4, 2);
  for (const s of spaces) {
    await seedEndUsers(pool, s, 2500);
    await seedRuns(pool, s, 4000, { eventIds: 2 });
  }
  space = spaces[0];
  ({ key } = await aKey(pool, { orgId: space.orgId, spaceId: space.spaceId, userId: space.ownerId }));
  await pool.query('VACUUM ANALYZE');
  const { rows } = await pool.query<{ relname: string }>(`SELECT relname FROM pg_class WHERE relkind = 'r' AND reltuples >= 10000 AND relname = ANY($1)`, [[...TENANT_TABLES]]);
  large = new Set(rows.map((r) => r.relname));
  assert.deepEqual([...large].sort(), ['end_users', 'run_event_ids', 'run_logs', 'runs']);
});
after(() => app?.close());

const get = async (path: string) => {
  const res = await call(app.url, 'GET', path, { key });
  assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
  return res;
};

describe('run lists', () => {
  const paths = [
    '/api/runs', '/api/runs?offset=1500', '/api/runs?offset=3990', '/api/runs?offset=9000',
    '/api/runs?status=failed', '/api/runs?status=failed&offset=200', '/api/runs?status=running&offset=1',
    `/api/agents/${SEED_AGENTS[1]}/runs`, `/api/agents/${SEED_AGENTS[1]}/runs?offset=700`,
  ];
  for (const path of paths) {
    test(`GET ${path}: the page and its count read through an index`, async () => {
      let body = { hasMore: false, data: [] as unknown[] };
      const queries = await capturing(async () => ({ body } = await get(path)));
      const pastTheEnd = body.data.length === 0 && path.includes('offset=');
      assert.equal(queries.some((q) => /count\(\*\)/.test(q.sql)), body.hasMore || pastTheEnd, 'the count is issued only when the page does not tell the total');
      await assertIndexed(path, queries);
    });
  }

  test("a member's own runs and an end-user's runs read through an index", async () => {
    const readOwn = new Set<Permission>(['runs:read']);
    const member = { pool, db: app.deps.database.db, orgId: space.orgId, spaceId: space.spaceId, actor: { userId: space.memberId } };
    const { rows } = await pool.query('SELECT end_user_id FROM runs WHERE org_id = $1 AND space_id = $2 AND end_user_id IS NOT NULL LIMIT 1', [space.orgId, space.spaceId]);
    const endUser = { ...member, actor: { userId: space.ownerId, endUserId: rows[0].end_user_id as string } };
    for (const scope of [member, endUser]) {
      for (const offset of [0, 3]) {
        for (const status of [undefined, 'success']) {
          await assertIndexed(`visibility ${JSON.stringify(scope.actor)} offset ${offset} status ${status}`, await capturing(() => listRunWire(scope, readOwn, { limit: 2, offset }, { status })));
        }
      }
    }
  });
});

test("a run's log page reads through its key", async () => {
  const { rows } = await pool.query('SELECT id FROM runs WHERE org_id = $1 AND space_id = $2 LIMIT 1', [space.orgId, space.spaceId]);
  const path = `/api/runs/${rows[0].id}/logs`;
  await assertIndexed(path, await capturing(() => get(path)));
});

describe('end-user lists', () => {
  test('the first page and pages after and before a cursor deep in the list read through the byte-order index', async () => {
    const { rows } = await pool.query(`SELECT id FROM end_users WHERE org_id = $1 AND space_id = $2 ORDER BY id COLLATE "C" OFFSET 2000 LIMIT 1`, [space.orgId, space.spaceId]);
    for (const path of ['/api/end-users', `/api/end-users?startingAfter=${rows[0].id}`, `/api/end-users?endingBefore=${rows[0].id}`]) {
      await assertIndexed(path, await capturing(() => get(path)));
    }
  });
});

describe('background sweeps', () => {
  test('the inline purge, replay and log sweeps, the reconciler and the submitter sweep read through indexes', async () => {
    await assertIndexed('run data sweeps', await capturing(() => sweepRunData(pool, { inlineRetentionDays: 30, logRetentionDays: 1 }), false), false);
    await assertIndexed('reconciler', await capturing(() => reconcileAbandonedRuns(pool, 60), false), false);
    const engine: RunWorkflowClient = { submit: () => Promise.reject(new Error('not under test')) } as unknown as RunWorkflowClient;
    const submitter = createRunSubmitter(pool, engine, createLogger('silent'));
    try {
      await assertIndexed('submitter sweep', await capturing(() => submitter.sweep(), false), false);
    } finally {
      await submitter.stop();
    }
  });
});
