// The platform as a person starts it: no DATABASE_URL (embedded PostgreSQL under the data
// directory) and its embedded Restate, run as `node bin/start.mjs platform` or `npm start`, in a
// process group of its own so a test can send what a terminal's Ctrl-C sends.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { problemCodeLogEnv } from '../../lib/problem-log.ts';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../lib/free-port.ts';

export const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

export interface Started {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

export interface EmbeddedSetup {
  dataDir: string;
  base: string;
  port: number;
  env: Record<string, string>;
  /** starts a platform on this data directory; `npm` runs it through `npm start` */
  launch(how?: 'node' | 'npm', extraEnv?: Record<string, string>): Started;
  waitReady(started: Started, ms?: number): Promise<void>;
  /** the embedded PostgreSQL and Restate of this data directory, by command line */
  processes(): Array<{ pid: number; cmd: string }>;
  cleanup(): void;
}

export async function embeddedSetup(env: Record<string, string> = {}): Promise<EmbeddedSetup> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const fullEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/root',
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    SANDBOX_WARM_POOL: '0',
    ...problemCodeLogEnv(),
    ...env,
  };
  const started: Started[] = [];
  const setup: EmbeddedSetup = {
    dataDir,
    base,
    port,
    env: fullEnv,
    launch(how = 'node', extraEnv = {}) {
      const [cmd, args] = how === 'npm' ? ['npm', ['start', '--silent']] : [process.execPath, ['bin/start.mjs', 'platform']];
      const child = spawn(cmd, args, { cwd: root, env: { ...fullEnv, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      let output = '';
      child.stdout!.on('data', (d) => (output += d));
      child.stderr!.on('data', (d) => (output += d));
      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      const s = { child, output: () => output, exited };
      started.push(s);
      return s;
    },
    async waitReady(s, ms = 120_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        if (s.child.exitCode !== null) throw new Error(`the platform exited (${s.child.exitCode}):\n${s.output().slice(-4000)}`);
        if (await fetch(`${base}/health/ready`).then((r) => r.status === 200, () => false)) return;
        if (Date.now() > deadline) throw new Error(`the platform was not ready in time:\n${s.output().slice(-4000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    processes: () => processesNaming(dataDir),
    cleanup() {
      for (const s of started) {
        if (s.child.exitCode === null && s.child.signalCode === null) {
          try {
            process.kill(-s.child.pid!, 'SIGKILL');
          } catch {
            // already gone
          }
        }
      }
      // Whatever a failed run left behind of this data directory's processes, and only those.
      for (const { pid } of setup.processes()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return setup;
}

/** The promise's value, or 'timeout' after `ms` (a timer that does not hold the process open). */
/** Processes whose command line names this folder (an embedded PostgreSQL or Restate of a data directory). */
export function processesNaming(dir: string): Array<{ pid: number; cmd: string }> {
  const found: Array<{ pid: number; cmd: string }> = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(dir)) found.push({ pid: Number(entry), cmd });
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}

export function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timeout'> {
  return Promise.race([promise, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms).unref())]);
}

/** Resolves once `check` holds, polling; throws with `what` after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
