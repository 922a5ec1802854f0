// Runs, end to end. Prints one JSON object with:
//  - launch latency (time to the 201) over 200 launches sequential and 200 at concurrency 4,
//    measured on the API alone (api/app.ts in a child process, no engine: the runs are admitted
//    and stored, then stay pending), so the figure is the launch path's own and no sandbox
//    competes for the two cores; the full platform's launch latency appears next to it, alone
//    and under sustained load;
//  - launch -> running and launch -> success of runs one at a time (long poll GET
//    /api/runs/{id}?wait=), each launched once the warm pool is full again and its pairs have
//    started up (their processes idle), with the stages
//    between (from the timestamps the platform stores);
//  - sustained trivial runs/s over 60 s with a steady number in flight (successes/s, failures by
//    code), at SANDBOX_WARM_POOL 2 and again at 6;
//  - CPU seconds per run, one at a time and sustained, every process counted (the agent inside
//    bubblewrap's PID namespace too: harness/cpu-accounting.ts) and split by part (agent runtime,
//    sidecar, platform, Restate, PostgreSQL), gross and less each part's idle use, beside
//    `node -e 0` measured in the same window and the ratio to two of them; pair starts per run;
//  - the Rss and Pss of one run's sidecar and agent processes while it runs;
//  - requests/s and p50/p99 of GET /api/runs (20 per page) and GET /api/runs/{id}, next to the
//    cheapest route (/health/live) as the machine's ceiling at the time.
// The full platform: `node bin/start.mjs platform` (embedded Restate, DATABASE_URL on a fresh
// database, run limits raised), the scripted fake model (latency 0) as the default model,
// agent-echo imported; launches spread over many API keys so the per-caller limit (20/min)
// never answers.
// Knobs: BENCH_LAUNCHES (200), BENCH_SINGLE_RUNS (15), BENCH_SUSTAINED_SECONDS (60),
// BENCH_IN_FLIGHT (12), BENCH_WARM_POOLS ("2,6"), BENCH_SECONDS (10, each read test),
// BENCH_PLATFORM_NODE_ARGS (unset; e.g. "--cpu-prof --cpu-prof-dir=/tmp/p" profiles the platform).
//   node --import tsx bench/runs.ts
import pg from 'pg';
import { startFakeModel } from '../test/fixtures/fake-model/server.ts';
import { aKey, anOrg } from '../test/support/builders.ts';
import { call } from '../test/support/http.ts';
import { aDefaultModel, importFixture } from '../test/support/runs.ts';
import { newId } from '../lib/ids.ts';
import { startApiChild } from './harness/api-server.ts';
import { RunCpuMeter, type IdleRates } from './harness/cpu-accounting.ts';
import { cpuOf, rssOf, sandboxesOf } from './harness/process-stats.ts';
import { runMemory, type Bench } from './harness/run-memory.ts';
import { KeyRing, launchRun, RunTracker, type Launch } from './harness/run-traffic.ts';
import { generator, load } from './harness/load.ts';
import {
  emit, freshBenchDatabase, loadAverage, note, round, send, spread, startPlatformChild, type PlatformChild,
} from './support.ts';

