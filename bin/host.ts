// Starts the platform: configuration, the data directory (locked: one platform per directory),
// PostgreSQL (embedded unless DATABASE_URL), the shared cache, the workflow engine (embedded
// Restate unless addresses are given) and the HTTP API. Stops everything in reverse on stop().
import { startTracing, stopTracing, tracingSettingsFrom } from '../lib/tracing/index.ts';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { createApp } from '../api/app.ts';
import { createHttpServer } from '../api/server.ts';
import type { AppDeps } from '../api/deps.ts';
import { createLifecycle } from '../api/lifecycle.ts';
import { allRoutes } from '../api/routes/index.ts';
import { loadModules } from '../api/modules/index.ts';
import { createAuthCache } from '../api/services/auth-cache.ts';
import { createRunReadCache } from '../api/services/runs/read-cache.ts';
import { createRunStatusFeed } from '../api/services/runs/status-feed.ts';
import { startRealtime } from '../api/services/realtime/index.ts';
import { sweepRealtimePayloads } from '../api/services/realtime/bus.ts';
import { startRunReconciler } from '../api/services/runs/reconciler.ts';
import { createRunSubmitter } from '../api/services/runs/submitter.ts';
import { createScheduleArmer } from '../api/services/schedules/armer.ts';
import { createScheduleClient } from '../workflows/schedule-client.ts';
import { sweepRunData } from '../api/services/runs/retention.ts';
import { connectDatabase, type Database } from '../db/client.ts';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../db/embedded-postgres.ts';
import { applyMigrations } from '../db/migrate.ts';
import { createMemoryStore } from '../lib/cache/memory.ts';
import { createRedisStore } from '../lib/cache/redis.ts';
import type { CacheStore } from '../lib/cache/store.ts';
import { loadConfig, type Config } from '../lib/config.ts';
import { createSecretBox } from '../lib/crypto.ts';
import { deriveSignalKey } from '../lib/signal-mac.ts';
import { createLogger, type Logger } from '../lib/log.ts';
import { bootstrapToken, encryptionKey, portPlan } from './data-dir.ts';
import { startEngine, type Engine } from './engine.ts';
import { lockDataDir, StartRefused } from './instance-lock.ts';
import { platformEndpoints } from './platform-endpoints.ts';
import { runEvery } from '../lib/periodic.ts';
import { findSetpriv, unboundReason } from '../lib/parent-bound.ts';
import { purgeConnectSessions } from '../api/services/integrations/connect.ts';
import { sweepExpiredFiles } from '../api/services/files/files.ts';
import { runsInFlight } from '../api/services/runs/records.ts';
import { cachedReader, metrics, startMetrics } from '../lib/metrics/index.ts';
import { primaryAddress, restateFetch } from '../lib/restate-failover.ts';

export const PLATFORM_VERSION = '1.0.0-beta.1';

export interface Platform {
  url: string;
  config: Config;
  deps: AppDeps;
  engine: Engine;
  /** drains in-flight requests, then stops every part */
  stop(): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string | undefined>;
  log?: Logger;
  /** called with each line worth showing a person (URLs, the bootstrap token) */
  announce?: (line: string) => void;
}


