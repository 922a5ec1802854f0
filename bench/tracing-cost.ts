// What tracing costs, in one benchmark run: the same platform (a child process over one database)
// started twice, tracing off and then on (exporting http/protobuf to a loopback OTLP receiver in
// this process), each serving the same sequential runs of the echo agent and the same sequential
// authenticated reads. Prints CPU seconds per run (platform, sandboxes, Restate, the database's
// backends) and CPU milliseconds of the platform process per request, off and on, and the
// difference in percent. The aim: under 5% of a run's CPU.
//   npm run bench -- tracing-cost          BENCH_TRACING_RUNS=10 BENCH_TRACING_REQUESTS=500
//   BENCH_TRACING_PROFILE_DIR=/tmp/p: V8 CPU profiles of the platform process off and on (<dir>/off, <dir>/on)
import fs from 'node:fs';
import pg from 'pg';
import { aKey, anOrg } from '../test/support/builders.ts';
import { startFakeModel } from '../test/fixtures/fake-model/server.ts';
import { startOtlpReceiver } from '../test/support/otlp-receiver.ts';
import { aDefaultModel, importFixture } from '../test/support/runs.ts';
import { RunCpuMeter } from './harness/cpu-accounting.ts';
import { cpuOf } from './harness/process-stats.ts';
import { AGENT, launchRun } from './harness/run-traffic.ts';
import { emit, freshBenchDatabase, note, round, send, startPlatformChild } from './support.ts';

const RUNS = Number(process.env.BENCH_TRACING_RUNS ?? 10);
const REQUESTS = Number(process.env.BENCH_TRACING_REQUESTS ?? 500);

const fake = await startFakeModel({});
const receiver = await startOtlpReceiver();
const db = await freshBenchDatabase();
const pool = new pg.Pool({ connectionString: db.url, max: 2 });

/** `seeded`: the first platform's key and data folder (its instance key opens the model's credential). */
async function measure(mode: 'off' | 'on', seeded: { key: string; dataDir: string; port: number } | null) {
  const env: Record<string, string> = {
    DATABASE_URL: db.url,
    SANDBOX_WARM_POOL: '1',
    EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host,
    ...(mode === 'on' ? { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      // tracing alone: the same endpoint would also export metrics (sdk-metrics on every request was the
      // largest OpenTelemetry share of a profile of the two), which bench/ does not count as tracing
      OTEL_METRICS_EXPORTER: 'none', OTEL_BSP_SCHEDULE_DELAY: '1000' } : {}),
  };
  note(`tracing ${mode}: starting the platform`);
  // BENCH_TRACING_PROFILE_DIR: V8 CPU profiles of the platform process, off and on, to compare
  const profile = process.env.BENCH_TRACING_PROFILE_DIR;
  const nodeArgs = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}/${mode}`] : undefined;
  const platform = await startPlatformChild({ env, nodeArgs, ...(seeded ? { dataDir: seeded.dataDir, port: seeded.port } : {}) });
  try {
    let key = seeded?.key;
    if (!key) {
      const org = await anOrg(pool);
      key = (await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId })).key;
      await aDefaultModel(platform.url, key, fake.url);
      await importFixture(platform.url, key, AGENT.split('/')[1]);
    }
    const runOnce = async () => {
      const l = await launchRun(platform.url, key!);
      if (l.status !== 201) throw new Error(`launch answered ${l.status} ${l.code}`);
      const done = await send('GET', `${platform.url}/api/runs/${l.id}?wait=60`, { headers: { authorization: `Bearer ${key}` } });
      if (done.body?.status !== 'success') throw new Error(`run ended ${done.body?.status}: ${JSON.stringify(done.body?.error)}`);
      return l.id!;
    };
    note(`tracing ${mode}: warm-up`);
    const lastRun = await runOnce();
    await runOnce();

    const where = { platformPid: platform.proc.pid!, dataDir: platform.dataDir, dbName: db.name };
    note(`tracing ${mode}: ${RUNS} sequential runs`);
    // every process of the runs counted, the confined agents too (bench/harness/tree-cpu.ts)
    const meter = RunCpuMeter.start(where, { sampleEveryMs: null });
    for (let i = 0; i < RUNS; i++) await runOnce();
    const perRun = await meter.stop(RUNS);

    note(`tracing ${mode}: ${REQUESTS} sequential reads`);
    const cpu0 = cpuOf(where.platformPid)!.own;
    const r0 = performance.now();
    for (let i = 0; i < REQUESTS; i++) {
      const r = await send('GET', `${platform.url}/api/runs/${lastRun}`, { headers: { authorization: `Bearer ${key}` } });
      if (r.status !== 200) throw new Error(`read answered ${r.status}`);
    }
    const perRequest = {
      requests: REQUESTS,
      platform_cpu_ms: round(((cpuOf(where.platformPid)!.own - cpu0) * 1000) / REQUESTS, 3),
      wall_ms: round((performance.now() - r0) / REQUESTS, 3),
    };
    return { key, dataDir: platform.dataDir, port: platform.port, figures: { per_run_cpu_seconds: perRun, per_request: perRequest } };
  } finally {
    await platform.stop();
  }
}

let dataDir: string | undefined;
try {
  const off = await measure('off', null);
  dataDir = off.dataDir;
  const spansBefore = receiver.spans.length;
  const on = await measure('on', off);
  const pct = (a: number, b: number) => (a > 0 ? round(((b - a) / a) * 100, 1) : null);
  emit({
    benchmark: 'tracing-cost',
    runs: RUNS,
    off: off.figures,
    on: { ...on.figures, spans_exported: receiver.spans.length - spansBefore },
    tracing_cost_percent: {
      per_run_all_processes: pct(off.figures.per_run_cpu_seconds.all_parts, on.figures.per_run_cpu_seconds.all_parts),
      per_run_platform_process: pct(off.figures.per_run_cpu_seconds.per_part.platform, on.figures.per_run_cpu_seconds.per_part.platform),
      per_request_platform_process: pct(off.figures.per_request.platform_cpu_ms, on.figures.per_request.platform_cpu_ms),
    },
  });
} finally {
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  await pool.end();
  await db.drop();
  await receiver.close();
  await fake.close();
}