const LAUNCHES = Number(process.env.BENCH_LAUNCHES ?? 200);
const SINGLE_RUNS = Number(process.env.BENCH_SINGLE_RUNS ?? 15);
const SUSTAINED_SECONDS = Number(process.env.BENCH_SUSTAINED_SECONDS ?? 60);
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 12);
const WARM_POOLS = (process.env.BENCH_WARM_POOLS ?? '2,6').split(',').map(Number);
const READ_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const LAUNCH_CONCURRENCY = 4;
const READ_CONNECTIONS = 32;
const RUN_END_TIMEOUT_MS = 120_000;
const RAISED_LIMITS = JSON.stringify({ max_concurrent_per_org: 100_000, per_org_global_rate_per_min: 1_000_000 });
const TARGETS = {
  launch_p50_ms: 5, launch_p99_ms: 20, launch_to_success_p50_ms: 300, sustained_runs_per_sec: 25, run_memory_mb: 100, reads_per_sec: 5000,
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function count(map: Record<string, number>, key: string): void {
  map[key] = (map[key] ?? 0) + 1;
}

async function failureCodes(pool: pg.Pool, ids: string[]): Promise<Record<string, number>> {
  if (!ids.length) return {};
  const { rows } = await pool.query<{ code: string; n: number }>(
    `SELECT coalesce(error->>'code', status) AS code, count(*)::int AS n FROM runs WHERE id = ANY($1) GROUP BY 1`, [ids],
  );
  return Object.fromEntries(rows.map((r) => [r.code, r.n]));
}

// ------------------------------------------------------------------ phases

/** each part's CPU with no run in flight, measured once the platform has warmed up */
let idleRates: IdleRates | undefined;
const IDLE_SECONDS = 5;

/** One run at a time, each once the warm pool is full again: launch, then long-poll GET /api/runs/{id}?wait= to its end. */
async function singleRuns(b: Bench, n: number, warmPool: number) {
  const launch: number[] = [];
  const toRunning: number[] = [];
  const toSuccess: number[] = [];
  const statuses: Record<string, number> = {};
  const answeredAt = new Map<string, number>();
  // the pool's refills are counted: each run used up one started pair
  const meter = RunCpuMeter.start({ platformPid: b.platform.proc.pid!, dataDir: b.platform.dataDir, dbName: b.dbName }, { sampleEveryMs: null });
  for (let i = 0; i < n; i++) {
    await untilWarm(b, warmPool);
    const key = await b.keys.next();
    const l = await launchRun(b.platform.url, key);
    if (l.status !== 201) {
      count(statuses, `launch ${l.code}`);
      continue;
    }
    launch.push(l.ms);
    const done = await send('GET', `${b.platform.url}/api/runs/${l.id}?wait=30`, { headers: { authorization: `Bearer ${key}` } });
    const doneAt = Date.now();
    answeredAt.set(l.id!, doneAt);
    count(statuses, done.body?.status ?? String(done.status));
    if (done.body?.status === 'success') toSuccess.push(doneAt - l.at);
    const running = b.tracker.get(l.id!).running;
    if (running !== undefined) toRunning.push(running - l.at);
    // the floor, between runs so that none is slowed by it
    await meter.sampleNode();
  }
  // the last run's replacement pair has started up
  await untilWarm(b, warmPool);
  const cpu = await meter.stop(launch.length, idleRates);
  return {
    runs: n, statuses, launch_ms: spread(launch), launch_to_running_ms: spread(toRunning), launch_to_success_ms: spread(toSuccess),
    stages_ms: await runStages(b.pool, answeredAt),
    cpu_seconds_per_run: cpu,
  };
}

/** Where a run's time goes, from the timestamps the platform stores (same clock as this machine). */
async function runStages(pool: pg.Pool, answeredAt: Map<string, number>) {
  const { rows } = await pool.query<{ id: string; created_at: Date; submitted_at: Date | null; started_at: Date | null; finished_at: Date | null; first_log: Date | null }>(
    `SELECT r.id, r.created_at, r.submitted_at, r.started_at, r.finished_at, (SELECT min(created_at) FROM run_logs l WHERE l.run_id = r.id) AS first_log
       FROM runs r WHERE r.id = ANY($1)`, [[...answeredAt.keys()]],
  );
  const gap = (pick: (r: (typeof rows)[number]) => [Date | number | null, Date | number | null]) =>
    spread(rows.map(pick).filter(([a, b]) => a !== null && b !== null).map(([a, b]) => Number(b) - Number(a)));
  return {
    launch_to_engine_accepted: gap((r) => [r.created_at, r.submitted_at]),
    launch_to_first_event: gap((r) => [r.created_at, r.started_at]),
    first_event_to_agent_log: gap((r) => [r.started_at, r.first_log]),
    agent_log_to_finished: gap((r) => [r.first_log, r.finished_at]),
    finished_to_long_poll_answer: gap((r) => [r.finished_at, answeredAt.get(r.id) ?? null]),
  };
}

/** `total` launches by `concurrency` callers, each sending its next as soon as its last is answered. */
async function launchBurst(base: string, keys: KeyRing, total: number, concurrency: number) {
  const launch: number[] = [];
  const failures: Record<string, number> = {};
  let left = total;
  const started = performance.now();
  const caller = async () => {
    for (; left > 0; left--) {
      const l = await launchRun(base, await keys.next());
      if (l.status === 201) launch.push(l.ms);
      else count(failures, l.code!);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, caller));
  const seconds = (performance.now() - started) / 1000;
  return { launches: total, concurrency, launches_per_sec: round(launch.length / seconds), launch_ms: spread(launch), failures };
}

/** Launch latency of the API alone, on its own database (its pending runs must never reach an engine). */
async function apiLaunches(fakeModelUrl: string) {
  const db = await freshBenchDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const api = await startApiChild({ DATABASE_URL: db.url, PLATFORM_RUN_LIMITS: RAISED_LIMITS, EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fakeModelUrl).host });
  try {
    const org = await anOrg(pool);
    const admin = await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId });
    await aDefaultModel(api.url, admin.key, fakeModelUrl);
    await importFixture(api.url, admin.key, 'agent-echo');
    const keys = new KeyRing(pool, org);
    await keys.add(Math.ceil((2 * LAUNCHES + 50) / 18));
    await launchBurst(api.url, keys, 50, 1);
    note(`API alone: ${LAUNCHES} launches sequential`);
    const sequential = await launchBurst(api.url, keys, LAUNCHES, 1);
    note(`API alone: ${LAUNCHES} launches by ${LAUNCH_CONCURRENCY} callers`);
    const concurrent = await launchBurst(api.url, keys, LAUNCHES, LAUNCH_CONCURRENCY);
    return { sequential, concurrent };
  } finally {
    await api.stop();
    await pool.end();
    await db.drop();
  }
}

