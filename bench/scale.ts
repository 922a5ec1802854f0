// Costs as data grows. Prints one JSON object: for each size, the uncached p50 (and p90) of every
// list route (a space's runs, by status, deep offsets, an agent's runs, end-users and a cursor deep
// in them), a launch, and the background sweeps, then the ratio of the largest size's p50 to the
// smallest's for each. Flat costs show ratios near 1; the target is every list route within 3x.
// One database grows through the sizes: the measured space holds SIZE runs and SIZE/2 end-users,
// and as many again are spread over other organizations' spaces, all written by SQL
// (test/support/scale-seed.ts), then VACUUM ANALYZE (as autovacuum would have done). The API runs
// in-process with the run read cache off, so every read reaches the database; requests go one at
// a time. Database: as bench/support.ts says.
//   BENCH_SCALE_SIZES=1000,100000,1000000 (default)  BENCH_SCALE_SAMPLES=40 (per route and size)
//   node --import tsx bench/scale.ts
import pg from 'pg';
import { reconcileAbandonedRuns } from '../api/services/runs/reconciler.ts';
import { purgeExpiredInlineRuns, sweepReplayRecords, sweepRunLogs } from '../api/services/runs/retention.ts';
import { startFakeModel } from '../test/fixtures/fake-model/server.ts';
import { aKey } from '../test/support/builders.ts';
import { aDefaultModel, importFixture } from '../test/support/runs.ts';
import { SEED_AGENTS, seedEndUsers, seedRuns, seedSpaces, type SeededSpace } from '../test/support/scale-seed.ts';
import { startBenchApi } from './harness/api-app.ts';
import { emit, freshBenchDatabase, note, round, send } from './support.ts';

const SIZES = (process.env.BENCH_SCALE_SIZES ?? '1000,100000,1000000').split(',').map(Number).sort((a, b) => a - b);
const SAMPLES = Number(process.env.BENCH_SCALE_SAMPLES ?? 40);
const OTHER_ORGS = 3;
const DEEP_OFFSET = 20_000;
/** replay records of this many freshly ended runs await the sweep at each size: the same work each time */
const ENDED_RUNS = 1000;

interface Figure {
  p50_ms: number;
  p90_ms: number;
}

function figure(ms: number[]): Figure {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { p50_ms: round(at(0.5), 2), p90_ms: round(at(0.9), 2) };
}

/** `n` timings of `measured`, each after its own `setUp` (untimed), after three untimed rounds. */
async function timed(n: number, measured: (i: number) => Promise<unknown>, setUp?: () => Promise<unknown>): Promise<Figure> {
  const ms: number[] = [];
  for (let i = -3; i < n; i++) {
    if (setUp) await setUp();
    const t = performance.now();
    await measured(i);
    if (i >= 0) ms.push(performance.now() - t);
  }
  return figure(ms);
}

interface SizeResult {
  runs_in_space: number;
  seconds_to_seed: number;
  deep_offset: number;
  routes: Record<string, Figure>;
  sweeps: Record<string, Figure>;
}

