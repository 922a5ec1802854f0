// `npm test`: provides what the tests need, then runs them with node's test runner.
// PostgreSQL: TEST_DATABASE_URL, else the server on 127.0.0.1:5432 when one answers, else an
// embedded one under .test-data/. A template database with the migrations applied is made
// once per schema version; every test file clones it. Redis: REDIS_URL / 127.0.0.1:6379, else a
// redis-server started on a free port when the binary exists. A full run (no file arguments)
// ends with test/catalog/catalog-check.test.ts: every catalog code produced or explained.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureTestServices } from './support/services.ts';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

function collect(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...collect(p));
    else if (e.name.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

// No test may wait for ever: one that has not ended in 10 minutes fails (the slowest, the compose
// deployment's, takes about 3 under load), and a file whose tests have ended exits even if
// something it started (a server a failed test never closed) would keep it alive. The whole
// run is stopped after SUITE_DEADLINE_MINUTES, so a hang fails CI instead of using up its time.
const TEST_TIMEOUT_MS = 600_000;
const SUITE_DEADLINE_MS = Number(process.env.SUITE_DEADLINE_MINUTES ?? '45') * 60_000;

function runFiles(files: string[], env: NodeJS.ProcessEnv, deadline: number): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${process.env.TEST_CONCURRENCY ?? '2'}`, `--test-timeout=${TEST_TIMEOUT_MS}`, '--test-force-exit', '--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=./test/support/file-times-reporter.mjs', '--test-reporter-destination=stdout', ...files], {
    cwd: root,
    stdio: 'inherit',
    env,
    detached: true,
  });
  // its own process group (so the deadline can stop all of it): Ctrl-C is passed on by hand
  const passOn = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // already gone
    }
  };
  const overdue = setTimeout(() => {
    process.stderr.write(`\nThe test run passed its deadline (${SUITE_DEADLINE_MS / 60_000} min, SUITE_DEADLINE_MINUTES): stopping it\n`);
    passOn('SIGKILL');
  }, Math.max(0, deadline - Date.now()));
  process.on('SIGINT', passOn).on('SIGTERM', passOn);
  return new Promise((resolve) =>
    child.on('exit', (c, sig) => {
      clearTimeout(overdue);
      process.off('SIGINT', passOn).off('SIGTERM', passOn);
      resolve(c ?? (sig ? 1 : 0));
    }),
  );
}

/** The files whose top-level tests took longest, from what test/support/file-times-reporter.mjs logged. */
function slowestFiles(log: string): string {
  const spent = new Map<string, number>();
  const lines = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
  for (const line of lines) {
    const { file, ms } = JSON.parse(line) as { file: string; ms: number };
    spent.set(file, (spent.get(file) ?? 0) + ms);
  }
  const rows = [...spent].sort((a, b) => b[1] - a[1]).slice(0, 20);
  return `\nSlowest test files (sum of their top-level tests):\n${rows.map(([file, ms]) => `  ${(ms / 1000).toFixed(1).padStart(6)} s  ${path.relative(root, file)}`).join('\n')}\n`;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const full = args.length === 0;
  const files = full ? [...collect(path.join(root, 'test/unit')), ...collect(path.join(root, 'test/integration')), ...collect(path.join(root, 'test/e2e'))] : args.map((a) => path.resolve(a));
  const services = await ensureTestServices(root);
  const started = Date.now();
  // A full run records every error code any process emits (lib/problem-log.ts), then checks the
  // catalog against that record and the "Codes not produced" table of docs/reference/errors.md.
  const codeLog = full ? fs.mkdtempSync(path.join(os.tmpdir(), 'problem-codes-')) : undefined;
  const timesLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'file-times-')), 'times.jsonl');
  const env = { ...process.env, ...services.env, NODE_ENV: 'test', FILE_TIMES_LOG: timesLog, ...(codeLog ? { PROBLEM_CODE_LOG: codeLog } : {}) };
  const deadline = started + SUITE_DEADLINE_MS;
  let code = await runFiles(files, env, deadline);
  process.stdout.write(slowestFiles(timesLog));
  fs.rmSync(path.dirname(timesLog), { recursive: true, force: true });
  await services.stop();
  if (codeLog) {
    const checkCode = await runFiles([path.join(root, 'test/catalog/catalog-check.test.ts')], env, deadline + 120_000);
    if (code === 0) code = checkCode;
    fs.rmSync(codeLog, { recursive: true, force: true });
  }
  process.stdout.write(`\nTest files: ${files.length + (codeLog ? 1 : 0)}; wall time ${Math.round((Date.now() - started) / 1000)} s\n`);
  process.exit(code);
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
