// What one trivial run costs the platform in steps, counted (not timed). Prints one JSON object with,
// per run (over BENCH_STEP_RUNS runs of agent-echo on the scripted fake model, one at a time, each
// awaited with a long poll):
//  - signed event posts: the calls of the event recorder (record_run_events, or record_run_event
//    on a checkout from before batching), one per post the platform took in;
//  - SQL statements: top-level and nested calls from pg_stat_statements (track = all), on a
//    PostgreSQL this bench starts with the extension preloaded; the same counted over an idle
//    window as long as the runs took is given beside them (the sweepers' and pool's own share), and
//    the per-run figure is net of it;
//  - engine invocations and journal entries: from the engine's admin SQL (sys_invocation: its
//    target and journal_size), the run workflow's own invocation and the signals sent to it;
//  - the run's workflow steps by kind (ctx.run, timers, promises) as the journal holds them, from the
//    last run whose journal the engine still keeps (sys_journal);
//  - launch to success as the client saw it (p50, max): the machine's load at the time, for context.
// Knobs: BENCH_STEP_RUNS (10), BENCH_WARM_POOLS (the first number: the warm pool, 2).
//   node --import tsx bench/run-steps.ts
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startFakeModel } from '../test/fixtures/fake-model/server.ts';
import { aKey, anOrg } from '../test/support/builders.ts';
import { aDefaultModel, importFixture } from '../test/support/runs.ts';
import { KeyRing, launchRun } from './harness/run-traffic.ts';
import { emit, freePort, freshBenchDatabase, note, round, send, startPlatformChild, type PlatformChild } from './support.ts';

const RUNS = Number(process.env.BENCH_STEP_RUNS ?? 10);
const WARM_POOL = Number((process.env.BENCH_WARM_POOLS ?? '2').split(',')[0]);
const PG_BIN = process.env.BENCH_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface CountingPostgres {
  adminUrl: string;
  stop(): Promise<void>;
}

