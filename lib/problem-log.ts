// The catalog check's record of emitted codes. When PROBLEM_CODE_LOG names a directory (the full
// test run sets it), every process that writes a problem document or reports a run failure with a
// catalog code appends that code, once per process, to `<dir>/codes-<pid>.log`. Unset (every
// deployment), recording costs one property read. The directory is a test setting, not a platform
// setting: it is read here so that processes without the platform's configuration (the sidecar)
// record too.
import fs from 'node:fs';
import path from 'node:path';

const seen = new Set<string>();
let file: string | null | undefined;

function logFile(): string | null {
  if (file !== undefined) return file;
  const dir = process.env.PROBLEM_CODE_LOG;
  file = dir ? path.join(dir, `codes-${process.pid}.log`) : null;
  return file;
}

/** The environment variable name, for processes that pass a filtered environment on. */
export const PROBLEM_CODE_LOG_ENV = 'PROBLEM_CODE_LOG';

/** `{ PROBLEM_CODE_LOG }` when this process records, else `{}`: spread into a child's environment. */
export function problemCodeLogEnv(): Record<string, string> {
  const dir = process.env.PROBLEM_CODE_LOG;
  return dir ? { PROBLEM_CODE_LOG: dir } : {};
}

/** Records one emitted code (no-op unless PROBLEM_CODE_LOG is set). Never throws. */
export function recordProblemCode(code: string): void {
  const target = logFile();
  if (target === null || seen.has(code)) return;
  seen.add(code);
  try {
    fs.appendFileSync(target, `${code}\n`);
  } catch {
    // a missing or read-only directory must not break the answer being written
  }
}

/** Every code recorded under a log directory, by all processes. */
export function readProblemCodeLog(dir: string): Set<string> {
  const codes = new Set<string>();
  if (!fs.existsSync(dir)) return codes;
  for (const name of fs.readdirSync(dir)) {
    if (!name.endsWith('.log')) continue;
    for (const line of fs.readFileSync(path.join(dir, name), 'utf8').split('\n')) if (line.trim()) codes.add(line.trim());
  }
  return codes;
}
