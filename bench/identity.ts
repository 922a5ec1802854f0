// Authentication cost benchmark. Prints one JSON object: GET /api/spaces with an API key (the
// credential resolved once, then served from the auth cache; the handler's own query remains)
// against the same route's unauthenticated 401 path (no database at all), 32 connections for
// about 10 s each, their ratio, the database transactions per request (counted by PostgreSQL:
// pg_stat_database.xact_commit of the benchmark's database), and the cheapest route
// (/health/live) as this machine's ceiling at the time.
// Targets: >= 5,000 req/s and p99 < 20 ms authenticated.
// The platform is the real process (`node bin/start.mjs platform`, NODE_ENV=production,
// DATABASE_URL on a fresh database, no warm sandboxes); the load comes from wrk when installed,
// else autocannon (bench/harness/load.ts). Database: as bench/support.ts says.
//   node --import tsx bench/identity.ts
import os from 'node:os';
import pg from 'pg';
import { aKey, anOrg, aSpace } from '../test/support/builders.ts';
import { generator, load } from './harness/load.ts';
import { emit, freshBenchDatabase, note, startPlatformChild } from './support.ts';

const ROUTE = '/api/spaces';
const CONNECTIONS = 32;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const TARGETS = { requests_per_sec: 5000, p99_ms: 20 };

async function main(): Promise<void> {
  const db = await freshBenchDatabase();
  const platform = await startPlatformChild({ env: { DATABASE_URL: db.url, SANDBOX_WARM_POOL: '0' } });
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  try {
    const org = await anOrg(pool);
    for (let i = 0; i < 5; i++) await aSpace(pool, org.orgId, { name: `Space ${i}` });
    const { key } = await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId, scopes: ['spaces:read'] });
    // Transactions committed in this database so far (the statistics lag by up to half a second).
    const commits = async () => {
      await new Promise((r) => setTimeout(r, 700));
      const { rows } = await pool.query<{ n: string }>('SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()');
      return Number(rows[0].n);
    };
    const measure = async (route: string, headers: Record<string, string>, expect: number) => {
      const before = await commits();
      const r = await load({ url: platform.url + route, connections: CONNECTIONS, seconds: SECONDS, headers, expect });
      // the one query of commits() itself counts too
      const transactions = (await commits()) - before - 1;
      return { route: `GET ${route}`, status: expect, ...r, db_transactions_per_request: Number((Math.max(0, transactions) / r.total).toFixed(3)) };
    };
    const auth = { authorization: `Bearer ${key}` };
    note('warm-up');
    await load({ url: platform.url + ROUTE, connections: 10, seconds: 2, headers: auth, expect: 200 });
    note(`authenticated GET ${ROUTE}`);
    const authenticated = await measure(ROUTE, auth, 200);
    note(`unauthenticated GET ${ROUTE}`);
    const unauthenticated = await measure(ROUTE, {}, 401);
    note('GET /health/live (ceiling)');
    const ceiling = await measure('/health/live', {}, 200);
    emit({
      benchmark: 'identity',
      setup: {
        platform: 'node bin/start.mjs platform (child process, NODE_ENV=production, SANDBOX_WARM_POOL=0, DATABASE_URL on a fresh database)',
        generator: generator(), connections: CONNECTIONS, seconds: SECONDS,
        load_average_after: os.loadavg().map((l) => Number(l.toFixed(2))),
      },
      authenticated,
      unauthenticated,
      ceiling,
      ratio: Number((authenticated.requests_per_sec / unauthenticated.requests_per_sec).toFixed(3)),
      targets: TARGETS,
      meets_targets: { requests_per_sec: authenticated.requests_per_sec >= TARGETS.requests_per_sec, p99_ms: authenticated.p99_ms < TARGETS.p99_ms },
    });
  } finally {
    await pool.end();
    await platform.dispose();
    await db.drop();
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
