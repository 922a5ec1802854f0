// The API alone (the app from api/app.ts built as test/support/app.ts builds it, with no workflow
// engine: a launched run is admitted, stored and answered, then stays pending) in a child process,
// so a load generator in the parent does not share its event loop. Measures a route's own cost
// without the sandboxes the full platform would start.
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createApp } from '../../api/app.ts';
import type { AppDeps } from '../../api/deps.ts';
import { createLifecycle } from '../../api/lifecycle.ts';
import { loadModules } from '../../api/modules/index.ts';
import { allRoutes } from '../../api/routes/index.ts';
import { createAuthCache } from '../../api/services/auth-cache.ts';
import { connectDatabase } from '../../db/client.ts';
import { createMemoryStore } from '../../lib/cache/memory.ts';
import { loadConfig } from '../../lib/config.ts';
import { createSecretBox } from '../../lib/crypto.ts';
import { createLogger } from '../../lib/log.ts';

async function serve(env: Record<string, string>): Promise<void> {
  const config = loadConfig({ NODE_ENV: 'production', LOG_LEVEL: 'error', ...env });
  const log = createLogger(config.LOG_LEVEL);
  const database = connectDatabase(config.DATABASE_URL!);
  const authCache = await createAuthCache(config.DATABASE_URL!, log);
  const deps: AppDeps = {
    config, log, database, cache: createMemoryStore(), authCache, lifecycle: createLifecycle(config.SHUTDOWN_DRAIN_SECONDS),
    secrets: createSecretBox(randomBytes(32)), bootstrapToken: randomBytes(16).toString('hex'),
  };
  const modules = await loadModules(config.MODULES, deps);
  const { app } = createApp(deps, { routes: allRoutes(), modules, log, version: 'bench' });
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  deps.lifecycle.ready = true;
  process.on('message', async () => {
    server.closeAllConnections();
    server.close();
    await authCache.close();
    await database.close();
    process.exit(0);
  });
  process.send!({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}

export interface ApiChild {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts the API alone in a child process with these settings (DATABASE_URL required). */
export async function startApiChild(env: Record<string, string>): Promise<ApiChild> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--serve', JSON.stringify(env)], {
    execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const { url } = await new Promise<{ url: string }>((resolve, reject) => {
    child.once('message', resolve as never);
    child.once('exit', (code) => reject(new Error(`the API process exited (${code})`)));
  });
  return {
    url,
    pid: child.pid!,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ op: 'stop' });
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

if (process.argv[2] === '--serve') await serve(JSON.parse(process.argv[3]) as Record<string, string>);