/** `inFlight` callers, each launching its next run when its previous one ends, for `seconds`. */
async function sustained(b: Bench, seconds: number, inFlight: number) {
  const start = Date.now();
  const end = start + seconds * 1000;
  const perSecond = new Array<number>(seconds).fill(0);
  const launch: number[] = [];
  const toSuccess: number[] = [];
  const launchFailures: Record<string, number> = {};
  const failedIds: string[] = [];
  let endedAfterWindow = 0;
  let unfinished = 0;
  const meter = RunCpuMeter.start({ platformPid: b.platform.proc.pid!, dataDir: b.platform.dataDir, dbName: b.dbName });
  const caller = async () => {
    while (Date.now() < end) {
      const l: Launch = await launchRun(b.platform.url, await b.keys.next());
      if (l.status !== 201) {
        count(launchFailures, l.code!);
        await sleep(Math.min(1000, (l.retryAfter ?? 0.2) * 1000));
        continue;
      }
      launch.push(l.ms);
      const t = await b.tracker.ended(l.id!, RUN_END_TIMEOUT_MS);
      if (t.ended === undefined) unfinished += 1;
      else if (t.ended > end) endedAfterWindow += 1;
      else if (t.status === 'success') {
        perSecond[Math.min(seconds - 1, Math.floor((t.ended - start) / 1000))] += 1;
        toSuccess.push(t.ended - l.at);
      } else failedIds.push(l.id!);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, caller));
  const successes = perSecond.reduce((s, v) => s + v, 0);
  // every run launched in the phase has ended by now, the last ones after the window
  const cpu = await meter.stop(successes + failedIds.length + endedAfterWindow, idleRates);
  return {
    seconds, runs_in_flight: inFlight,
    successes, successes_per_sec: round(successes / seconds, 2), successes_each_second: perSecond,
    failures: { launch: launchFailures, run: await failureCodes(b.pool, failedIds), no_end_within_120s: unfinished },
    ended_after_window: endedAfterWindow,
    launch_ms: spread(launch), launch_to_success_ms: spread(toSuccess),
    cpu_seconds_per_run: cpu,
  };
}

/** At least `n` finished runs in the space: copies of a finished one, so the list has pages to read. */
async function atLeastRuns(b: Bench, n: number): Promise<{ total: number; id: string }> {
  const q = () => b.pool.query<{ total: number; id: string }>(
    `SELECT count(*) OVER ()::int AS total, id FROM runs WHERE space_id = $1 ORDER BY (status = 'success') DESC, created_at DESC LIMIT 1`, [b.spaceId],
  );
  let { rows } = await q();
  if (rows[0].total < n) {
    const ids = Array.from({ length: n - rows[0].total }, () => newId('run'));
    await b.pool.query(
      `INSERT INTO runs SELECT (jsonb_populate_record(NULL::runs, to_jsonb(r) || jsonb_build_object('id', c.id))).*
         FROM runs r, unnest($2::text[]) AS c(id) WHERE r.id = $1`, [rows[0].id, ids],
    );
    ({ rows } = await q());
  }
  return rows[0];
}