async function main(): Promise<void> {
  const db = await freshBenchDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  const model = await startFakeModel();
  const api = await startBenchApi(
    { DATABASE_URL: db.url, EGRESS_ALLOW_INTERNAL_HOSTS: new URL(model.url).host, PLATFORM_RUN_LIMITS: JSON.stringify({ max_concurrent_per_org: 1_000_000, per_org_global_rate_per_min: 1_000_000 }) },
    { runReadCache: false },
  );
  const results: Record<string, SizeResult> = {};
  try {
    const [target, ...others] = await seedSpaces(pool, 1 + OTHER_ORGS, 1);
    const { key } = await aKey(pool, { orgId: target.orgId, spaceId: target.spaceId, userId: target.ownerId });
    await aDefaultModel(api.url, key, model.url);
    await importFixture(api.url, key, 'agent-echo');
    const get = async (path: string) => {
      const res = await send('GET', api.url + path, { headers: { authorization: `Bearer ${key}` } });
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
      return res;
    };
    let seeded = 0;
    for (const size of SIZES) {
      note(`seeding to ${size} runs in the space and ${size} elsewhere`);
      const t0 = performance.now();
      await seedEndUsers(pool, target, Math.floor(size / 2), Math.floor(seeded / 2) + 1);
      await seedRuns(pool, target, size, { start: seeded + 1 });
      for (const other of others) {
        const share = Math.ceil(size / others.length);
        const had = Math.ceil(seeded / others.length);
        await seedEndUsers(pool, other, Math.floor(share / 2), Math.floor(had / 2) + 1);
        await seedRuns(pool, other, share, { start: had + 1 });
      }
      seeded = size;
      // the seeded open runs are long abandoned: the reconciler fails them, as in production, so
      // launches are admitted against the open runs a concurrency cap allows, not a backlog
      while ((await reconcileAbandonedRuns(pool, 60)).length === 100);
      await pool.query('VACUUM ANALYZE');
      const seedMs = performance.now() - t0;
      note(`seeded in ${Math.round(seedMs / 1000)} s; measuring`);
      const deep = Math.min(DEEP_OFFSET, size - 100);
      const routes: Record<string, Figure> = {};
      routes['GET /api/runs'] = await timed(SAMPLES, () => get('/api/runs'));
      routes['GET /api/runs?status=failed'] = await timed(SAMPLES, () => get('/api/runs?status=failed'));
      routes['GET /api/runs?offset=deep'] = await timed(SAMPLES, (i) => get(`/api/runs?offset=${deep - Math.abs(i % 20)}`));
      routes['GET /api/agents/{agent}/runs'] = await timed(SAMPLES, () => get(`/api/agents/${SEED_AGENTS[1]}/runs`));
      routes['GET /api/end-users'] = await timed(SAMPLES, () => get('/api/end-users'));
      const { rows: cursors } = await pool.query<{ id: string }>(
        `SELECT id FROM end_users WHERE org_id = $1 AND space_id = $2 ORDER BY id COLLATE "C" OFFSET $3 LIMIT 1`,
        [target.orgId, target.spaceId, Math.floor(size / 4)],
      );
      routes['GET /api/end-users?startingAfter=deep'] = await timed(SAMPLES, () => get(`/api/end-users?startingAfter=${cursors[0].id}`));
      // a fresh key per launch (made untimed): the per-caller launch rate is not what is measured
      let caller = '';
      routes['POST /api/agents/{agent}/run'] = await timed(Math.min(SAMPLES, 15), async () => {
        const res = await send('POST', `${api.url}/api/agents/@fixtures/agent-echo/run`, { headers: { authorization: `Bearer ${caller}` }, body: { input: { message: 'scale' } } });
        if (res.status !== 201) throw new Error(`launch: ${res.status} ${JSON.stringify(res.body)}`);
      }, async () => ({ key: caller } = await aKey(pool, { orgId: target.orgId, spaceId: target.spaceId, userId: target.ownerId })));
      const r: SizeResult = { runs_in_space: size, seconds_to_seed: Math.round(seedMs / 1000), deep_offset: deep, routes, sweeps: await sweeps(pool, target) };
      results[String(size)] = r;
      note(JSON.stringify(r));
    }
  } finally {
    await api.close();
    await model.close();
    await pool.end();
    await db.drop();
  }
  const small = results[String(SIZES[0])];
  const large = results[String(SIZES[SIZES.length - 1])];
  const ratio: Record<string, number> = {};
  const ratioOf = (a: Figure, b: Figure) => round(b.p50_ms / Math.max(a.p50_ms, 0.01), 2);
  for (const [name, f] of Object.entries(large.routes)) ratio[name] = ratioOf(small.routes[name], f);
  for (const [name, f] of Object.entries(large.sweeps)) ratio[`sweep: ${name}`] = ratioOf(small.sweeps[name], f);
  emit({ sizes: SIZES, samples: SAMPLES, sizes_measured: results, p50_ratio_largest_to_smallest: ratio });
}

/** Each sweep timed with nothing to do, and the replay sweep with ENDED_RUNS runs' records waiting. */
async function sweeps(pool: pg.Pool, space: SeededSpace): Promise<Record<string, Figure>> {
  await sweepReplayRecords(pool);
  const out: Record<string, Figure> = {};
  out.inline_purge_idle = await timed(10, () => purgeExpiredInlineRuns(pool, 30));
  out.reconciler_idle = await timed(10, () => reconcileAbandonedRuns(pool, 60));
  out.log_retention_idle = await timed(10, () => sweepRunLogs(pool, 90));
  out.replay_sweep_idle = await timed(10, () => sweepReplayRecords(pool));
  out.replay_sweep_1000_ended_runs = await timed(5, () => sweepReplayRecords(pool), () => pool.query(
    `INSERT INTO run_event_ids (run_id, message_id)
     SELECT id, 'msg_' || k FROM (
       SELECT id FROM runs WHERE org_id = $1 AND space_id = $2 AND status IN ('success', 'failed') ORDER BY created_at DESC LIMIT $3) r,
       generate_series(1, 2) k`,
    [space.orgId, space.spaceId, ENDED_RUNS],
  ));
  return out;
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
