// The API assembled in-process over a DATABASE_URL, with no workflow engine, as the benchmarks'
// API processes serve it.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../api/app.ts';
import type { AppDeps } from '../../api/deps.ts';
import { createLifecycle } from '../../api/lifecycle.ts';
import { loadModules } from '../../api/modules/index.ts';
import { allRoutes } from '../../api/routes/index.ts';
import { createAuthCache } from '../../api/services/auth-cache.ts';
import { createRunReadCache } from '../../api/services/runs/read-cache.ts';
import { createRunStatusFeed } from '../../api/services/runs/status-feed.ts';
import { connectDatabase } from '../../db/client.ts';
import { createMemoryStore } from '../../lib/cache/memory.ts';
import { loadConfig } from '../../lib/config.ts';
import { createSecretBox } from '../../lib/crypto.ts';
import { createLogger } from '../../lib/log.ts';

export interface BenchApi {
  url: string;
  close(): Promise<void>;
}

/**
 * env must hold DATABASE_URL; production settings and quiet logs unless env says otherwise.
 * runReadCache false serves every run read from the database (uncached costs).
 */
export async function startBenchApi(env: Record<string, string>, opts: { dbMax?: number; runReadCache?: boolean } = {}): Promise<BenchApi> {
  const config = loadConfig({ NODE_ENV: 'production', LOG_LEVEL: 'error', ...env });
  const log = createLogger(config.LOG_LEVEL);
  const database = connectDatabase(config.DATABASE_URL!, { max: opts.dbMax });
  const authCache = await createAuthCache(config.DATABASE_URL!, log);
  const runFeed = await createRunStatusFeed(config.DATABASE_URL!, log);
  const runReads = createRunReadCache(runFeed);
  const deps: AppDeps = {
    config, log, database, cache: createMemoryStore(), authCache, lifecycle: createLifecycle(config.SHUTDOWN_DRAIN_SECONDS),
    secrets: createSecretBox(randomBytes(32)), bootstrapToken: randomBytes(16).toString('hex'), runFeed,
    runReads: opts.runReadCache === false ? undefined : runReads,
  };
  const modules = await loadModules(config.MODULES, deps);
  const { app } = createApp(deps, { routes: allRoutes(), modules, log, version: 'bench' });
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  deps.lifecycle.ready = true;
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      server.close();
      runReads.close();
      await runFeed.close();
      await authCache.close();
      await database.close();
    },
  };
}
