// The platform as a real child process (`node bin/start.mjs platform`), over a fresh database and
// a temporary data directory, with its embedded Restate. For end-to-end and fault tests.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freshDatabase, type TestDatabase } from './db.ts';
import { freePort } from '../../lib/free-port.ts';
import { problemCodeLogEnv } from '../../lib/problem-log.ts';
export { freePort };

/**
 * A free 127.0.0.1 port below the kernel's ephemeral range, for a port that must be named before
 * its server listens (an allowlist entry): an ephemeral port found free can be handed to another
 * process's outgoing connection or listener in between; these are never handed out by the kernel.
 */
export async function namedPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const probe = net.createServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port found below the ephemeral range');
}

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');


export interface PlatformProcess {
  url: string;
  dataDir: string;
  db: TestDatabase;
  env: Record<string, string>;
  proc: ChildProcess;
  output(): string;
  /** the embedded Restate admin address, from the ports kept in the data directory */
  restateAdminUrl(): string;
  /** starts the process again on the same data directory, database and port */
  restart(): Promise<void>;
  kill(signal: NodeJS.Signals): Promise<number | null>;
  /** SIGTERM, wait, and remove the data directory and database */
  stop(): Promise<void>;
}

export interface PlatformProcessOptions {
  env?: Record<string, string>;
  /** share a database with another process */
  db?: TestDatabase;
  readyTimeoutMs?: number;
  /**
   * 'ready' (default) waits for /health/ready; 'serving' for the start to finish and /health/live,
   * for a platform whose engine is unreachable on purpose (readiness then truthfully says 503);
   * 'started' for the start to finish, for a ROLE=worker process (it serves no API).
   */
  waitFor?: 'ready' | 'serving' | 'started';
}

export async function startPlatformProcess(opts: PlatformProcessOptions = {}): Promise<PlatformProcess> {
  const db = opts.db ?? (await freshDatabase());
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'platform-'));
  let url = '';
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    DATABASE_URL: db.url,
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    BOOTSTRAP_TOKEN: 'process-bootstrap-token-0123456789',
    ...problemCodeLogEnv(),
    ...opts.env,
  };
  // An empty value unsets a default above (e.g. BOOTSTRAP_TOKEN, to have one generated).
  for (const [k, v] of Object.entries(env)) if (v === '') delete env[k];
  let output = '';
  const launch = async (): Promise<ChildProcess> => {
    const proc = spawn(process.execPath, ['bin/start.mjs', 'platform'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout!.on('data', (d) => (output += d));
    proc.stderr!.on('data', (d) => (output += d));
    const deadline = Date.now() + (opts.readyTimeoutMs ?? 120_000);
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`the platform exited (${proc.exitCode}):\n${output.slice(-4000)}`);
      const ok = opts.waitFor === 'started' ? output.includes('Ready in') : opts.waitFor === 'serving'
        ? output.includes('Ready in') && (await fetch(`${url}/health/live`).then((r) => r.status === 200, () => false))
        : await fetch(`${url}/health/ready`).then((r) => r.status === 200, () => false);
      if (ok) return proc;
      if (Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(`the platform was not ready in time:\n${output.slice(-4000)}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  // The ports are chosen free and bound seconds later, by then another test's server may hold one:
  // a first start that finds a port taken is made again on new ones (a new data directory).
  const firstLaunch = async (): Promise<ChildProcess> => {
    for (let attempt = 1; ; attempt++) {
      if (!opts.env?.PORT) env.PORT = String(await freePort());
      url = `http://127.0.0.1:${env.PORT}`;
      try {
        return await launch();
      } catch (err) {
        if (attempt >= 3 || !String(err).includes('EADDRINUSE')) throw err;
        fs.rmSync(dataDir, { recursive: true, force: true });
        fs.mkdirSync(dataDir, { mode: 0o700 });
        output = '';
      }
    }
  };
  const proc = await firstLaunch();
  const handle: PlatformProcess = {
    url,
    dataDir,
    db,
    env,
    proc,
    output: () => output,
    restateAdminUrl() {
      const ports = JSON.parse(fs.readFileSync(path.join(dataDir, 'ports.json'), 'utf8')) as { restateAdmin: number };
      return `http://127.0.0.1:${ports.restateAdmin}`;
    },
    async restart() {
      handle.proc = await launch();
    },
    async kill(signal) {
      const p = handle.proc;
      if (p.exitCode !== null) return p.exitCode;
      const exited = new Promise<number | null>((r) => p.once('exit', (code) => r(code)));
      p.kill(signal);
      return Promise.race([exited, new Promise<null>((r) => setTimeout(() => r(null), 40_000).unref())]);
    },
    async stop() {
      if (handle.proc.exitCode === null) {
        await handle.kill('SIGTERM');
        if (handle.proc.exitCode === null) handle.proc.kill('SIGKILL');
      }
      // A killed platform's embedded Restate ends with it (bound to it), or is ended by the next
      // start; a finished test does not wait for either.
      const pidFile = path.join(dataDir, 'restate.pid');
      if (fs.existsSync(pidFile)) {
        try {
          process.kill(Number(fs.readFileSync(pidFile, 'utf8')), 'SIGKILL');
        } catch {
          // already gone
        }
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (!opts.db) await db.drop();
    },
  };
  return handle;
}
