// Run lists at a size past the counting window: `total` is exact up to TOTAL_WINDOW rows past the
// offset and flagged total_capped beyond (no rel="last" then), deep offsets give exactly the rows
// a plain OFFSET would (ties in createdAt included), and an offset past MAX_OFFSET is 400
// invalid_request naming the parameter.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { MAX_OFFSET, TOTAL_WINDOW } from '../../api/lists.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey } from '../support/builders.ts';
import { call, type WireResponse } from '../support/http.ts';
import { SEED_AGENTS, seedRuns, seedSpaces, type SeededSpace } from '../support/scale-seed.ts';

const RUNS = TOTAL_WINDOW + 50;
let app: TestApp;
let pool: pg.Pool;
let space: SeededSpace;
let key: string;

before(async () => {
  app = await startTestApp();
  pool = app.deps.database.pool;
  const spaces = await seedSpaces(pool, 1, 2);
  space = spaces[0];
  await seedRuns(pool, space, RUNS);
  await seedRuns(pool, spaces[1], 300);
  // a run of 60 launches in the same instant across a page boundary deep in the list
  await pool.query(
    `UPDATE runs SET created_at = t.at FROM (SELECT created_at AS at FROM runs WHERE space_id = $1 ORDER BY created_at DESC OFFSET 990 LIMIT 1) t
      WHERE id IN (SELECT id FROM runs WHERE space_id = $1 ORDER BY created_at DESC OFFSET 970 LIMIT 60)`,
    [space.spaceId],
  );
  ({ key } = await aKey(pool, { orgId: space.orgId, spaceId: space.spaceId, userId: space.ownerId }));
});
after(() => app?.close());

const get = (path: string) => call(app.url, 'GET', path, { key });
const rels = (res: WireResponse) => [...(res.headers.get('link') ?? '').matchAll(/rel="([a-z]+)"/g)].map((m) => m[1]);

async function expectedIds(where: string, params: unknown[], offset: number, limit: number): Promise<string[]> {
  const { rows } = await pool.query(`SELECT id FROM runs WHERE ${where} ORDER BY created_at DESC, id DESC OFFSET ${offset} LIMIT ${limit}`, params);
  return rows.map((r) => r.id);
}

test('past the window the total is capped and flagged, and no rel="last" is given', async () => {
  const res = await get('/api/runs?limit=100');
  assert.equal(res.status, 200);
  assert.equal(res.body.total, TOTAL_WINDOW);
  assert.equal(res.body.total_capped, true);
  assert.equal(res.body.hasMore, true);
  assert.deepEqual(rels(res), ['next']);

  const deeper = await get('/api/runs?limit=100&offset=20');
  assert.equal(deeper.body.total, 20 + TOTAL_WINDOW, 'the window starts at the offset');
  assert.equal(deeper.body.total_capped, true);
  assert.deepEqual(rels(deeper), ['next', 'prev', 'first']);
});

test('within the window the total is exact, unflagged, and rel="last" points at the last page', async () => {
  const res = await get('/api/runs?limit=100&offset=100');
  assert.equal(res.body.total, RUNS);
  assert.equal('total_capped' in res.body, false);
  assert.match(res.headers.get('link')!, new RegExp(`offset=${Math.floor((RUNS - 1) / 100) * 100}>; rel="last"`));
  // exactly TOTAL_WINDOW rows from the offset to the end: the window holds them all, the total is exact
  const edge = await get(`/api/runs?limit=100&offset=${RUNS - TOTAL_WINDOW}`);
  assert.equal(edge.body.total, RUNS);
  assert.equal('total_capped' in edge.body, false);
  const failed = await get('/api/runs?status=failed');
  const { rows } = await pool.query(`SELECT count(*)::int AS n FROM runs WHERE space_id = $1 AND status = 'failed'`, [space.spaceId]);
  assert.equal(failed.body.total, rows[0].n);
  assert.equal('total_capped' in failed.body, false);
});

test('every offset gives the rows a plain OFFSET gives and the total, ties in createdAt included', async () => {
  const where = 'org_id = $1 AND space_id = $2';
  for (const offset of [0, 1, 960, 975, 990, 1010, RUNS - 7, RUNS + 5]) {
    const res = await get(`/api/runs?limit=20&offset=${offset}`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data.map((r: { id: string }) => r.id), await expectedIds(where, [space.orgId, space.spaceId], offset, 20), `offset ${offset}`);
    assert.equal(res.body.total, Math.min(RUNS, offset + TOTAL_WINDOW), `total at offset ${offset}`);
  }
  const agent = SEED_AGENTS[2];
  for (const offset of [0, 240, 495]) {
    const res = await get(`/api/agents/${agent}/runs?offset=${offset}`);
    assert.deepEqual(res.body.data.map((r: { id: string }) => r.id), await expectedIds(`${where} AND agent_id = $3`, [space.orgId, space.spaceId, agent], offset, 50), `${agent} offset ${offset}`);
  }
});

test(`an offset up to ${MAX_OFFSET} is served; past it the answer is 400 invalid_request naming offset`, async () => {
  const last = await get(`/api/runs?offset=${MAX_OFFSET}`);
  assert.equal(last.status, 200);
  assert.deepEqual(last.body.data, []);
  assert.equal(last.body.total, RUNS, 'a page past the end still knows the total');
  for (const path of [`/api/runs?offset=${MAX_OFFSET + 1}`, `/api/agents/${SEED_AGENTS[0]}/runs?offset=99999999999`]) {
    const res = await get(path);
    assert.equal(res.status, 400, path);
    assert.equal(res.body.code, 'invalid_request');
    assert.equal(res.body.param, 'offset');
  }
});
