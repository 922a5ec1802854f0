// Input files of a run and the worker's memory. Prints one JSON object: the peak resident memory
// of the platform process (ROLE=all: the API and the worker; the process backend) while a run
// naming BENCH_INPUT_FILES files (default 4) of BENCH_INPUT_FILE_MB MiB (default 16, quick) boots
// and runs, beside the files' total and the process's memory just before the launch (the issue's
// figure: BENCH_INPUT_FILES=20 BENCH_INPUT_FILE_MB=50, 1000 MiB in all). The files are uploaded
// first (streamed); the peak is then reset (/proc/<pid>/clear_refs) so it is the run's.
// Target: the peak grows by well under the files' total (the files are streamed into the
// workspace, never all held at once).
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import pg from 'pg';
import { writeZip } from '../lib/zip/write-zip.ts';
import { startFakeModel } from '../test/fixtures/fake-model/server.ts';
import { aKey, anOrg } from '../test/support/builders.ts';
import { aDefaultModel, importPackage } from '../test/support/runs.ts';
import { emit, freshBenchDatabase, loadAverage, note, round, startPlatformChild } from './support.ts';

const MIB = 1024 * 1024;
const FILES = Number(process.env.BENCH_INPUT_FILES ?? 4);
const FILE_BYTES = Number(process.env.BENCH_INPUT_FILE_MB ?? 16) * MIB;
const RUN_END_TIMEOUT_MS = 600_000;

/** kB figures of /proc/<pid>/status, in MiB */
function memoryOf(pid: number): { rss_mb: number; peak_mb: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rss_mb: round(kb('VmRSS') / 1024), peak_mb: round(kb('VmHWM') / 1024) };
}

/** Streams `size` bytes (1 MiB chunks made as they are read) to a staged upload's URL. */
function putGenerated(url: string, size: number, seed: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream', 'content-length': String(size) } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d) => (body += d)).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    let sent = 0;
    new Readable({
      read() {
        if (sent >= size) return void this.push(null);
        const n = Math.min(MIB, size - sent);
        this.push(Buffer.alloc(n, (seed + sent / MIB) % 251));
        sent += n;
      },
    }).pipe(req);
  });
}

async function main(): Promise<void> {
  const fake = await startFakeModel();
  const db = await freshBenchDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-input-files-'));
  const platform = await startPlatformChild({
    dataDir,
    env: {
      DATABASE_URL: db.url, SANDBOX_WARM_POOL: '0', LOG_LEVEL: 'warn',
      FILE_MAX_BYTES: String(FILE_BYTES), RUN_MAX_FILES: String(FILES), EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host,
    },
  });
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const pid = platform.proc.pid!;
  try {
    const org = await anOrg(pool);
    const { key } = await aKey(pool, { ...org, userId: org.ownerId });
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    await aDefaultModel(platform.url, key, fake.url);
    await importPackage(platform.url, key, writeZip(new Map([
      ['manifest.json', Buffer.from(JSON.stringify({
        name: '@bench/bulk-reader', version: '1.0.0', type: 'agent', schema_version: '0.3',
        input: { schema: { type: 'object', properties: { parts: { type: 'array', items: { type: 'string', format: 'file' } } }, required: ['parts'] } },
      }))],
      ['prompt.md', Buffer.from('Read every part.')],
    ])));

    note(`uploading ${FILES} files of ${FILE_BYTES / MIB} MiB`);
    const uploads: string[] = [];
    for (let n = 0; n < FILES; n++) {
      const staged = await fetch(`${platform.url}/api/uploads`, {
        method: 'POST', headers: auth, body: JSON.stringify({ name: `part-${n}.bin`, size: FILE_BYTES, mime_type: 'application/octet-stream' }),
      }).then((r) => r.json()) as { id: string; upload_url: string };
      const answer = await putGenerated(staged.upload_url, FILE_BYTES, n * 7);
      if (answer.status !== 201) throw new Error(`upload ${n} answered ${answer.status}: ${answer.body}`);
      uploads.push(staged.id);
    }
    const beforeRun = memoryOf(pid);
    // the high-water mark from now on is the run's (Linux: writing 5 resets VmHWM to the current RSS)
    let reset = true;
    try {
      fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    } catch {
      reset = false;
    }
    let sampledPeak = memoryOf(pid).rss_mb;
    const sampler = setInterval(() => {
      try {
        sampledPeak = Math.max(sampledPeak, memoryOf(pid).rss_mb);
      } catch {
        // the process ended
      }
    }, 20);

    note('launching the run');
    const started = performance.now();
    const launched = await fetch(`${platform.url}/api/agents/@bench/bulk-reader/run`, {
      method: 'POST', headers: auth, body: JSON.stringify({ input: { parts: uploads.map((id) => `upload:${id}`) } }),
    }).then(async (r) => ({ status: r.status, body: await r.json() as { id: string; status: string } }));
    if (launched.status !== 201) throw new Error(`launch answered ${launched.status}: ${JSON.stringify(launched.body)}`);
    let run = launched.body;
    const deadline = Date.now() + RUN_END_TIMEOUT_MS;
    while (run.status === 'pending' || run.status === 'running') {
      if (Date.now() > deadline) throw new Error(`run ${run.id} did not end in time`);
      run = await fetch(`${platform.url}/api/runs/${run.id}?wait=30`, { headers: auth }).then((r) => r.json()) as typeof run;
    }
    const runMs = performance.now() - started;
    clearInterval(sampler);
    const during = memoryOf(pid);
    const peak = reset ? during.peak_mb : sampledPeak;
    const totalMb = (FILES * FILE_BYTES) / MIB;
    emit({
      benchmark: 'run-input-files',
      files: FILES,
      file_mb: FILE_BYTES / MIB,
      files_total_mb: totalMb,
      worker_rss_before_run_mb: beforeRun.rss_mb,
      worker_peak_rss_during_run_mb: peak,
      worker_peak_growth_mb: round(peak - beforeRun.rss_mb),
      peak_growth_vs_files_total: round((peak - beforeRun.rss_mb) / totalMb, 3),
      peak_measured_by: reset ? 'VmHWM after clear_refs' : 'VmRSS sampled every 20 ms',
      run_status: (run as { status: string }).status,
      run_ms: Math.round(runMs),
      target: 'peak growth well under the files\' total',
      cpus: os.cpus().length,
      load_average: loadAverage(),
    });
  } finally {
    await pool.end();
    await platform.dispose();
    await db.drop();
    await fake.close();
  }
}

await main();