async function reads(b: Bench) {
  const present = await atLeastRuns(b, 120);
  const headers = { authorization: `Bearer ${b.readKey}` };
  const page = await send('GET', `${b.platform.url}/api/runs?limit=20`, { headers });
  if (page.status !== 200 || page.body.data?.length !== 20) throw new Error(`GET /api/runs: ${page.status}, ${page.body.data?.length} rows`);
  const measure = async (path: string, auth = true) => {
    const opts = { url: b.platform.url + path, headers: auth ? headers : {}, connections: READ_CONNECTIONS, expect: 200 };
    await load({ ...opts, seconds: 2 });
    const f = await load({ ...opts, seconds: READ_SECONDS });
    return { ...f, meets_target: f.requests_per_sec >= TARGETS.reads_per_sec };
  };
  note('reads: GET /api/runs');
  const list = await measure('/api/runs?limit=20');
  note('reads: GET /api/runs/{id}');
  const one = await measure(`/api/runs/${present.id}`);
  note('reads: GET /health/live (ceiling)');
  const { meets_target: _, ...ceiling } = await measure('/health/live', false);
  return {
    runs_in_space: present.total, generator: generator(), connections: READ_CONNECTIONS, seconds: READ_SECONDS, response_bytes_list: Buffer.byteLength(JSON.stringify(page.body)),
    list_runs_20_per_page: list, get_run: one, ceiling_health_live: ceiling,
  };
}

/**
 * Waits until `size` pairs wait in the pool and have started up: their processes exist and have
 * used no CPU for a while (a pair still starting competes with the next run for the cores).
 */
async function untilWarm(b: Bench, size: number): Promise<number> {
  const deadline = Date.now() + 60_000;
  // a pair is its agent, with a sidecar of its own where the backend starts one per run (not beside a shared sidecar host)
  const waiting = () => sandboxesOf(b.platform.proc.pid!).filter((s) => !s.assigned && s.agent.length);
  const cpu = (pairs: ReturnType<typeof waiting>) => pairs.flatMap((s) => [...s.sidecar, ...s.agent]).reduce((t, pid) => t + (cpuOf(pid)?.own ?? 0), 0);
  for (;;) {
    const pairs = waiting();
    if (pairs.length >= size) {
      const before = cpu(pairs);
      await sleep(250);
      if (cpu(pairs) === before) return pairs.length;
    } else await sleep(100);
    if (Date.now() > deadline) return waiting().length;
  }
}

// ------------------------------------------------------------------ the run

