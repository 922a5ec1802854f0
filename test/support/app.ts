// The API in-process over a fresh database, listening on a free port: what most tests talk to.
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { createApp } from '../../api/app.ts';
import { createHttpServer } from '../../api/server.ts';
import type { AppDeps } from '../../api/deps.ts';
import { createLifecycle } from '../../api/lifecycle.ts';
import { loadModules } from '../../api/modules/index.ts';
import { allRoutes } from '../../api/routes/index.ts';
import { createAuthCache } from '../../api/services/auth-cache.ts';
import { createRunReadCache } from '../../api/services/runs/read-cache.ts';
import { createRunStatusFeed } from '../../api/services/runs/status-feed.ts';
import { startRealtime } from '../../api/services/realtime/index.ts';
import { connectDatabase } from '../../db/client.ts';
import { createMemoryStore } from '../../lib/cache/memory.ts';
import { createRedisStore } from '../../lib/cache/redis.ts';
import { loadConfig } from '../../lib/config.ts';
import { createSecretBox } from '../../lib/crypto.ts';
import { createLogger } from '../../lib/log.ts';
import { freshDatabase } from './db.ts';
import { after, before } from 'node:test';
import { aSession } from './builders.ts';
import { client } from './http.ts';

export interface TestApp {
  url: string;
  deps: AppDeps;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  /** use the shared Redis cache instead of process memory */
  redis?: boolean;
  /** start as not yet ready (503 starting) */
  notReady?: boolean;
  /** Redis key prefix; two apps given the same one share rate-limit buckets and idempotency records */
  cachePrefix?: string;
  /** run over this database (another app's) instead of a fresh one; it is left in place on close */
  databaseUrl?: string;
  /** the run workflow's client (events then signal the engine through it) */
  runs?: AppDeps['runs'];
  /** the 127.0.0.1 port to listen on; the OS picks one when absent */
  port?: number;
  /** the instance key's box (another app's, so both open what either sealed); a fresh key when absent */
  secrets?: AppDeps['secrets'];
}

export async function startTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const tdb = opts.databaseUrl ? { url: opts.databaseUrl, drop: async () => {} } : await freshDatabase();
  const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'error', DATABASE_URL: tdb.url, BOOTSTRAP_TOKEN: 'test-bootstrap-token-0123456789', ...opts.env });
  const log = createLogger(config.LOG_LEVEL);
  const database = connectDatabase(tdb.url, { max: 10 });
  const cache = opts.redis ? createRedisStore(process.env.TEST_REDIS_URL!, opts.cachePrefix ?? `t:${randomBytes(4).toString('hex')}:`) : createMemoryStore();
  const authCache = await createAuthCache(tdb.url, log);
  const lifecycle = createLifecycle(config.SHUTDOWN_DRAIN_SECONDS);
  const runFeed = await createRunStatusFeed(tdb.url, log);
  const runReads = createRunReadCache(runFeed);
  const realtime = startRealtime({
    pool: database.pool, feed: runFeed, authCache, log, pingSeconds: config.REALTIME_PING_SECONDS,
    redisUrl: opts.redis ? process.env.TEST_REDIS_URL : config.REDIS_URL,
  });
  const deps: AppDeps = {
    config, log, database, cache, authCache, lifecycle,
    secrets: opts.secrets ?? createSecretBox(randomBytes(32)),
    bootstrapToken: config.BOOTSTRAP_TOKEN!,
    runFeed,
    runReads,
    realtime,
    runs: opts.runs,
    // as bin/host.ts does: the database now, the API's port once it listens
    platformEndpoints: [{ host: new URL(tdb.url).hostname, port: Number(new URL(tdb.url).port || 5432) }],
  };
  const modules = await loadModules(config.MODULES, deps);
  const { app } = createApp(deps, { routes: allRoutes(), modules, log, version: 'test' });
  const server = createHttpServer(app, { typeBase: config.ERROR_TYPE_BASE });
  await new Promise<void>((r) => server.listen(opts.port ?? 0, '127.0.0.1', () => r()));
  lifecycle.ready = !opts.notReady;
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  deps.platformEndpoints!.push({ host: '127.0.0.1', port: (server.address() as AddressInfo).port });
  return {
    url,
    deps,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await realtime.close();
      runReads.close();
      await runFeed.close();
      await authCache.close();
      await cache.close();
      await database.close();
      await tdb.drop();
    },
  };
}

/**
 * Registers before/after hooks that start and close an app for the file, and answers accessors
 * (the app exists only once the hooks ran).
 */
export function useTestApp(opts: TestAppOptions = {}) {
  let app: TestApp;
  before(async () => {
    app = await startTestApp(opts);
  });
  after(() => app.close());
  const pool = () => app.deps.database.pool;
  return {
    app: () => app,
    pool,
    api: () => client(app.url),
    sessionOf: async (userId: string) => (await aSession(pool(), userId)).cookie,
  };
}
