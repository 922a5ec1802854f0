// Cost of the HTTP pipeline, and start-up time. Prints one JSON object:
//  (a) GET /api/openapi.json with If-None-Match (a 304) through the full platform pipeline against
//      a bare Express 5 app answering the same 304: requests/s, p50/p99, their ratio;
//  (b) the same for a 404 problem (GET /api/nope);
//  (c) start -> first 200 on /api/openapi.json of `node bin/start.mjs platform` on an existing data
//      folder (embedded PostgreSQL and Restate), three restarts and their median.
// Targets: pipeline >= 90% of bare, >= 10,000 req/s, p99 < 10 ms; start < 2 s.
// The platform is the real process (`node bin/start.mjs platform`, DATABASE_URL on a fresh
// database, no warm sandboxes so nothing else competes); the bare app is a child process too;
// the load comes from wrk when installed (else autocannon; bench/harness/load.ts), 32 connections,
// 2 s warm-up then 10 s per case, taken in 2 s slices alternating between the bare app and the
// pipeline.
//   node --import tsx bench/pipeline.ts
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import express from 'express';
import { generator, load } from './harness/load.ts';
import {
  bundleStamp, emit, ensureBundle, freshBenchDatabase, loadAverage, median, note, round, startPlatformChild, type LoadFigures,
} from './support.ts';

const CONNECTIONS = 32;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = 2;
const SLICE_SECONDS = 2;
const RESTARTS = 3;
const TARGETS = { ratio_to_bare: 0.9, requests_per_sec: 10_000, p99_ms: 10, start_ms: 2000 };

// ------------------------------------------------------------------ the bare baseline process

/** A bare Express 5 app answering the same 304 and a 404 problem, with nothing else in front. */
async function serveBare(etag: string): Promise<void> {
  const app = express();
  // as the platform's app: no x-powered-by, no generated ETags
  app.disable('x-powered-by');
  app.set('etag', false);
  app.get('/api/openapi.json', (req, res) => {
    const inm = req.headers['if-none-match'];
    if (inm && inm.split(',').some((t) => t.trim() === etag)) {
      res.status(304).setHeader('ETag', etag);
      res.end();
      return;
    }
    res.status(200).json({ openapi: '3.1.0' });
  });
  app.use((req, res) => {
    res.status(404).setHeader('Content-Type', 'application/problem+json; charset=utf-8');
    res.end(JSON.stringify({ type: 'https://errors.agent-platform.dev/not_found', title: 'Not found', status: 404, code: 'not_found', detail: 'No such route.', instance: req.path }));
  });
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  process.on('message', () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
  process.send!({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}

async function startBare(etag: string): Promise<{ url: string; stop(): Promise<void> }> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--bare', etag], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { url } = await new Promise<{ url: string }>((resolve, reject) => {
    child.once('message', resolve as never);
    child.once('exit', (code) => reject(new Error(`the bare app exited (${code})`)));
  });
  return {
    url,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ op: 'stop' });
      await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

// ------------------------------------------------------------------ measuring

interface Case {
  url: string;
  headers: Record<string, string>;
}

type Slice = LoadFigures & { seconds: number };

async function slice(c: Case, seconds: number, expect: number): Promise<Slice> {
  const f = await load({ url: c.url, headers: c.headers, connections: CONNECTIONS, seconds, expect });
  return { ...f, seconds: f.total / Math.max(1, f.requests_per_sec) };
}

/**
 * The bare app and the pipeline in alternating 2 s slices (SECONDS each in all, after a warm-up),
 * so a change in the machine's load during the measurement touches both alike. Requests/s pools
 * the slices; p50 is the median of the slices' p50, p99 the worst slice's p99.
 */
async function sideBySide(bare: Case, pipeline: Case, expected: number): Promise<{ bare: LoadFigures; pipeline: LoadFigures }> {
  await slice(bare, WARMUP_SECONDS, expected);
  await slice(pipeline, WARMUP_SECONDS, expected);
  const pooled = { bare: [] as Slice[], pipeline: [] as Slice[] };
  for (let i = 0; i < SECONDS / SLICE_SECONDS; i++) {
    pooled.bare.push(await slice(bare, SLICE_SECONDS, expected));
    pooled.pipeline.push(await slice(pipeline, SLICE_SECONDS, expected));
  }
  const figures = (slices: Slice[]): LoadFigures & { slices_p99_ms: number[] } => {
    const total = slices.reduce((n, s) => n + s.total, 0);
    return {
      requests_per_sec: Math.round(total / slices.reduce((t, s) => t + s.seconds, 0)),
      p50_ms: median(slices.map((s) => s.p50_ms)),
      p99_ms: Math.max(...slices.map((s) => s.p99_ms)),
      max_ms: Math.max(...slices.map((s) => s.max_ms)),
      total, statuses: { [expected]: total }, errors: 0,
      slices_p99_ms: slices.map((s) => s.p99_ms),
    };
  };
  return { bare: figures(pooled.bare), pipeline: figures(pooled.pipeline) };
}

