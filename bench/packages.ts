// Package import benchmark. Prints one JSON object:
//  - import throughput (packages/s) of a typical 50 KB agent archive, every import real (a
//    distinct package id and distinct content each time), over HTTP with autocannon;
//  - the platform process's peak RSS growth while it imports one 50 MB archive, its RSS sampled
//    every 10 ms from /proc.
// Targets: >= 100 imports/s; peak RSS growth < 2x the archive size.
// The API runs in a child process (so only its memory is measured) over a fresh database:
// BENCH_PG_ADMIN_URL (or TEST_DATABASE_URL, or a PostgreSQL on 127.0.0.1:5432) gets a database
// for the run, dropped afterwards; with none, an embedded cluster in a temporary folder.
// Imports allow 10 per minute per caller, so the run spreads them over many API keys.
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBenchApi } from './harness/api-app.ts';
import v8 from 'node:v8';
import vm from 'node:vm';
import zlib from 'node:zlib';
import pg from 'pg';
import { connectDatabase } from '../db/client.ts';
import { startEmbeddedPostgres } from '../db/embedded-postgres.ts';
import { applyMigrations } from '../db/migrate.ts';
import { encodeZip, type RawZipEntry } from '../lib/zip/index.ts';
import { aKey, anOrg } from '../test/support/builders.ts';

// autocannon ships no type declarations
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: object) => Promise<{ latency: { p50: number; p99: number; max: number } }>;

const THROUGHPUT_IMPORTS = Number(process.env.BENCH_IMPORTS ?? 2000);
const CONNECTIONS = 8;
const BIG_ARCHIVE_BYTES = 50 * 1024 * 1024;
const MIB = 1024 * 1024;

// ------------------------------------------------------------------ the API process

async function serve(databaseUrl: string): Promise<void> {
  const api = await startBenchApi({ DATABASE_URL: databaseUrl, API_BODY_LIMIT_BYTES: String(64 * MIB), MODULES: 'webhooks' }, { dbMax: 20 });
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  process.on('message', async (msg: { op: string }) => {
    if (msg.op === 'gc') {
      gc();
      process.send!({ done: true });
    }
    if (msg.op === 'stop') {
      await api.close();
      process.exit(0);
    }
  });
  process.send!({ url: api.url });
}

// ------------------------------------------------------------------ arrangement

interface Db { url: string; drop(): Promise<void> }

function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.setTimeout(500, () => { s.destroy(); resolve(false); });
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

