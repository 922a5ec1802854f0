// Noisy-neighbour benchmark. Prints one JSON object: tenant B's `GET /api/runs` latency (p50,
// p99, max) unloaded, then while tenant A
//  - imports a large but legal archive in a loop (three at a time): a manifest and four entries
//    of just under 50 MiB of zeros each, about 200 KB on the wire and 200 MiB inflated;
//  - and, in the last phase, also validates inline runs whose input schema has the pattern
//    `^(a+)+$` against 'a' x 40 + '!' (exponential for a backtracking regex engine).
// Target: loaded p99 within 2x of unloaded p99, both measured in this run.
// A call unanswered after BENCH_NN_TIMEOUT_MS counts at that latency and as timed out. The API
// runs in a child process (API only, no workflow engine) over a fresh database; the whole run
// stays under a minute. BENCH_NN_PHASE_SECONDS sets the length of each measured phase (default 8).
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import pg from 'pg';
import { startBenchApi } from './harness/api-app.ts';
import { emit, freshBenchDatabase, note, round, spread, type Spread } from './support.ts';
import { encodeZip, type RawZipEntry } from '../lib/zip/index.ts';
import { aKey, anOrg } from '../test/support/builders.ts';

const MIB = 1024 * 1024;
const PHASE_MS = Number(process.env.BENCH_NN_PHASE_SECONDS ?? 8) * 1000;
const TIMEOUT_MS = Number(process.env.BENCH_NN_TIMEOUT_MS ?? 3000);
const IMPORTERS = 3;
const IMPORT_TIMEOUT_MS = 60_000;
const EVIL_LENGTH = 40;

// ------------------------------------------------------------------ the API process

if (process.argv[2] === '--server') {
  const api = await startBenchApi({ DATABASE_URL: process.argv[3], MODULES: 'webhooks' }, { dbMax: 10 });
  process.on('message', async () => {
    await api.close();
    process.exit(0);
  });
  process.send!({ url: api.url });
}

// ------------------------------------------------------------------ requests

interface Timed { status: number; ms: number; timedOut: boolean }

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function call(url: string, method: string, headers: Record<string, string>, body?: Buffer, timeoutMs = TIMEOUT_MS): Promise<Timed> {
  return new Promise((resolve) => {
    const started = performance.now();
    const req = http.request(url, { method, headers: body ? { ...headers, 'content-length': String(body.length) } : headers, agent, timeout: timeoutMs }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, timedOut: false }));
    });
    req.on('timeout', () => {
      req.destroy();
      resolve({ status: 0, ms: timeoutMs, timedOut: true });
    });
    req.on('error', () => resolve({ status: 0, ms: performance.now() - started, timedOut: false }));
    req.end(body);
  });
}

function multipart(bytes: Buffer): { body: Buffer; contentType: string } {
  const boundary = `----nn${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="package.afps"\r\nContent-Type: application/zip\r\n\r\n`);
  return { body: Buffer.concat([head, bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]), contentType: `multipart/form-data; boundary=${boundary}` };
}

// ------------------------------------------------------------------ the load

const zerosSize = 50 * MIB - 64 * 1024;
const zerosDeflated = zlib.deflateRawSync(Buffer.alloc(zerosSize), { level: 9 });
const zerosCrc = zlib.crc32(Buffer.alloc(zerosSize));

function bigArchive(id: string): Buffer {
  const text = (name: string, s: string): RawZipEntry => ({ name, method: 0, data: Buffer.from(s), crc32: zlib.crc32(Buffer.from(s)), uncompressedSize: Buffer.byteLength(s) });
  const entries = [
    text('manifest.json', JSON.stringify({ name: id, version: '1.0.0', type: 'agent', schema_version: '0.3' })),
    text('prompt.md', 'A large agent.'),
  ];
  for (let i = 0; i < 4; i++) entries.push({ name: `data/zeros-${i}.bin`, method: 8, data: zerosDeflated, crc32: zerosCrc, uncompressedSize: zerosSize });
  return encodeZip(entries);
}

const evilInline = Buffer.from(JSON.stringify({
  manifest: {
    name: '@bench/evil', version: '1.0.0', type: 'agent', schema_version: '0.3',
    input: { schema: { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } } },
  },
  prompt: 'Echo.',
  input: { s: `${'a'.repeat(EVIL_LENGTH)}!` },
}));

interface Phase { latency: Spread; timed_out: number; imports: Record<string, number>; evil: Record<string, number> }

