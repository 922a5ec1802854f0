// `npm start`: the platform on its embedded defaults (or what the environment configures).
import { ConfigError } from '../lib/config.ts';
import { startPlatform } from './host.ts';
import { StartRefused } from './instance-lock.ts';
import { watchParent } from './parent-watch.ts';

async function main(): Promise<void> {
  const started = performance.now();
  // Signals are ours from the first instant: one during boot stops the platform once it is up.
  let signals = 0;
  let platform: Awaited<ReturnType<typeof startPlatform>> | undefined;
  let stopRequested: string | undefined;
  const stop = (signal: string) => {
    process.stdout.write(`${signal}: draining and stopping...\n`);
    platform!.stop().then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`stop failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  const onSignal = (signal: string) => {
    if (++signals > 1) {
      process.stderr.write('Second signal: exiting now.\n');
      process.exit(1);
    }
    if (platform) stop(signal);
    else stopRequested = signal;
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  // A launcher that does not pass signals on (npm on SIGTERM) still stops the platform by going away.
  // It asks for a stop once; it never counts as the second signal that cuts a drain short.
  watchParent(() => {
    if (signals === 0) onSignal('parent exited');
  });

  try {
    platform = await startPlatform({ announce: (line) => process.stdout.write(`${line}\n`) });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78);
    }
    if (err instanceof StartRefused) {
      process.stderr.write(`${err.message}\n`);
      process.exit(75);
    }
    throw err;
  }
  process.stdout.write(`Ready in ${Math.round(performance.now() - started)} ms. Ctrl-C stops.\n`);
  if (stopRequested) stop(stopRequested);
}

main().catch((err) => {
  process.stderr.write(`Start failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
