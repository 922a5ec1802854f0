// Start-up and shutdown state shared by the gates: 503 starting until ready; 503 shutting_down
// for new writes while in-flight requests drain.
export interface Lifecycle {
  ready: boolean;
  draining: boolean;
  inFlight: number;
  drainSeconds: number;
  /** resolves when no request is in flight */
  idle(): Promise<void>;
  enter(): void;
  leave(): void;
}

export function createLifecycle(drainSeconds: number): Lifecycle {
  let waiters: Array<() => void> = [];
  const lc: Lifecycle = {
    ready: false,
    draining: false,
    inFlight: 0,
    drainSeconds,
    idle() {
      if (lc.inFlight === 0) return Promise.resolve();
      return new Promise((resolve) => waiters.push(resolve));
    },
    enter() {
      lc.inFlight++;
    },
    leave() {
      lc.inFlight--;
      if (lc.inFlight === 0 && waiters.length) {
        const w = waiters;
        waiters = [];
        for (const f of w) f();
      }
    },
  };
  return lc;
}
