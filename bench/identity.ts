// Authentication cost benchmark. Prints one JSON object: GET /api/spaces with an API key (the
// credential resolved once, then served from the auth cache; the handler's own query remains)
// against the same route's unauthenticated 401 path (no database at all), 50 connections for
// about 10 s each, their ratio, the database round trips per request, and the cheapest route
// (/health/live) as this machine's ceiling at the time. Targets: >= 5,000 req/s and p99 < 20 ms authenticated.
// The API runs in this process; the load generator runs in a worker thread so both do not share
// one event loop. Database: BENCH_PG_ADMIN_URL, TEST_PG_ADMIN_URL or TEST_DATABASE_URL, else the
// PostgreSQL on 127.0.0.1:5432; a database is created for the run and dropped afterwards.
//   node --import tsx bench/identity.ts
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { createApp } from '../api/app.ts';
import type { AppDeps } from '../api/deps.ts';
import { createLifecycle } from '../api/lifecycle.ts';
import { allRoutes } from '../api/routes/index.ts';
import { createAuthCache } from '../api/services/auth-cache.ts';
import { connectDatabase } from '../db/client.ts';
import { applyMigrations } from '../db/migrate.ts';
import { createMemoryStore } from '../lib/cache/memory.ts';
import { loadConfig } from '../lib/config.ts';
import { createSecretBox } from '../lib/crypto.ts';
import { createLogger } from '../lib/log.ts';
import { aKey, anOrg, aSpace } from '../test/support/builders.ts';

interface CannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  statusCodeStats: Record<string, { count: number }>;
}
// autocannon ships no type declarations
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: object) => Promise<CannonResult>;

const ROUTE = '/api/spaces';
const CONNECTIONS = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);

function adminUrl(): string {
  return process.env.BENCH_PG_ADMIN_URL ?? process.env.TEST_PG_ADMIN_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
}

async function withDatabase<T>(run: (url: string) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  const name = `ap_bench_${randomBytes(5).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const u = new URL(adminUrl());
  u.pathname = `/${name}`;
  try {
    return await run(u.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end();
  }
}

/** Database round trips made through the API's pool, to show what authentication costs. */
function countQueries(pool: pg.Pool): { take(): number } {
  let n = 0;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    n++;
    return query(...args);
  };
  return { take: () => { const v = n; n = 0; return v; } };
}

async function measure(url: string, route: string, headers: Record<string, string>, expected: number, queries: { take(): number }) {
  queries.take();
  const r = await autocannon({ url: url + route, connections: CONNECTIONS, duration: SECONDS, headers, workers: 1 });
  const codes = Object.keys(r.statusCodeStats ?? {});
  if (r.errors || codes.some((c) => Number(c) !== expected)) throw new Error(`unexpected answers: ${JSON.stringify(r.statusCodeStats)}, ${r.errors} errors`);
  return {
    route: `GET ${route}`,
    status: expected,
    requests_per_sec: Math.round(r.requests.average),
    p50_ms: r.latency.p50,
    p99_ms: r.latency.p99,
    db_queries_per_request: Number((queries.take() / Math.max(1, r.requests.total)).toFixed(3)),
  };
}

async function main(): Promise<void> {
  await withDatabase(async (databaseUrl) => {
    const config = loadConfig({ NODE_ENV: 'production', LOG_LEVEL: 'error', DATABASE_URL: databaseUrl });
    const log = createLogger(config.LOG_LEVEL);
    const database = connectDatabase(databaseUrl, { max: 20 });
    await applyMigrations(database);
    const authCache = await createAuthCache(databaseUrl, log);
    const deps: AppDeps = {
      config, log, database, cache: createMemoryStore(), authCache, lifecycle: createLifecycle(config.SHUTDOWN_DRAIN_SECONDS),
      secrets: createSecretBox(randomBytes(32)), bootstrapToken: randomBytes(16).toString('hex'),
    };
    const { app } = createApp(deps, { routes: allRoutes(), modules: [], log, version: 'bench' });
    const server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    deps.lifecycle.ready = true;
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const org = await anOrg(database.pool);
      for (let i = 0; i < 5; i++) await aSpace(database.pool, org.orgId, { name: `Space ${i}` });
      const { key } = await aKey(database.pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId, scopes: ['spaces:read'] });
      // Warm up: the key is resolved once and cached; JIT settles.
      await autocannon({ url: url + ROUTE, connections: 10, amount: 2000, headers: { authorization: `Bearer ${key}` } });
      const queries = countQueries(database.pool);
      const authenticated = await measure(url, ROUTE, { authorization: `Bearer ${key}` }, 200, queries);
      const unauthenticated = await measure(url, ROUTE, {}, 401, queries);
      // The cheapest route of the process (no authentication, no database): this machine's ceiling now.
      const ceiling = await measure(url, '/health/live', {}, 200, queries);
      const out = {
        benchmark: 'identity',
        connections: CONNECTIONS,
        seconds: SECONDS,
        load_average: os.loadavg().map((l) => Number(l.toFixed(2))),
        authenticated,
        unauthenticated,
        ceiling,
        ratio: Number((authenticated.requests_per_sec / unauthenticated.requests_per_sec).toFixed(3)),
        targets: { requests_per_sec: 5000, p99_ms: 20 },
        meets_targets: authenticated.requests_per_sec >= 5000 && authenticated.p99_ms < 20,
      };
      process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await authCache.close();
      await database.close();
    }
  });
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
