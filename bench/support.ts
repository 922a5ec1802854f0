// What the benchmarks share: a fresh migrated database, the platform as a real child process
// (`node bin/start.mjs platform`), autocannon with types, percentiles, and the one-JSON-object
// output. Logs go to stderr; stdout carries only the result.
// Database: BENCH_PG_ADMIN_URL or TEST_PG_ADMIN_URL, else the PostgreSQL on 127.0.0.1:5432 when it
// answers, else an embedded cluster in a temporary folder (removed with the database).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { connectDatabase } from '../db/client.ts';
import { startEmbeddedPostgres } from '../db/embedded-postgres.ts';
import { applyMigrations } from '../db/migrate.ts';
import { freePort } from '../lib/free-port.ts';
import { canConnect } from '../test/support/services.ts';
export { freePort };

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MACHINE_PG = 'postgres://postgres@127.0.0.1:5432/postgres';

// ------------------------------------------------------------------ output

export function note(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

export function emit(result: object): void {
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

export function round(n: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

export interface Spread {
  n: number;
  p50: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentiles of a sample, in its unit, one decimal. */
export function spread(values: number[]): Spread {
  if (!values.length) return { n: 0, p50: NaN, p99: NaN, max: NaN, mean: NaN };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
  return {
    n: sorted.length,
    p50: round(at(50)),
    p99: round(at(99)),
    max: round(sorted[sorted.length - 1]),
    mean: round(sorted.reduce((s, v) => s + v, 0) / sorted.length),
  };
}

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

export function loadAverage(): number[] {
  return os.loadavg().map((l) => round(l, 2));
}

// ------------------------------------------------------------------ autocannon

export interface CannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; max: number; average: number };
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodeStats?: Record<string, { count: number }>;
}
// autocannon ships no type declarations
export const autocannon = createRequire(import.meta.url)('autocannon') as (opts: object) => Promise<CannonResult>;
/** The callback form: returns the running instance, which emits 'response' (client, status, bytes, ms) per answer. */
export const autocannonTracked = autocannon as unknown as (opts: object, done: (err: Error | null, result?: CannonResult) => void) => NodeJS.EventEmitter;

export interface LoadFigures {
  requests_per_sec: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  total: number;
  statuses: Record<string, number>;
  errors: number;
}

export function loadFigures(r: CannonResult): LoadFigures {
  const statuses: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(r.statusCodeStats ?? {})) statuses[code] = count;
  return {
    requests_per_sec: Math.round(r.requests.total / Math.max(1e-9, r.duration)),
    p50_ms: r.latency.p50,
    p99_ms: r.latency.p99,
    max_ms: r.latency.max,
    total: r.requests.total,
    statuses,
    errors: r.errors + r.timeouts,
  };
}

// ------------------------------------------------------------------ network



// ------------------------------------------------------------------ database

export interface BenchDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

interface AdminServer {
  url: string;
  stop(): Promise<void>;
}

async function adminServer(): Promise<AdminServer> {
  const configured = process.env.BENCH_PG_ADMIN_URL ?? process.env.TEST_PG_ADMIN_URL;
  if (configured) return { url: configured, stop: async () => {} };
  if (await canConnect(MACHINE_PG)) return { url: MACHINE_PG, stop: async () => {} };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-pg-'));
  // the embedded server runs as its own user when we are root: it must traverse the folder
  fs.chmodSync(dir, 0o755);
  const embedded = await startEmbeddedPostgres({ dir, port: await freePort() });
  note(`no PostgreSQL answered on 127.0.0.1:5432; using an embedded one in ${dir}`);
  const u = new URL(embedded.url);
  u.pathname = '/postgres';
  return {
    url: u.toString(),
    async stop() {
      await embedded.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A new database with the migrations applied, dropped (with its server, when embedded) by drop(). */
export async function freshBenchDatabase(): Promise<BenchDatabase> {
  const server = await adminServer();
  const name = `ap_bench_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(server.url);
  u.pathname = `/${name}`;
  const url = u.toString();
  const database = connectDatabase(url, { max: 2 });
  await applyMigrations(database);
  await database.close();
  return {
    url,
    name,
    async drop() {
      const c = new pg.Client({ connectionString: server.url });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await c.end();
      await server.stop();
    },
  };
}

// ------------------------------------------------------------------ the platform process

/** Builds dist/ now when a source is newer, so a timed start does not include a rebuild. */
export async function ensureBundle(): Promise<void> {
  const starter = (await import(pathToFileURL(path.join(ROOT, 'bin', 'start.mjs')).href)) as { ensureBundle(): Promise<void> };
  await starter.ensureBundle();
}

export function bundleStamp(): number {
  const stamp = path.join(ROOT, 'dist', '.built');
  return fs.existsSync(stamp) ? fs.statSync(stamp).mtimeMs : 0;
}

export interface PlatformChild {
  url: string;
  port: number;
  dataDir: string;
  proc: ChildProcess;
  /** milliseconds from spawn to the first 200 on /api/openapi.json, and to /health/ready 200 */
  firstOpenApiMs: number;
  readyMs: number;
  output(): string;
  /** SIGTERM and wait (SIGKILL after a while), stop a Restate left behind; keeps the data folder */
  stop(): Promise<void>;
  /** stop(), then remove the data folder */
  dispose(): Promise<void>;
}

export interface PlatformOptions {
  /** settings on top of the benchmark defaults; DATABASE_URL absent means embedded PostgreSQL */
  env?: Record<string, string>;
  /** an existing data folder (a restart); default a new temporary one */
  dataDir?: string;
  port?: number;
  readyTimeoutMs?: number;
  /** node flags for the platform process (BENCH_PLATFORM_NODE_ARGS when absent), e.g. --cpu-prof */
  nodeArgs?: string[];
}

/** Waits up to `ms` for the process named in `pidFile` (first line) to end, then kills it; only if its command names `program`. */
async function stopLeftover(pidFile: string, program: string, ms: number): Promise<void> {
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  const ours = () => {
    try {
      // a zombie has an empty command line: it is gone in all but name
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(program);
    } catch {
      return false;
    }
  };
  const deadline = Date.now() + ms;
  while (ours() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  if (!ours()) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // ended meanwhile
  }
}

/**
 * `node bin/start.mjs platform` as the platform serves, polled every 5 ms: resolves once
 * /health/ready answers 200, with the time to its first 200 on /api/openapi.json (answered before
 * the engine is up, as the API listens first).
 */
export async function startPlatformChild(opts: PlatformOptions = {}): Promise<PlatformChild> {
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'bench-platform-'));
  fs.chmodSync(dataDir, 0o755);
  const port = opts.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    SHUTDOWN_DRAIN_SECONDS: '2',
    ...opts.env,
  };
  let output = '';
  const started = performance.now();
  const nodeArgs = opts.nodeArgs ?? (process.env.BENCH_PLATFORM_NODE_ARGS?.split(' ').filter(Boolean) ?? []);
  const proc = spawn(process.execPath, [...nodeArgs, 'bin/start.mjs', 'platform'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout!.on('data', (d) => (output = (output + d).slice(-20_000)));
  proc.stderr!.on('data', (d) => (output = (output + d).slice(-20_000)));
  const deadline = Date.now() + (opts.readyTimeoutMs ?? 120_000);
  const status = (p: string) => fetch(url + p).then(async (r) => { await r.arrayBuffer(); return r.status; }, () => 0);
  let firstOpenApiMs = NaN;
  let readyMs = NaN;
  while (Number.isNaN(readyMs)) {
    if (proc.exitCode !== null) throw new Error(`the platform exited (${proc.exitCode}):\n${output.slice(-4000)}`);
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`the platform was not ready in time:\n${output.slice(-4000)}`);
    }
    if (Number.isNaN(firstOpenApiMs)) {
      if ((await status('/api/openapi.json')) === 200) firstOpenApiMs = performance.now() - started;
    } else if ((await status('/health/ready')) === 200) {
      readyMs = performance.now() - started;
      break;
    }
    await new Promise((r) => setTimeout(r, 5));
  }

  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000).unref())]);
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    }
    // the embedded PostgreSQL may still be shutting down: wait for it before the folder goes
    await stopLeftover(path.join(dataDir, 'postgres', 'cluster', 'postmaster.pid'), 'postgres', 10_000);
    // a killed platform leaves its embedded Restate behind
    await stopLeftover(path.join(dataDir, 'restate.pid'), 'restate-server', 0);
  };
  return {
    url,
    port,
    dataDir,
    proc,
    firstOpenApiMs: round(firstOpenApiMs),
    readyMs: round(readyMs),
    output: () => output,
    stop,
    async dispose() {
      await stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

// ------------------------------------------------------------------ a keep-alive HTTP client

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 256 });

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
  /** from the first byte sent to the last byte received */
  ms: number;
}

/** One request over kept-alive connections (lighter than fetch, so the timing is the server's). */
export function send(method: string, url: string, opts: { headers?: Record<string, string>; body?: unknown } = {}): Promise<Answer> {
  const payload = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
  const headers: Record<string, string | number> = { ...(opts.headers ?? {}) };
  if (payload) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = payload.length;
  }
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request(url, { method, headers, agent: keepAlive }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const ms = performance.now() - started;
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        if ((res.headers['content-type'] ?? '').includes('json') && text) {
          try {
            body = JSON.parse(text);
          } catch {
            // leave the text
          }
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, ms });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}
