// The load generator the throughput benchmarks share: wrk (a C program: it leaves the server
// more of a 2-core machine than a JavaScript generator would) when it is on PATH, else
// autocannon in a worker thread. BENCH_LOAD=wrk|autocannon picks one. Figures come back in one
// shape; answers other than the expected status fail the measurement.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { autocannon, loadFigures, round, send, type LoadFigures } from '../support.ts';

export interface LoadOptions {
  url: string;
  headers?: Record<string, string>;
  connections: number;
  seconds: number;
  /** the one status every answer must carry */
  expect: number;
}

export type Generator = 'wrk' | 'autocannon';

export function generator(): Generator {
  const asked = process.env.BENCH_LOAD;
  if (asked === 'wrk' || asked === 'autocannon') return asked;
  return spawnSync('wrk', ['--version']).error ? 'autocannon' : 'wrk';
}

// wrk's summary as JSON: request count, seconds, latency percentiles in ms, socket errors, and
// how many answers had a status of 400 or more (wrk counts those as "status" errors).
const WRK_REPORT = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('{"total":%d,"seconds":%f,"p50_ms":%f,"p99_ms":%f,"max_ms":%f,"socket_errors":%d,"status_4xx_5xx":%d}\\n',
    summary.requests, summary.duration / 1e6, latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    e.connect + e.read + e.write + e.timeout, e.status))
end
`;
let reportScript: string | null = null;

function wrk(opts: LoadOptions): Promise<LoadFigures> {
  if (!reportScript) {
    reportScript = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bench-wrk-')), 'report.lua');
    fs.writeFileSync(reportScript, WRK_REPORT);
  }
  const args = ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--timeout', '10s', '-s', reportScript];
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}: ${v}`);
  args.push(opts.url);
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.once('error', reject);
    child.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{"total"'));
      if (code !== 0 || !line) return reject(new Error(`wrk failed (${code}): ${out.slice(-1000)}`));
      const r = JSON.parse(line) as { total: number; seconds: number; p50_ms: number; p99_ms: number; max_ms: number; socket_errors: number; status_4xx_5xx: number };
      const wrong = opts.expect >= 400 ? r.total - r.status_4xx_5xx : r.status_4xx_5xx;
      if (wrong || r.socket_errors) return reject(new Error(`${opts.url}: ${wrong} answers without status ${opts.expect}, ${r.socket_errors} socket errors`));
      resolve({
        requests_per_sec: Math.round(r.total / r.seconds),
        p50_ms: round(r.p50_ms, 2), p99_ms: round(r.p99_ms, 2), max_ms: round(r.max_ms, 1),
        total: r.total, statuses: { [opts.expect]: r.total }, errors: 0,
      });
    });
  });
}

async function cannon(opts: LoadOptions): Promise<LoadFigures> {
  const f = loadFigures(await autocannon({ url: opts.url, headers: opts.headers ?? {}, connections: opts.connections, duration: opts.seconds, workers: 1 }));
  if (f.errors || Object.keys(f.statuses).some((s) => Number(s) !== opts.expect)) {
    throw new Error(`${opts.url}: unexpected answers ${JSON.stringify(f.statuses)}, ${f.errors} errors`);
  }
  return f;
}

/** One measurement. One request first makes sure the route answers the expected status at all. */
export async function load(opts: LoadOptions): Promise<LoadFigures> {
  const probe = await send('GET', opts.url, { headers: opts.headers });
  if (probe.status !== opts.expect) throw new Error(`${opts.url}: answered ${probe.status}, expected ${opts.expect}: ${JSON.stringify(probe.body).slice(0, 300)}`);
  return generator() === 'wrk' ? wrk(opts) : cannon(opts);
}
