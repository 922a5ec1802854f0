// `npm run bench [-- name ...]`: runs each benchmark (every bench/*.ts but this file and
// support.ts; helpers live in bench/harness/) one after another, each in its own process, and
// prints one JSON object holding every benchmark's result. Their logs pass through on stderr.
//   npm run bench                  all of them
//   npm run bench -- pipeline runs only these
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const NOT_BENCHMARKS = new Set(['run.ts', 'support.ts']);

function available(): string[] {
  return fs
    .readdirSync(here)
    .filter((f) => f.endsWith('.ts') && !NOT_BENCHMARKS.has(f))
    .map((f) => f.slice(0, -3))
    .sort();
}

interface Outcome {
  exitCode: number | null;
  seconds: number;
  stdout: string;
}

function runOne(name: string): Promise<Outcome> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(here, `${name}.ts`)], {
    cwd: path.dirname(here),
    stdio: ['ignore', 'pipe', 'inherit'],
    env: process.env,
  });
  let stdout = '';
  child.stdout!.on('data', (d) => (stdout += d));
  // Ctrl-C reaches the child through the process group; a benchmark stops what it started.
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ exitCode: code ?? (signal ? 1 : 0), seconds: (performance.now() - started) / 1000, stdout }));
  });
}

async function main(): Promise<void> {
  const all = available();
  const asked = process.argv.slice(2);
  const unknown = asked.filter((n) => !all.includes(n.replace(/\.ts$/, '')));
  if (unknown.length) {
    process.stderr.write(`unknown benchmark(s): ${unknown.join(', ')}; known: ${all.join(', ')}\n`);
    process.exit(2);
  }
  const names = asked.length ? asked.map((n) => n.replace(/\.ts$/, '')) : all;
  const started = new Date();
  const results: Record<string, unknown> = {};
  let failed = 0;
  for (const name of names) {
    process.stderr.write(`\n=== bench/${name}.ts\n`);
    const out = await runOne(name);
    let parsed: unknown;
    try {
      parsed = JSON.parse(out.stdout);
    } catch {
      parsed = undefined;
    }
    if (out.exitCode === 0 && parsed !== undefined) {
      results[name] = parsed;
    } else {
      failed += 1;
      results[name] = { error: out.exitCode === 0 ? 'the output was not one JSON object' : `exited with code ${out.exitCode}`, output_tail: out.stdout.slice(-2000) };
    }
    process.stderr.write(`=== bench/${name}.ts: ${out.exitCode === 0 ? 'done' : 'FAILED'} in ${Math.round(out.seconds)} s\n`);
  }
  process.stdout.write(`${JSON.stringify({
    started_at: started.toISOString(),
    seconds: Math.round((Date.now() - started.getTime()) / 1000),
    machine: { cpus: os.cpus().length, memory_gb: Math.round(os.totalmem() / 2 ** 30), node: process.version, load_average_after: os.loadavg().map((l) => Number(l.toFixed(2))) },
    benchmarks: results,
  }, null, 2)}\n`);
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
