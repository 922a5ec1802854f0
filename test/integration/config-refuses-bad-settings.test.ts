// The platform refuses to boot on a wrong setting: `node bin/start.mjs platform` exits non-zero
// before touching its data directory, and stderr names the setting and, for JSON settings, the key.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, test } from 'node:test';
// @ts-expect-error: a plain ESM script without type declarations
import { ensureBundle } from '../../bin/start.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

interface Exit {
  code: number | null;
  stderr: string;
  dataDir: string;
}

async function boot(settings: Record<string, string>): Promise<Exit> {
  const dataDir = path.join(os.tmpdir(), `refused-${process.pid}-${Math.random().toString(36).slice(2)}`);
  const proc = spawn(process.execPath, ['bin/start.mjs', 'platform'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', LOG_LEVEL: 'warn', DATA_DIR: dataDir, PORT: '0', ...settings },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  const killer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((resolve) => proc.once('exit', (c) => resolve(c)));
  clearTimeout(killer);
  return { code, stderr, dataDir };
}

function assertRefused(exit: Exit, ...mentions: string[]) {
  assert.ok(exit.code !== null && exit.code !== 0, `exit code ${exit.code}`);
  for (const m of mentions) assert.ok(exit.stderr.includes(m), `stderr names ${m}:\n${exit.stderr}`);
  assert.doesNotMatch(exit.stderr, /\n\s+at /, 'a message, not a stack trace');
  assert.equal(fs.existsSync(exit.dataDir), false, 'nothing was created');
}

// One bundle build up front, so the parallel starts below do not race to write it.
before(async () => {
  await ensureBundle();
});

test('an unknown key in PLATFORM_RUN_LIMITS, bad JSON, or a bad value each stop the boot with a message naming them', async () => {
  const [unknownKey, badJson, badValue] = await Promise.all([
    boot({ PLATFORM_RUN_LIMITS: '{"max_concurrent_per_org": 5, "max_concurent_runs": 3}' }),
    boot({ PLATFORM_RUN_LIMITS: '{"max_concurrent_per_org": 5,' }),
    boot({ INLINE_RUN_LIMITS: '{"rate_per_min": 0}' }),
  ]);
  assertRefused(unknownKey, 'PLATFORM_RUN_LIMITS', 'max_concurent_runs');
  assertRefused(badJson, 'PLATFORM_RUN_LIMITS', 'JSON');
  assertRefused(badValue, 'INLINE_RUN_LIMITS', 'rate_per_min');
});

test('SANDBOX_EGRESS_CA_FILE naming a file that cannot be read, or one holding no certificate, stops the boot', async () => {
  const notPem = path.join(os.tmpdir(), `not-a-ca-${process.pid}.pem`);
  fs.writeFileSync(notPem, 'hello\n');
  try {
    const [missing, empty] = await Promise.all([
      boot({ SANDBOX_EGRESS_CA_FILE: path.join(os.tmpdir(), `absent-${process.pid}.pem`) }),
      boot({ SANDBOX_EGRESS_CA_FILE: notPem }),
    ]);
    assertRefused(missing, 'SANDBOX_EGRESS_CA_FILE', 'cannot be read');
    assertRefused(empty, 'SANDBOX_EGRESS_CA_FILE', 'holds no PEM certificate');
  } finally {
    fs.rmSync(notPem, { force: true });
  }
});
