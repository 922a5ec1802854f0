// Sustained runs/s with one worker and with two (issue 31), process backend, same machine, same
// run: a platform with ROLE=api (its embedded Restate, no sandboxes) and one, then two, ROLE=worker
// processes joining it, each with its own data directory; the scripted fake model (latency 0) and
// agent-echo. For each worker count: successes/s over BENCH_SECONDS with BENCH_IN_FLIGHT runs kept in
// flight, the runs per worker, and the engine and database cost per run (the embedded Restate's CPU
// seconds, the database's committed transactions and rows written, from pg_stat_database) so a
// cost that grew with the worker count (something serialising across workers) shows. Prints JSON.
// On a 2-core machine the ratio is near 1: both workers share the same cores.
// Knobs: BENCH_SECONDS (30), BENCH_IN_FLIGHT (6), BENCH_WORKER_COUNTS ("1,2").
//   node --import tsx bench/workers-throughput.ts
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { startFakeModel } from '../test/fixtures/fake-model/server.ts';
import { aKey, anOrg } from '../test/support/builders.ts';
import { client } from '../test/support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../test/support/platform-process.ts';
import { aDefaultModel, importFixture } from '../test/support/runs.ts';
import { ensureTestServices } from '../test/support/services.ts';
import { cpuOf } from './harness/process-stats.ts';
import { emit, loadAverage, note, round } from './support.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 6);
const COUNTS = (process.env.BENCH_WORKER_COUNTS ?? '1,2').split(',').map(Number);
const RAISED_LIMITS = JSON.stringify({ max_concurrent_per_org: 100_000, per_org_global_rate_per_min: 1_000_000 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Figures {
  workers: number;
  runs_per_sec: number;
  successes: number;
  failures: Record<string, number>;
  runs_per_worker: Record<string, number>;
  engine_cpu_seconds_per_run: number;
  /** the API process's own CPU per run (launches, reads, run events), and each worker's (its sandbox
   * host work; the first worker also serves every run's workflow) */
  api_cpu_seconds_per_run: number;
  worker_cpu_seconds_per_run: Record<string, number>;
  db_transactions_per_run: number;
  db_rows_written_per_run: number;
  load_average: number[];
}

async function dbCounters(pool: pg.Pool): Promise<{ xacts: number; rows: number }> {
  const { rows } = await pool.query<{ xacts: string; rows: string }>(
    `SELECT xact_commit AS xacts, tup_inserted + tup_updated + tup_deleted AS rows FROM pg_stat_database WHERE datname = current_database()`);
  return { xacts: Number(rows[0].xacts), rows: Number(rows[0].rows) };
}

async function measure(workerCount: number): Promise<Figures> {
  const undo: Array<() => Promise<void>> = [];
  try {
    const fake = await startFakeModel({});
    undo.push(() => fake.close());
    const common = { RUN_LIMITS: RAISED_LIMITS, SANDBOX_WARM_POOL: '2', EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host, LOG_LEVEL: 'error' };
    const platform = await startPlatformProcess({ env: { ...common, ROLE: 'api' } });
    undo.push(() => platform.stop());
    const ports = JSON.parse(fs.readFileSync(path.join(platform.dataDir, 'ports.json'), 'utf8')) as { restateIngress: number; restateAdmin: number };
    const workers: PlatformProcess[] = [];
    for (let i = 0; i < workerCount; i++) {
      const worker = await startPlatformProcess({
        db: platform.db,
        waitFor: 'started',
        env: {
          ...common,
          ROLE: 'worker',
          WORKER_ID: `bench${i}`,
          RESTATE_INGRESS_URL: `http://127.0.0.1:${ports.restateIngress}`,
          RESTATE_ADMIN_URL: `http://127.0.0.1:${ports.restateAdmin}`,
          RESTATE_REQUEST_IDENTITY_KEY_FILE: path.join(platform.dataDir, 'restate-identity.pem'),
          ENCRYPTION_KEY: fs.readFileSync(path.join(platform.dataDir, 'encryption.key'), 'utf8').trim(),
          INTERNAL_API_URL: platform.url,
        },
      });
      undo.push(() => worker.stop());
      workers.push(worker);
    }
    const pool = new pg.Pool({ connectionString: platform.db.url, max: 2 });
    undo.push(() => pool.end());
    const org = await anOrg(pool);
    // launches spread over keys, so the per-caller launch limit never answers
    const keys = await Promise.all(Array.from({ length: 8 }, () => aKey(pool, { ...org, userId: org.ownerId })));
    await importFixture(platform.url, keys[0].key, 'agent-echo');
    await aDefaultModel(platform.url, keys[0].key, fake.url, 'fake');
    const apis = keys.map(({ key }) => client(platform.url, { key }));
    const restatePid = Number(fs.readFileSync(path.join(platform.dataDir, 'restate.pid'), 'utf8'));

    let launched = 0;
    const failures: Record<string, number> = {};
    const ids: string[] = [];
    const oneRun = async (): Promise<void> => {
      const api = apis[launched++ % apis.length];
      const res = await api.post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'x' } });
      if (res.status !== 201) {
        failures[`launch_${res.status}`] = (failures[`launch_${res.status}`] ?? 0) + 1;
        await sleep(200);
        return;
      }
      ids.push(res.body.id);
      const done = await api.get(`/api/runs/${res.body.id}?wait=60`);
      for (let i = 0; i < 5 && ['pending', 'running'].includes(done.body?.status); i++) Object.assign(done, await api.get(`/api/runs/${res.body.id}?wait=60`));
    };
    // warm-up: one run per worker, not counted
    await Promise.all(Array.from({ length: workerCount }, oneRun));
    ids.length = 0;

    const cpuBefore = cpuOf(restatePid)?.own ?? 0;
    const own = (pid: number | undefined) => (pid ? cpuOf(pid)?.own ?? 0 : 0);
    const apiBefore = own(platform.proc.pid);
    const workersBefore = workers.map((w) => own(w.proc.pid));
    const dbBefore = await dbCounters(pool);
    const until = Date.now() + SECONDS * 1000;
    const began = Date.now();
    await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
      while (Date.now() < until) await oneRun();
    }));
    const elapsed = (Date.now() - began) / 1000;
    const cpuAfter = cpuOf(restatePid)?.own ?? 0;
    const apiAfter = own(platform.proc.pid);
    const workersAfter = workers.map((w) => own(w.proc.pid));
    const dbAfter = await dbCounters(pool);

    const { rows } = await pool.query<{ status: string; code: string | null; worker_id: string | null }>(
      `SELECT status, error->>'code' AS code, worker_id FROM runs WHERE id = ANY($1::text[])`, [ids]);
    const successes = rows.filter((r) => r.status === 'success').length;
    for (const r of rows) if (r.status !== 'success') failures[r.code ?? r.status] = (failures[r.code ?? r.status] ?? 0) + 1;
    const perWorker: Record<string, number> = {};
    for (const r of rows) perWorker[String(r.worker_id)] = (perWorker[String(r.worker_id)] ?? 0) + 1;
    const n = Math.max(1, rows.length);
    return {
      workers: workerCount,
      runs_per_sec: round(successes / elapsed, 2),
      successes,
      failures,
      runs_per_worker: perWorker,
      engine_cpu_seconds_per_run: round((cpuAfter - cpuBefore) / n, 4),
      api_cpu_seconds_per_run: round((apiAfter - apiBefore) / n, 4),
      worker_cpu_seconds_per_run: Object.fromEntries(workers.map((_, i) => [`bench${i}`, round((workersAfter[i] - workersBefore[i]) / n, 4)])),
      db_transactions_per_run: round((dbAfter.xacts - dbBefore.xacts) / n, 1),
      db_rows_written_per_run: round((dbAfter.rows - dbBefore.rows) / n, 1),
      load_average: loadAverage(),
    };
  } finally {
    for (const step of undo.reverse()) await step().catch(() => {});
  }
}

// the platforms are the tests' own (test/support/platform-process.ts): the database and Redis as
// `npm test` finds or starts them, unless the caller already set them up
const services = process.env.TEST_TEMPLATE_DB ? null : await ensureTestServices(path.resolve(import.meta.dirname, '..'));
if (services) Object.assign(process.env, services.env);
const results: Figures[] = [];
for (const count of COUNTS) {
  note(`measuring with ${count} worker(s) for ${SECONDS} s, ${IN_FLIGHT} runs in flight`);
  results.push(await measure(count));
}
await services?.stop();
const one = results.find((r) => r.workers === 1);
const two = results.find((r) => r.workers === 2);
emit({
  bench: 'workers-throughput',
  seconds: SECONDS,
  in_flight: IN_FLIGHT,
  results,
  ratio_two_to_one: one && two && one.runs_per_sec > 0 ? round(two.runs_per_sec / one.runs_per_sec, 2) : null,
});
process.exit(0);