/** A throwaway PostgreSQL with pg_stat_statements preloaded (run as the postgres user when we are root). */
async function countingPostgres(): Promise<CountingPostgres> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-steps-pg-'));
  fs.chmodSync(dir, 0o777);
  const asPg = (cmd: string, args: string[]) => (process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] as const : [cmd, args] as const);
  const [initCmd, initArgs] = asPg(path.join(PG_BIN, 'initdb'), ['-D', path.join(dir, 'data'), '-U', 'postgres', '-A', 'trust']);
  execFileSync(initCmd, [...initArgs], { stdio: 'ignore' });
  const port = await freePort();
  const [cmd, args] = asPg(path.join(PG_BIN, 'postgres'), [
    '-D', path.join(dir, 'data'), '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200',
    '-c', 'shared_preload_libraries=pg_stat_statements', '-c', 'pg_stat_statements.track=all', '-c', 'pg_stat_statements.max=10000',
  ]);
  const proc: ChildProcess = spawn(cmd, [...args], { stdio: 'ignore' });
  const adminUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
  for (let i = 0; ; i++) {
    const c = new pg.Client({ connectionString: adminUrl });
    try {
      await c.connect();
      await c.end();
      break;
    } catch {
      if (i > 200) throw new Error('the counting PostgreSQL did not start');
      await sleep(100);
    }
  }
  return {
    adminUrl,
    async stop() {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGINT');
      await Promise.race([exited, sleep(15_000)]);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface StatementCounts {
  top: number;
  nested: number;
  recorderCalls: number;
}

async function statementCounts(pool: pg.Pool): Promise<StatementCounts> {
  const { rows } = await pool.query<{ top: string; nested: string; recorder: string }>(
    `SELECT COALESCE(sum(calls) FILTER (WHERE toplevel), 0) AS top,
            COALESCE(sum(calls) FILTER (WHERE NOT toplevel), 0) AS nested,
            COALESCE(sum(calls) FILTER (WHERE toplevel AND query ~ 'FROM record_run_events?\\('), 0) AS recorder
       FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
      WHERE d.datname = current_database() AND query NOT LIKE '%pg_stat_statements%'`,
  );
  return { top: Number(rows[0].top), nested: Number(rows[0].nested), recorderCalls: Number(rows[0].recorder) };
}

/** The engine's admin SQL (POST /query), as rows. */
async function engineQuery(adminUrl: string, query: string): Promise<Array<Record<string, unknown>>> {
  const res = await fetch(`${adminUrl}/query`, {
    method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify({ query }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`engine query answered ${res.status}: ${text.slice(0, 300)}`);
  return (JSON.parse(text) as { rows: Array<Record<string, unknown>> }).rows;
}

async function main(): Promise<void> {
  const counting = await countingPostgres();
  process.env.BENCH_PG_ADMIN_URL = counting.adminUrl;
  const fake = await startFakeModel({ latencyMs: 0 });
  const db = await freshBenchDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  let platform: PlatformChild | null = null;
  try {
    await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    platform = await startPlatformChild({
      env: {
        DATABASE_URL: db.url,
        SANDBOX_WARM_POOL: String(WARM_POOL),
        PLATFORM_RUN_LIMITS: JSON.stringify({ max_concurrent_per_org: 100_000, per_org_global_rate_per_min: 1_000_000 }),
        EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host,
      },
    });
    const ports = JSON.parse(fs.readFileSync(path.join(platform.dataDir, 'ports.json'), 'utf8')) as { restateAdmin: number };
    const engineAdmin = `http://127.0.0.1:${ports.restateAdmin}`;
    const org = await anOrg(pool);
    const admin = await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId });
    await aDefaultModel(platform.url, admin.key, fake.url);
    await importFixture(platform.url, admin.key, 'agent-echo');
    const keys = new KeyRing(pool, org);
    const successMs: number[] = [];
    const runOnce = async (): Promise<string> => {
      const l = await launchRun(platform!.url, await keys.next());
      const launchedAt = performance.now() - l.ms;
      if (l.status !== 201) throw new Error(`launch answered ${l.status} ${l.code}`);
      for (;;) {
        const r = await send('GET', `${platform!.url}/api/runs/${l.id}?wait=30`, { headers: { authorization: `Bearer ${admin.key}` } });
        if (['success', 'failed', 'timeout', 'cancelled'].includes(r.body?.status)) {
          if (r.body.status !== 'success') throw new Error(`run ${l.id} ended ${r.body.status}: ${JSON.stringify(r.body.error)}`);
          successMs.push(performance.now() - launchedAt);
          return l.id as string;
        }
      }
    };
    // warm up: the first runs pay for caches and the pool's first pairs
    for (let i = 0; i < 2; i++) await runOnce();
    await sleep(3_000);

    // the idle share over a window as long as the runs will take (measured first, at rest)
    const runIds: string[] = [];
    successMs.length = 0;
    const began = performance.now();
    await pool.query('SELECT pg_stat_statements_reset()');
    for (let i = 0; i < RUNS; i++) {
      runIds.push(await runOnce());
      // the pool refills and the workflow tears down between runs, as in bench/runs.ts
      await sleep(1_000);
    }
    await sleep(2_000);
    const runsMs = performance.now() - began;
    const withRuns = await statementCounts(pool);
    await pool.query('SELECT pg_stat_statements_reset()');
    await sleep(runsMs);
    const idle = await statementCounts(pool);

    const list = runIds.map((id) => `'${id}'`).join(',');
    const invocations = await engineQuery(engineAdmin, `SELECT target_handler_name AS handler, count(*) AS n, sum(journal_size) AS journal FROM sys_invocation WHERE target_service_key IN (${list}) GROUP BY target_handler_name`);
    const byHandler: Record<string, { invocations: number; journal_entries: number }> = {};
    let invocationTotal = 0;
    let journalTotal = 0;
    for (const row of invocations) {
      const n = Number(row.n);
      const journal = Number(row.journal ?? 0);
      byHandler[String(row.handler)] = { invocations: round(n / RUNS, 2), journal_entries: round(journal / RUNS, 2) };
      invocationTotal += n;
      journalTotal += journal;
    }
    const lastRun = runIds[runIds.length - 1];
    const entries = await engineQuery(engineAdmin, `SELECT j.entry_type AS kind, j.name AS name FROM sys_journal j JOIN sys_invocation i ON i.id = j.id WHERE i.target_service_key = '${lastRun}' AND i.target_handler_name = 'run' ORDER BY j.index`)
      .catch((err) => [{ kind: 'unavailable', name: String(err.message).slice(0, 200) }]);
    const kinds: Record<string, number> = {};
    for (const e of entries) kinds[String(e.kind)] = (kinds[String(e.kind)] ?? 0) + 1;

    const per = (n: number) => round(n / RUNS, 2);
    emit({
      bench: 'run-steps',
      checkout: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(),
      runs: RUNS,
      warm_pool: WARM_POOL,
      per_run: {
        signed_event_posts: per(withRuns.recorderCalls),
        sql_top_level: per(withRuns.top - idle.top),
        sql_nested: per(withRuns.nested - idle.nested),
        engine_invocations: per(invocationTotal),
        journal_entries: per(journalTotal),
        by_handler: byHandler,
      },
      // a figure of the machine's load at the time, not of the steps: beside the counts only
      launch_to_success_ms: { p50: round(successMs.sort((a, b) => a - b)[Math.floor(successMs.length / 2)]), max: round(Math.max(...successMs)) },
      gross: { sql_top_level: per(withRuns.top), sql_nested: per(withRuns.nested) },
      idle_window: { ms: Math.round(runsMs), sql_top_level: idle.top, sql_nested: idle.nested },
      last_run_journal: { run: lastRun, entries: entries.length, by_kind: kinds, names: entries.map((e) => `${e.kind}${e.name ? `:${e.name}` : ''}`) },
    });
  } finally {
    await platform?.dispose().catch(() => {});
    await pool.end().catch(() => {});
    await db.drop().catch(() => {});
    await fake.close().catch(() => {});
    await counting.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
