// PostgreSQL and Redis for the test run (see test/run.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { connectDatabase } from '../../db/client.ts';
import { startEmbeddedPostgres } from '../../db/embedded-postgres.ts';
import { applyMigrations, MIGRATIONS_DIR } from '../../db/migrate.ts';
import { freePort } from '../../lib/free-port.ts';

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.setTimeout(500, () => { s.destroy(); resolve(false); });
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}


export async function canConnect(url: string): Promise<boolean> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

function migrationsHash(): string {
  const h = createHash('sha256');
  for (const f of fs.readdirSync(MIGRATIONS_DIR).sort()) if (f.endsWith('.sql')) h.update(f).update(fs.readFileSync(path.join(MIGRATIONS_DIR, f)));
  h.update(fs.readFileSync(path.join(MIGRATIONS_DIR, '..', 'functions.sql')));
  return h.digest('hex').slice(0, 12);
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

export async function ensureTestServices(root: string): Promise<{ env: Record<string, string>; stop(): Promise<void> }> {
  const stops: Array<() => Promise<void>> = [];
  let adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl && (await portOpen(5432)) && (await canConnect('postgres://postgres@127.0.0.1:5432/postgres'))) {
    adminUrl = 'postgres://postgres@127.0.0.1:5432/postgres';
  }
  if (!adminUrl) {
    const dir = path.join(root, '.test-data', 'postgres');
    const portFile = path.join(dir, 'port');
    fs.mkdirSync(dir, { recursive: true });
    const port = fs.existsSync(portFile) ? Number(fs.readFileSync(portFile, 'utf8')) : await freePort();
    fs.writeFileSync(portFile, String(port));
    const embedded = await startEmbeddedPostgres({ dir, port });
    stops.push(() => embedded.stop());
    adminUrl = withDatabase(embedded.url, 'postgres');
    process.stdout.write(`Tests use an embedded PostgreSQL on port ${port}.\n`);
  }

  // The template: migrated once per schema version, cloned per test file.
  const template = `ap_tmpl_${migrationsHash()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [template]);
  if (!exists.rowCount) {
    const building = `${template}_build_${process.pid}`;
    await admin.query(`CREATE DATABASE ${building}`);
    const db = connectDatabase(withDatabase(adminUrl, building), { max: 2 });
    await applyMigrations(db);
    await db.close();
    await admin.query(`ALTER DATABASE ${building} RENAME TO ${template}`).catch(async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${building}`);
    });
  }
  // Databases left behind by killed runs: their names carry the pid of the run that made them.
  const leftovers = await admin.query(`SELECT datname FROM pg_database WHERE datname LIKE 'ap\\_t\\_%' OR datname LIKE 'ap\\_tmpl\\_%\\_build\\_%'`);
  for (const { datname } of leftovers.rows as Array<{ datname: string }>) {
    const pid = Number(/^ap_t_(\d+)_|_build_(\d+)$/.exec(datname)?.slice(1).find(Boolean));
    if (pid && !pidAlive(pid)) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => {});
  }
  await admin.end();

  let redisUrl = process.env.REDIS_URL ?? process.env.TEST_REDIS_URL;
  let redis: ChildProcess | null = null;
  if (!redisUrl && (await portOpen(6379))) redisUrl = 'redis://127.0.0.1:6379';
  if (!redisUrl) {
    const port = await freePort();
    redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const failed = await new Promise<boolean>((resolve) => {
      redis!.once('error', () => resolve(true));
      setTimeout(() => resolve(false), 300);
    });
    if (failed) {
      throw new Error('The tests of the shared-cache paths need Redis: install redis-server (apt-get install -y redis-server) or set REDIS_URL.');
    }
    redisUrl = `redis://127.0.0.1:${port}`;
    stops.push(async () => { redis!.kill(); });
  }

  return {
    env: { TEST_RUN_PID: String(process.pid), TEST_PG_ADMIN_URL: adminUrl, TEST_TEMPLATE_DB: template, TEST_REDIS_URL: redisUrl },
    async stop() {
      for (const s of stops.reverse()) await s().catch(() => {});
    },
  };
}
