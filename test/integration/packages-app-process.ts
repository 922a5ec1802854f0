// The API in a child process of its own, so a test can read the memory of the process that
// handled a request without the test's own buffers in it. Messages: {rss} answers
// process.memoryUsage().rss (after a full collection); {close} stops the app and exits.
import v8 from 'node:v8';
import vm from 'node:vm';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startTestApp } from '../support/app.ts';

interface Ready { url: string; databaseUrl: string }

if (process.send && process.argv[2] === '--child') {
  const env = JSON.parse(process.argv[3] ?? '{}') as Record<string, string>;
  const app = await startTestApp({ env });
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  process.on('message', async (msg: { op: string }) => {
    if (msg.op === 'rss') {
      gc();
      process.send!({ rss: process.memoryUsage().rss });
    }
    if (msg.op === 'close') {
      await app.close();
      process.exit(0);
    }
  });
  process.send({ url: app.url, databaseUrl: app.deps.database.url } satisfies Ready);
}

export interface AppProcess extends Ready {
  rss(): Promise<number>;
  close(): Promise<void>;
}

export async function startAppProcess(env: Record<string, string> = {}): Promise<AppProcess> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--child', JSON.stringify(env)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('message', (m) => resolve(m as Ready));
    child.once('exit', (code) => reject(new Error(`the app process exited with ${code}`)));
  });
  const ask = <T>(op: string) => new Promise<T>((resolve) => {
    child.once('message', (m) => resolve(m as T));
    child.send({ op });
  });
  return {
    ...ready,
    rss: async () => (await ask<{ rss: number }>('rss')).rss,
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ op: 'close' });
      await exited;
    },
  };
}