function compare(pipeline: LoadFigures, bare: LoadFigures) {
  const ratio = round(pipeline.requests_per_sec / bare.requests_per_sec, 3);
  return {
    pipeline,
    bare,
    ratio_to_bare: ratio,
    meets_targets: {
      ratio_to_bare: ratio >= TARGETS.ratio_to_bare,
      requests_per_sec: pipeline.requests_per_sec >= TARGETS.requests_per_sec,
      p99_ms: pipeline.p99_ms < TARGETS.p99_ms,
    },
  };
}

async function throughput() {
  const db = await freshBenchDatabase();
  // no warm sandboxes: only the HTTP path runs in the platform process
  const platform = await startPlatformChild({ env: { DATABASE_URL: db.url, SANDBOX_WARM_POOL: '0' } });
  let bare: Awaited<ReturnType<typeof startBare>> | null = null;
  try {
    const first = await fetch(`${platform.url}/api/openapi.json`);
    await first.arrayBuffer();
    const etag = first.headers.get('etag');
    if (!etag) throw new Error('the platform sent no ETag on /api/openapi.json');
    bare = await startBare(etag);
    const conditional = { 'if-none-match': etag };
    note('304: bare and pipeline');
    const notModified = await sideBySide({ url: `${bare.url}/api/openapi.json`, headers: conditional }, { url: `${platform.url}/api/openapi.json`, headers: conditional }, 304);
    note('404: bare and pipeline');
    const notFound = await sideBySide({ url: `${bare.url}/api/nope`, headers: {} }, { url: `${platform.url}/api/nope`, headers: {} }, 404);
    return { not_modified: compare(notModified.pipeline, notModified.bare), not_found: compare(notFound.pipeline, notFound.bare) };
  } finally {
    await bare?.stop();
    await platform.dispose();
    await db.drop();
  }
}

async function startup() {
  await ensureBundle();
  note('start-up: first start creates the data folder');
  const first = await startPlatformChild({ readyTimeoutMs: 180_000 });
  const { dataDir, port } = first;
  await first.stop();
  const restarts: Array<{ first_openapi_200_ms: number; ready_ms: number; rebuilt_bundle: boolean }> = [];
  try {
    for (let i = 0; i < RESTARTS; i++) {
      const stamp = bundleStamp();
      const p = await startPlatformChild({ dataDir, port });
      restarts.push({ first_openapi_200_ms: p.firstOpenApiMs, ready_ms: p.readyMs, rebuilt_bundle: bundleStamp() !== stamp });
      note(`restart ${i + 1}: openapi 200 after ${p.firstOpenApiMs} ms, ready after ${p.readyMs} ms`);
      await p.stop();
    }
  } finally {
    await first.dispose();
  }
  const med = median(restarts.map((r) => r.first_openapi_200_ms));
  return {
    first_start_ms: first.firstOpenApiMs,
    restarts,
    median_first_openapi_200_ms: round(med),
    median_ready_ms: round(median(restarts.map((r) => r.ready_ms))),
    target_ms: TARGETS.start_ms,
    meets_target: med < TARGETS.start_ms,
  };
}

async function main(): Promise<void> {
  const loadBefore = loadAverage();
  const served = await throughput();
  const start = await startup();
  emit({
    benchmark: 'pipeline',
    setup: {
      platform: 'node bin/start.mjs platform (child process, NODE_ENV=production, SANDBOX_WARM_POOL=0, DATABASE_URL set for (a) and (b))',
      baseline: 'bare Express 5 app in a child process',
      generator: generator(),
      connections: CONNECTIONS, warmup_seconds: WARMUP_SECONDS, seconds: SECONDS, slice_seconds: SLICE_SECONDS,
      load_average_before: loadBefore,
      load_average_after: loadAverage(),
    },
    targets: TARGETS,
    ...served,
    start,
  });
}

if (process.argv[2] === '--bare') {
  await serveBare(process.argv[3]);
} else {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