async function benchDatabase(): Promise<Db> {
  let admin = process.env.BENCH_PG_ADMIN_URL ?? process.env.TEST_DATABASE_URL;
  if (!admin && (await reachable(5432))) admin = 'postgres://postgres@127.0.0.1:5432/postgres';
  if (admin) {
    const name = `bench_pk_${randomBytes(5).toString('hex')}`;
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    await client.query(`CREATE DATABASE ${name}`);
    await client.end();
    const url = new URL(admin);
    url.pathname = `/${name}`;
    return {
      url: url.toString(),
      async drop() {
        const c = new pg.Client({ connectionString: admin });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.end();
      },
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-pk-'));
  fs.chmodSync(dir, 0o755);
  const port = await new Promise<number>((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
  const embedded = await startEmbeddedPostgres({ dir: path.join(dir, 'pg'), port });
  return {
    url: embedded.url,
    async drop() {
      await embedded.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function stored(name: string, data: Buffer): RawZipEntry {
  return { name, method: 0, data, crc32: zlib.crc32(data), uncompressedSize: data.length };
}

/** A typical small agent: manifest, prompt, a few docs, an asset; about 50 KB, all distinct. */
function agentArchive(i: number, run: string): Buffer {
  const manifest = JSON.stringify({
    name: `@bench/agent-${run}-${i}`, version: '1.0.0', type: 'agent', schema_version: '0.3', display_name: `Agent ${i}`,
    input: { schema: { type: 'object', properties: { q: { type: 'string' } } } },
    output: { schema: { type: 'object', properties: { a: { type: 'string' } } } },
    runtime_tools: ['output', 'log'],
  }, null, 2);
  return encodeZip([
    stored('manifest.json', Buffer.from(manifest)),
    stored('prompt.md', Buffer.from(`# Agent ${i}\n\n${randomBytes(3000).toString('base64')}\n`)),
    stored('docs/guide.md', Buffer.from(randomBytes(6000).toString('base64'))),
    stored('assets/data.bin', randomBytes(38 * 1024)),
  ]);
}

function multipart(bytes: Buffer): { body: Buffer; contentType: string } {
  const boundary = `----bench${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="package.afps"\r\nContent-Type: application/zip\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return { body: Buffer.concat([head, bytes, tail]), contentType: `multipart/form-data; boundary=${boundary}` };
}

function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb * 1024;
}

// ------------------------------------------------------------------ the run

async function main(): Promise<void> {
  const db = await benchDatabase();
  const database = connectDatabase(db.url, { max: 4 });
  await applyMigrations(database);
  const child = fork(fileURLToPath(import.meta.url), ['--server', db.url], { execArgv: ['--import', 'tsx', ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/pkprof'] : [])], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ask = (op: string) => new Promise<any>((resolve) => { child.once('message', resolve); child.send({ op }); });
  try {
    const { url } = await new Promise<{ url: string }>((resolve, reject) => {
      child.once('message', resolve as never);
      child.once('exit', (code) => reject(new Error(`API process exited (${code})`)));
    });

    const org = await anOrg(database.pool);
    const keys: string[] = [];
    for (let i = 0; i < Math.ceil(THROUGHPUT_IMPORTS / 10) + 2; i++) {
      keys.push((await aKey(database.pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId })).key);
    }

    // --- throughput
    const run = randomBytes(3).toString('hex');
    const bodies = Array.from({ length: THROUGHPUT_IMPORTS }, (_, i) => multipart(agentArchive(i, run)));
    const archiveBytes = agentArchive(0, 'size').length;
    let next = 0;
    const statuses: Record<string, number> = {};
    const started = performance.now();
    const result = await autocannon({
      url: `${url}/api/packages/import`,
      connections: CONNECTIONS,
      amount: THROUGHPUT_IMPORTS,
      timeout: 30,
      requests: [{
        method: 'POST',
        setupRequest: (req: any) => {
          const i = next++ % bodies.length;
          const { body, contentType } = bodies[i];
          return { ...req, method: 'POST', body, headers: { 'content-type': contentType, authorization: `Bearer ${keys[Math.floor(i / 10)]}` } };
        },
        onResponse: (status: number) => {
          statuses[status] = (statuses[status] ?? 0) + 1;
        },
      }],
    });
    const seconds = (performance.now() - started) / 1000;
    const imported = statuses['201'] ?? 0;
    const { rows } = await database.pool.query('SELECT count(*)::int AS n FROM package_versions WHERE org_id = $1', [org.orgId]);

    // --- peak RSS while importing one 50 MB archive
    // as zip tools lay out media: the incompressible asset stored, the text deflated
    const deflated = (name: string, text: string): RawZipEntry => {
      const data = Buffer.from(text);
      return { name, method: 8, data: zlib.deflateRawSync(data), crc32: zlib.crc32(data), uncompressedSize: data.length };
    };
    const big = encodeZip([
      deflated('manifest.json', JSON.stringify({ name: `@bench/big-${run}`, version: '1.0.0', type: 'agent' })),
      deflated('prompt.md', 'A large agent.'),
      stored('assets/media.bin', randomBytes(BIG_ARCHIVE_BYTES - 300)),
    ]);
    const upload = multipart(big);
    await ask('gc');
    await new Promise((r) => setTimeout(r, 200));
    const baseline = rssOf(child.pid!);
    let peak = baseline;
    const sampler = setInterval(() => { peak = Math.max(peak, rssOf(child.pid!)); }, 10);
    const bigStarted = performance.now();
    const res = await fetch(`${url}/api/packages/import`, {
      method: 'POST',
      headers: { 'content-type': upload.contentType, authorization: `Bearer ${keys[keys.length - 1]}` },
      body: upload.body,
    });
    const bigStatus = res.status;
    await res.arrayBuffer();
    const bigMs = performance.now() - bigStarted;
    await new Promise((r) => setTimeout(r, 50));
    clearInterval(sampler);

    const growth = peak - baseline;
    const out = {
      benchmark: 'packages',
      throughput: {
        archive_bytes: archiveBytes,
        imports_requested: THROUGHPUT_IMPORTS,
        imports_created: imported,
        versions_stored: rows[0].n,
        statuses,
        connections: CONNECTIONS,
        seconds: Number(seconds.toFixed(2)),
        imports_per_second: Number((imported / seconds).toFixed(1)),
        latency_ms: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
        target_per_second: 100,
        meets_target: imported / seconds >= 100,
      },
      large_import: {
        archive_bytes: big.length,
        status: bigStatus,
        ms: Math.round(bigMs),
        rss_baseline_mb: Number((baseline / MIB).toFixed(1)),
        rss_peak_mb: Number((peak / MIB).toFixed(1)),
        rss_growth_mb: Number((growth / MIB).toFixed(1)),
        growth_over_archive: Number((growth / big.length).toFixed(2)),
        target_growth_over_archive: 2,
        meets_target: growth < 2 * big.length,
      },
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  } finally {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ op: 'stop' });
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill();
    }
    await database.close();
    await db.drop();
  }
}

if (process.argv[2] === '--server') {
  await serve(process.argv[3]);
} else {
  await main();
}