/** Tenant B's calls for PHASE_MS while the given load runs; the load is stopped at the end. */
async function measure(url: string, neighbourKey: string, load: (until: number) => Promise<unknown>): Promise<Omit<Phase, 'imports' | 'evil'>> {
  const until = Date.now() + PHASE_MS;
  const loading = load(until);
  const samples: number[] = [];
  let timedOut = 0;
  while (Date.now() < until) {
    const r = await call(`${url}/api/runs`, 'GET', { authorization: `Bearer ${neighbourKey}` });
    if (r.timedOut) timedOut++;
    else if (r.status !== 200) throw new Error(`GET /api/runs answered ${r.status}`);
    samples.push(r.ms);
  }
  await Promise.race([loading, new Promise((r) => setTimeout(r, TIMEOUT_MS))]);
  return { latency: spread(samples), timed_out: timedOut };
}

async function main(): Promise<void> {
  const started = performance.now();
  const db = await freshBenchDatabase();
  let child: ChildProcess | undefined;
  try {
    child = fork(fileURLToPath(import.meta.url), ['--server', db.url], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const { url } = await new Promise<{ url: string }>((resolve, reject) => {
      child!.once('message', resolve as never);
      child!.once('exit', (code) => reject(new Error(`API process exited (${code})`)));
    });

    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    const noisy = await anOrg(pool);
    const quiet = await anOrg(pool);
    const importerKeys: string[] = [];
    // imports and inline validations are rate limited per key; one key per few calls
    for (let i = 0; i < 40; i++) importerKeys.push((await aKey(pool, { orgId: noisy.orgId, spaceId: noisy.spaceId, userId: noisy.ownerId })).key);
    const neighbourKey = (await aKey(pool, { orgId: quiet.orgId, spaceId: quiet.spaceId, userId: quiet.ownerId })).key;
    await pool.end();

    let keyTurn = 0;
    const nextKey = () => importerKeys[keyTurn++ % importerKeys.length];
    const imports: Record<string, number> = {};
    const evil: Record<string, number> = {};
    const importLoop = async (until: number) => {
      while (Date.now() < until) {
        const { body, contentType } = multipart(bigArchive(`@bench/big-${randomBytes(4).toString('hex')}`));
        const r = await call(`${url}/api/packages/import`, 'POST', { authorization: `Bearer ${nextKey()}`, 'content-type': contentType }, body, IMPORT_TIMEOUT_MS);
        const key = r.timedOut ? 'timed_out' : String(r.status);
        imports[key] = (imports[key] ?? 0) + 1;
        if (r.timedOut) return;
      }
    };
    const evilLoop = async (until: number) => {
      while (Date.now() < until) {
        const r = await call(`${url}/api/runs/inline/validate`, 'POST', { authorization: `Bearer ${nextKey()}`, 'content-type': 'application/json' }, evilInline);
        const key = r.timedOut ? 'timed_out' : String(r.status);
        evil[key] = (evil[key] ?? 0) + 1;
        if (r.timedOut) return;
        await new Promise((res) => setTimeout(res, 100));
      }
    };

    // warm-up: the first import and the first list pay for compilation and connections
    await call(`${url}/api/runs`, 'GET', { authorization: `Bearer ${neighbourKey}` });
    await importLoop(Date.now() + 1);
    for (const k of Object.keys(imports)) delete imports[k];

    note('unloaded');
    const unloaded = await measure(url, neighbourKey, async () => {});
    note('archives');
    const archives = await measure(url, neighbourKey, (until) => Promise.all(Array.from({ length: IMPORTERS }, () => importLoop(until))));
    const archiveImports = { ...imports };
    for (const k of Object.keys(imports)) delete imports[k];
    // last: without a linear-time pattern engine this phase can wedge the API for good
    note('archives and a pathological schema');
    const both = await measure(url, neighbourKey, (until) => Promise.all([...Array.from({ length: IMPORTERS }, () => importLoop(until)), evilLoop(until)]));

    const ratio = (p: { latency: Spread }) => round(p.latency.p99 / unloaded.latency.p99, 2);
    emit({
      what: 'tenant B GET /api/runs latency (ms), unloaded and while tenant A loads the API',
      phase_seconds: PHASE_MS / 1000,
      call_timeout_ms: TIMEOUT_MS,
      unloaded,
      archives_only: { ...archives, imports: archiveImports, p99_ratio: ratio(archives) },
      archives_and_pathological_schema: { ...both, imports, inline_validations: evil, p99_ratio: ratio(both) },
      target: 'p99_ratio <= 2',
      meets_target: ratio(both) <= 2,
      seconds: round((performance.now() - started) / 1000),
    });
  } finally {
    agent.destroy();
    if (child && child.exitCode === null) {
      // a wedged API does not answer the stop message
      child.send('stop');
      const exited = new Promise((r) => child!.once('exit', r));
      await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    await db.drop();
  }
}

if (process.argv[2] !== '--server') {
  await main();
  process.exit(0);
}
