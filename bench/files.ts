// File throughput benchmark. Prints one JSON object: upload (PUT /api/uploads/_content, streamed
// to local storage with its SHA-256 computed) and download (GET /api/files/{id}/content written to
// a file) throughput in MB/s, beside a raw copy of the same file on the same disk in the same run
// (a read stream piped into a write stream: what any byte-moving program does at best).
// Target: upload and download each at least 50% of the raw copy.
// BENCH_FILE_MB sets the file size (default 256); BENCH_FILE_ROUNDS the rounds (median, default 3).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { aKey, anOrg } from '../test/support/builders.ts';
import { emit, freshBenchDatabase, median, note, round, startPlatformChild } from './support.ts';

const MIB = 1024 * 1024;
const SIZE = Number(process.env.BENCH_FILE_MB ?? 256) * MIB;
const ROUNDS = Number(process.env.BENCH_FILE_ROUNDS ?? 3);

function mbPerSecond(bytes: number, ms: number): number {
  return bytes / MIB / (ms / 1000);
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

function putFile(url: string, file: string, size: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream', 'content-length': String(size) } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    fs.createReadStream(file, { highWaterMark: MIB }).pipe(req);
  });
}

function getToFile(url: string, headers: Record<string, string>, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, (res) => {
      pipeline(res, fs.createWriteStream(target, { highWaterMark: MIB })).then(() => resolve(res.statusCode ?? 0), reject);
    }).on('error', reject);
  });
}

async function main(): Promise<void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-files-'));
  const source = path.join(work, 'source.bin');
  note(`writing a ${SIZE / MIB} MiB source file in ${work}`);
  const hash = createHash('sha256');
  const fd = fs.openSync(source, 'w');
  for (let written = 0; written < SIZE; written += MIB) {
    const chunk = Buffer.alloc(MIB, (written / MIB) % 251);
    hash.update(chunk);
    fs.writeSync(fd, chunk);
  }
  fs.closeSync(fd);
  const sha256 = hash.digest('hex');

  const db = await freshBenchDatabase();
  fs.mkdirSync(path.join(work, 'data'));
  const platform = await startPlatformChild({
    env: { DATABASE_URL: db.url, FILE_MAX_BYTES: String(4 * SIZE), SANDBOX_WARM_POOL: '0', LOG_LEVEL: 'warn' },
    dataDir: path.join(work, 'data'),
  });
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  try {
    const org = await anOrg(pool);
    const { key } = await aKey(pool, { ...org, userId: org.ownerId });
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

    const raw: number[] = [];
    const up: number[] = [];
    const down: number[] = [];
    let fileId = '';
    for (let round_ = 1; round_ <= ROUNDS; round_++) {
      const copy = path.join(work, `copy-${round_}.bin`);
      raw.push(await timed(() => pipeline(fs.createReadStream(source, { highWaterMark: MIB }), fs.createWriteStream(copy, { highWaterMark: MIB }))));
      fs.rmSync(copy);

      const staged = await fetch(`${platform.url}/api/uploads`, {
        method: 'POST', headers: auth,
        body: JSON.stringify({ name: 'bench.bin', size: SIZE, mime_type: 'application/octet-stream', sha256 }),
      }).then((r) => r.json()) as { upload_url: string };
      let answer: { status: number; body: string } | undefined;
      up.push(await timed(async () => (answer = await putFile(staged.upload_url, source, SIZE))));
      if (answer!.status !== 201) throw new Error(`upload answered ${answer!.status}: ${answer!.body}`);
      fileId = (JSON.parse(answer!.body) as { id: string }).id;

      const target = path.join(work, `download-${round_}.bin`);
      let status = 0;
      down.push(await timed(async () => (status = await getToFile(`${platform.url}/api/files/${fileId}/content`, { authorization: auth.authorization }, target))));
      if (status !== 200 || fs.statSync(target).size !== SIZE) throw new Error(`download answered ${status}`);
      fs.rmSync(target);
      note(`round ${round_}: raw ${round(mbPerSecond(SIZE, raw.at(-1)!))} MB/s, upload ${round(mbPerSecond(SIZE, up.at(-1)!))} MB/s, download ${round(mbPerSecond(SIZE, down.at(-1)!))} MB/s`);
    }
    const rawMbs = mbPerSecond(SIZE, median(raw));
    const upMbs = mbPerSecond(SIZE, median(up));
    const downMbs = mbPerSecond(SIZE, median(down));
    emit({
      benchmark: 'files',
      file_mb: SIZE / MIB,
      rounds: ROUNDS,
      storage: 'local',
      raw_copy_mb_s: round(rawMbs),
      upload_mb_s: round(upMbs),
      download_mb_s: round(downMbs),
      upload_vs_raw: round(upMbs / rawMbs, 2),
      download_vs_raw: round(downMbs / rawMbs, 2),
      target_vs_raw: 0.5,
      cpus: os.cpus().length,
      load_average: os.loadavg().map((l) => round(l, 2)),
    });
  } finally {
    await pool.end();
    await platform.dispose();
    await db.drop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

await main();