async function main(): Promise<void> {
  const began = Date.now();
  const loadBefore = loadAverage();
  const fake = await startFakeModel({ latencyMs: 0 });
  const slow = await startFakeModel({ latencyMs: 1000 });
  const apiAlone = await apiLaunches(fake.url);
  const db = await freshBenchDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  const env = (warmPool: number) => ({
    DATABASE_URL: db.url,
    SANDBOX_WARM_POOL: String(warmPool),
    PLATFORM_RUN_LIMITS: RAISED_LIMITS,
    EGRESS_ALLOW_INTERNAL_HOSTS: [fake.url, slow.url].map((url) => new URL(url).host).join(','),
  });
  let platform: PlatformChild | null = null;
  let tracker: RunTracker | null = null;
  try {
    note(`platform with SANDBOX_WARM_POOL=${WARM_POOLS[0]}`);
    platform = await startPlatformChild({ env: env(WARM_POOLS[0]) });
    const org = await anOrg(pool);
    const admin = await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId });
    await aDefaultModel(platform.url, admin.key, fake.url);
    const cred = await call(platform.url, 'POST', '/api/model-provider-credentials', {
      key: admin.key, body: { provider: 'openai-compatible', name: 'slow fake', base_url: slow.url, api_key: 'sk-fake-provider-key' },
    });
    const slowModel = await call(platform.url, 'POST', '/api/models', { key: admin.key, body: { credential_id: cred.body.id, model: 'fake', name: 'slow', is_default: false } });
    if (slowModel.status !== 201) throw new Error(`slow model: ${slowModel.text}`);
    await importFixture(platform.url, admin.key, 'agent-echo');
    const keys = new KeyRing(pool, org);
    await keys.add(200);
    tracker = await RunTracker.start(db.url, pool);
    const b: Bench = { platform, pool, tracker, keys, readKey: admin.key, spaceId: org.spaceId, dbName: db.name };

    note('warm-up: 3 runs');
    const warmup = await singleRuns(b, 3, WARM_POOLS[0]);
    if (!warmup.statuses.success) throw new Error(`warm-up runs did not succeed: ${JSON.stringify(warmup.statuses)}\n${platform.output().slice(-3000)}`);
    await untilWarm(b, WARM_POOLS[0]);
    note(`idle: ${IDLE_SECONDS} s with no run in flight`);
    idleRates = await RunCpuMeter.idle({ platformPid: platform.proc.pid!, dataDir: platform.dataDir, dbName: db.name }, IDLE_SECONDS);
    note(`alone: ${SINGLE_RUNS} runs, one at a time`);
    const alone = await singleRuns(b, SINGLE_RUNS, WARM_POOLS[0]);
    note('memory of one run');
    const memory = await runMemory(b, slowModel.body.id, TARGETS.run_memory_mb);
    const sustainedRuns: Record<string, unknown> = {};
    let read: Awaited<ReturnType<typeof reads>> | null = null;
    for (const [i, size] of WARM_POOLS.entries()) {
      if (i > 0) {
        note(`platform restarted with SANDBOX_WARM_POOL=${size}`);
        await platform.stop();
        platform = await startPlatformChild({ env: env(size), dataDir: platform.dataDir, port: platform.port });
        b.platform = platform;
      }
      const warm = await untilWarm(b, size);
      note(`sustained: ${SUSTAINED_SECONDS} s, ${IN_FLIGHT} runs in flight, warm pool ${size} (${warm} waiting)`);
      sustainedRuns[`warm_pool_${size}`] = {
        ...(await sustained(b, SUSTAINED_SECONDS, IN_FLIGHT)),
        platform_rss_mb_after: round(rssOf(platform.proc.pid!)),
      };
      // reads once runs have piled up, with none in flight
      if (i === 0) {
        await untilWarm(b, size);
        read = await reads(b);
      }
    }

    const primary = sustainedRuns[`warm_pool_${WARM_POOLS[0]}`] as { successes_per_sec: number };
    const launchP = apiAlone.sequential.launch_ms;
    emit({
      benchmark: 'runs',
      setup: {
        platform: 'node bin/start.mjs platform (child process, NODE_ENV=production, embedded Restate, DATABASE_URL on a fresh database, RUN_ADAPTER=process)',
        model: 'scripted fake model, latency 0 (the memory run: latency 1000 ms per completion)',
        agent: '@fixtures/agent-echo', api_keys: keys.size, sandbox_warm_pool: WARM_POOLS[0],
        load_average_before: loadBefore, load_average_after: loadAverage(), seconds: round((Date.now() - began) / 1000),
      },
      targets: TARGETS,
      launch_api_alone: apiAlone,
      runs_one_at_a_time: alone,
      sustained: sustainedRuns,
      run_memory: memory,
      reads: read!,
      meets_targets: {
        launch_p50: launchP.p50 < TARGETS.launch_p50_ms,
        launch_p99: launchP.p99 < TARGETS.launch_p99_ms,
        launch_to_success_p50: alone.launch_to_success_ms.p50 < TARGETS.launch_to_success_p50_ms,
        sustained_runs_per_sec: primary.successes_per_sec >= TARGETS.sustained_runs_per_sec,
        run_memory_rss: memory.meets_target_rss,
        run_memory_pss: memory.meets_target_pss,
        list_runs: read!.list_runs_20_per_page.meets_target,
        get_run: read!.get_run.meets_target,
      },
    });
  } catch (err) {
    if (platform) process.stderr.write(`platform output (tail):\n${platform.output().slice(-3000)}\n`);
    throw err;
  } finally {
    await tracker?.stop();
    await platform?.dispose();
    await pool.end();
    await db.drop();
    await fake.close();
    await slow.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
