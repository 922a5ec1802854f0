// Background sweeps: one pass at a time (a tick that finds the last pass still running is
// skipped), never holding the process open, and a stop that waits for the pass in flight.

export interface Periodic {
  stop(): Promise<void>;
}

/** Runs `pass` every `everyMs`; a failed pass is handed to `onError` and the next tick runs as usual. */
export function runEvery(everyMs: number, pass: () => Promise<unknown>, onError: (err: unknown) => void): Periodic {
  let current: Promise<void> | null = null;
  const timer = setInterval(() => {
    current ??= pass()
      .then(() => undefined, onError)
      .finally(() => (current = null));
  }, everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await current;
    },
  };
}
