// The record the catalog check reads: a process with PROBLEM_CODE_LOG appends each code it emits
// once, to its own file.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { readProblemCodeLog } from '../../lib/problem-log.ts';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const script = `
import { problem, problemBody } from './lib/problem.ts';
import { finalizeRun } from './db/run-finalization.ts';
problemBody(problem('version_exists'), 'req_1', 'https://example.invalid/problems');
problemBody(problem('version_exists'), 'req_2', 'https://example.invalid/problems');
problemBody(problem('slug_taken'), 'req_3', 'https://example.invalid/problems');
const pool = { query: async () => ({ rowCount: 0, rows: [] }) };
await finalizeRun(pool, 'run_x', { status: 'failed', error: { code: 'run_budget_exceeded', message: 'over' } });
`;

function runChild(env: NodeJS.ProcessEnv): void {
  const out = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root, env, encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr);
}

test('a child process records each emitted code once in its own file', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'codes-'));
  try {
    runChild({ PATH: process.env.PATH, PROBLEM_CODE_LOG: dir });
    runChild({ PATH: process.env.PATH, PROBLEM_CODE_LOG: dir });
    const files = fs.readdirSync(dir);
    assert.equal(files.length, 2, files.join(', '));
    for (const f of files) assert.deepEqual(fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean).sort(), ['run_budget_exceeded', 'slug_taken', 'version_exists']);
    assert.deepEqual([...readProblemCodeLog(dir)].sort(), ['run_budget_exceeded', 'slug_taken', 'version_exists']);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
