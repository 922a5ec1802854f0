// The warm-pool handshake: announce readiness as one JSON line on stdout, then wait for one JSON
// line on stdin. A pool parent that goes away (stdin ends), before or after assigning, ends the
// process, so a killed platform leaves no orphan behind.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function announceReady(fields: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ ready: true, ...fields })}\n`);
}

/** The sidecar's line to its parent once it holds the run's end, delivered or still being delivered. */
export const END_HELD = 'end_held';
/** the same fact as a file in the sidecar's state folder, where a parent that restarted finds it */
export const END_HELD_FILE = 'end-held';

/**
 * Says the run's end is held: as a file in `stateDir` when given (written before this returns,
 * so before the agent's last event is answered), then as a line to the parent.
 */
export function announceEndHeld(stateDir?: string): void {
  if (stateDir) {
    try {
      writeFileSync(join(stateDir, END_HELD_FILE), `${new Date().toISOString()}\n`);
    } catch (err) {
      process.stderr.write(`the held end could not be recorded in ${stateDir}: ${(err as Error).message}\n`);
    }
  }
  process.stdout.write(`${JSON.stringify({ [END_HELD]: true })}\n`);
}

/** The first line on stdin; rejects if stdin ends first. Later input is ignored. */
export function readFirstLine(): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const onData = (chunk: Buffer | string) => {
      buffered += chunk.toString();
      const newline = buffered.indexOf('\n');
      if (newline < 0) return;
      cleanup();
      process.stdin.pause();
      resolve(buffered.slice(0, newline));
    };
    const onEnd = () => {
      cleanup();
      if (buffered.trim() !== '') resolve(buffered);
      else reject(new Error('stdin ended before an assignment arrived'));
    };
    const cleanup = () => {
      process.stdin.off('data', onData);
      process.stdin.off('end', onEnd);
    };
    process.stdin.on('data', onData);
    process.stdin.on('end', onEnd);
  });
}

/** Ends the process once stdin closes: the pool parent is gone. Call after the first line. */
export function exitWhenStdinEnds(): void {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  // later input is ignored; reading keeps the end-of-file observable
  process.stdin.on('data', () => undefined);
  process.stdin.resume();
}

