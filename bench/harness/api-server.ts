// The API alone (the app from api/app.ts built as test/support/app.ts builds it, with no workflow
// engine: a launched run is admitted, stored and answered, then stays pending) in a child process,
// so a load generator in the parent does not share its event loop. Measures a route's own cost
// without the sandboxes the full platform would start. API_CPU_PROF=<folder> writes a CPU profile
// of that process there (node --cpu-prof) when it stops.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startBenchApi } from './api-app.ts';

async function serve(env: Record<string, string>): Promise<void> {
  const api = await startBenchApi(env);
  process.on('message', async () => {
    await api.close();
    process.exit(0);
  });
  process.send!({ url: api.url });
}

export interface ApiChild {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts the API alone in a child process with these settings (DATABASE_URL required). */
export async function startApiChild(env: Record<string, string>): Promise<ApiChild> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--serve', JSON.stringify(env)], {
    execArgv: ['--import', 'tsx', ...(process.env.API_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.API_CPU_PROF] : [])], stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const { url } = await new Promise<{ url: string }>((resolve, reject) => {
    child.once('message', resolve as never);
    child.once('exit', (code) => reject(new Error(`the API process exited (${code})`)));
  });
  return {
    url,
    pid: child.pid!,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ op: 'stop' });
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

if (process.argv[2] === '--serve') await serve(JSON.parse(process.argv[3]) as Record<string, string>);