export async function startPlatform(opts: StartOptions = {}): Promise<Platform> {
  const config = loadConfig(opts.env ?? process.env);
  const log = opts.log ?? createLogger(config.LOG_LEVEL);
  const announce = opts.announce ?? (() => {});
  const dataDir = path.resolve(config.DATA_DIR);
  // Traversable so the embedded database can run as its own user when we are root; secrets inside are 0600.
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o755 });
  // Before anything in the directory is adopted or started: a second platform must not touch the first's.
  const lock = lockDataDir(dataDir);
  // A directory that already existed (mkdtemp, umask 077) may not be: the database's user only needs to pass through.
  if (!config.DATABASE_URL && process.getuid?.() === 0) {
    const mode = fs.statSync(dataDir).mode & 0o777;
    if ((mode & 0o011) !== 0o011) fs.chmodSync(dataDir, mode | 0o011);
  }
  const ports = await portPlan(dataDir);
  const lifecycle = createLifecycle(config.SHUTDOWN_DRAIN_SECONDS);
  const bootStart = performance.now();
  const lap = (step: string) => log.debug('boot step done', { step, ms: Math.round(performance.now() - bootStart) });
  const stops: Array<() => Promise<void>> = [];
  // Aborted when a stop begins: the supervisors start nothing again after that.
  const stopping = new AbortController();
  const stopAll = async () => {
    for (const s of stops.reverse()) await s().catch((err) => log.warn('stop step failed', { error: String(err) }));
    stops.length = 0;
  };

  try {
    // first in, last out: spans of the stop's own steps are still sent
    if (await startTracing(tracingSettingsFrom(config, PLATFORM_VERSION))) stops.push(() => stopTracing());
    if ((!config.DATABASE_URL || !config.RESTATE_INGRESS_URL || !config.RESTATE_ADMIN_URL) && !findSetpriv()) {
      log.warn(`the embedded servers cannot be bound to this process (${unboundReason()}): if it is killed (SIGKILL), they keep running until the next start on this data directory ends them`);
    }
    // first, so that a metrics port already taken refuses the start before anything else begins
    const metricsExport = await startMetrics(config, log).catch((err: Error) => {
      throw new StartRefused(err.message);
    });
    if (metricsExport) {
      stops.push(() => metricsExport.stop());
      if (metricsExport.url) announce(`Metrics:     ${metricsExport.url}`);
    }
    let embeddedPg: EmbeddedPostgresHandle | null = null;
    let databaseUrl = config.DATABASE_URL;
    if (!databaseUrl) {
      embeddedPg = await startEmbeddedPostgres({
        dir: path.join(dataDir, 'postgres'),
        port: ports.postgres,
        stopping: stopping.signal,
        log: (l) => log.debug(l, { part: 'postgres' }),
        event: (l) => log.warn(l, { part: 'postgres' }),
      });
      stops.push(() => embeddedPg!.stop());
      databaseUrl = embeddedPg.url;
    }
    const database: Database = connectDatabase(databaseUrl);
    stops.push(() => database.close());
    await applyMigrations(database);
    lap('database');

    const cache: CacheStore = config.REDIS_URL ? createRedisStore(config.REDIS_URL) : createMemoryStore();
    stops.push(() => cache.close());
    const authCache = await createAuthCache(databaseUrl, log);
    stops.push(() => authCache.close());
    lap('cache');

    const instanceKey = encryptionKey(dataDir, config.ENCRYPTION_KEY);
    const runFeed = await createRunStatusFeed(databaseUrl, log);
    stops.push(() => runFeed.close());
    const runReads = createRunReadCache(runFeed);
    stops.push(async () => runReads.close());
    const realtime = startRealtime({ pool: database.pool, feed: runFeed, authCache, log, redisUrl: config.REDIS_URL, pingSeconds: config.REALTIME_PING_SECONDS });
    stops.push(() => realtime.close());
    const deps: AppDeps = {
      config,
      log,
      database,
      cache,
      secrets: createSecretBox(instanceKey),
      lifecycle,
      authCache,
      bootstrapToken: bootstrapToken(dataDir, config.BOOTSTRAP_TOKEN),
      runFeed,
      runReads,
      realtime,
      platformEndpoints: platformEndpoints(config, ports, databaseUrl),
    };

    if (metricsExport && config.ROLE !== 'worker') {
      // platform-wide figures from the database, exposed by API processes only (workers would repeat them)
      const unwatch = [
        metrics.watch('runs_in_flight', cachedReader(5_000, () => runsInFlight(database.pool))),
        metrics.watch('realtime_subscribers', () => realtime.stats().streams),
      ];
      stops.push(async () => unwatch.forEach((u) => u()));
    }

    // Modules add routes (API roles) and durable services (worker roles).
    const modules = await loadModules(config.MODULES, deps);
    const moduleServices = modules.flatMap((m) => m.services ?? []);
    // The API listens (answering 503 starting) while the engine comes up.
    const enginePromise = startEngine({ config, dataDir, ports, deps, log, signalKey: deriveSignalKey(instanceKey), stopping: stopping.signal, moduleServices });
    // awaited below; a refusal meanwhile (the API still binding) must reach that await, not crash the start
    enginePromise.catch(() => {});
    let url = '';
    if (config.ROLE !== 'worker') {
      const { app } = createApp(deps, { routes: allRoutes(), modules, log, version: PLATFORM_VERSION });
      lap('app');
      const server = createHttpServer(app, { typeBase: config.ERROR_TYPE_BASE });
      await new Promise<void>((resolve, reject) => {
        server.once('error', (err: NodeJS.ErrnoException) =>
          reject(err.code === 'EADDRINUSE' || err.code === 'EACCES'
            ? new StartRefused(`The API cannot listen on ${config.HOST}:${config.PORT} (${err.code}): another program holds it, or set PORT to another port.`)
            : err));
        server.listen(config.PORT, config.HOST, () => resolve());
      });
      const addr = server.address() as AddressInfo;
      url = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${addr.port}`;
      if (!config.PORT) deps.platformEndpoints!.push({ host: config.HOST.toLowerCase(), port: addr.port });
      stops.push(
        () =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeIdleConnections();
            setTimeout(() => server.closeAllConnections(), 1000).unref();
          }),
      );
    }
    const engine = await enginePromise;
    stops.push(() => engine.stop());
    deps.runs = engine.runs;
    if (config.ROLE !== 'worker') {
      const submitter = createRunSubmitter(database.pool, engine.runs, log);
      deps.submitter = submitter;
      stops.push(() => submitter.stop());
      const payloadSweep = runEvery(60_000, () => sweepRealtimePayloads(database.pool), (err) => log.warn('realtime payload sweep failed', { error: String(err) }));
      stops.push(() => payloadSweep.stop());
      const purge = runEvery(
        10 * 60_000,
        () => sweepRunData(database.pool, { inlineRetentionDays: config.INLINE_RUN_LIMITS.retention_days, logRetentionDays: config.RUN_LOG_RETENTION_DAYS }),
        (err) => log.warn('run data sweep failed', { error: String(err) }),
      );
      stops.push(() => purge.stop());
      const linkPurge = runEvery(
        60 * 60_000,
        () => purgeConnectSessions(database.pool),
        (err) => log.warn('connect link sweep failed', { error: String(err) }),
      );
      stops.push(() => linkPurge.stop());
      const armer = createScheduleArmer(database.pool, createScheduleClient(engine.ingressUrl), log);
      deps.schedules = armer;
      const rearm = runEvery(5_000, () => armer.sweep(), (err) => log.warn('schedule arm sweep failed', { error: String(err) }));
      stops.push(async () => {
        await rearm.stop();
        await armer.stop();
      });
      const expireFiles = runEvery(
        10 * 60_000,
        () => sweepExpiredFiles(database.pool, config),
        (err) => log.warn('file retention sweep failed', { error: String(err) }),
      );
      stops.push(() => expireFiles.stop());
      const reconcile = startRunReconciler(database.pool, engine.adminUrl, config.RUN_BOOT_SECONDS, config.RUN_RECONCILE_SECONDS, log);
      stops.push(() => reconcile.stop());
      for (const m of modules) {
        const work = m.start?.({ ingressUrl: engine.ingressUrl });
        if (work) stops.push(() => work.stop());
      }
    }
    lap('engine');

    lifecycle.probes = {
      database: async () => (await database.pool.query('SELECT 1')).rowCount === 1,
      engine: async () => (await restateFetch(engine.ingressUrl, '/restate/health', { signal: AbortSignal.timeout(1000) })).ok,
    };
    lifecycle.ready = true;
    if (url) lock.announce(url);
    announce(`API:         ${url || '(worker only)'}`);
    announce(`Restate UI:  ${primaryAddress(engine.adminUrl)}/ui/`);
    const redeemed = await database.pool.query('SELECT 1 FROM bootstrap_state WHERE redeemed_at IS NOT NULL');
    if (!redeemed.rowCount) announce(`Bootstrap:   POST ${url}/api/auth/bootstrap/redeem with token ${deps.bootstrapToken}`);

    let stopped: Promise<void> | null = null;
    return {
      url,
      config,
      deps,
      engine,
      stop() {
        stopped ??= (async () => {
          stopping.abort();
          lifecycle.draining = true;
          // streams never finish by themselves: each gets a final event and closes, so its client reconnects elsewhere
          realtime.closeStreams();
          await Promise.race([lifecycle.idle(), new Promise((r) => setTimeout(r, config.SHUTDOWN_DRAIN_SECONDS * 1000).unref())]);
          await stopAll();
          lock.release();
        })();
        return stopped;
      },
    };
  } catch (err) {
    stopping.abort();
    await stopAll();
    lock.release();
    throw err;
  }
}
