// Start-up and shutdown state shared by the gates: 503 starting until ready; 503 shutting_down
// for new writes while in-flight requests drain. Readiness also asks the parts a request needs
// (the database, the workflow engine) whether they answer.
export type Probe = () => Promise<boolean>;

/** A way this instance runs below what it should, shown on readiness's body while it lasts. */
export interface Degradation {
  code: string;
  detail: string;
}

export interface Lifecycle {
  ready: boolean;
  draining: boolean;
  inFlight: number;
  drainSeconds: number;
  /** ready, but weaker than configured or than before (an agent sandbox without confinement) */
  warnings: Degradation[];
  /** named checks of what requests depend on; each must answer true within PROBE_TIMEOUT_MS */
  probes: Record<string, Probe>;
  /** each probe's answer, asked at most once per PROBE_CACHE_MS however often readiness is polled */
  dependencies(): Promise<Record<string, boolean>>;
  /** resolves when no request is in flight */
  idle(): Promise<void>;
  enter(): void;
  leave(): void;
}

export const PROBE_TIMEOUT_MS = 1000;
export const PROBE_CACHE_MS = 1000;

async function answer(probe: Probe): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), PROBE_TIMEOUT_MS)));
  try {
    return await Promise.race([probe().then((ok) => ok === true, () => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function createLifecycle(drainSeconds: number): Lifecycle {
  let waiters: Array<() => void> = [];
  let cached: { at: number; answers: Promise<Record<string, boolean>> } | null = null;
  const lc: Lifecycle = {
    ready: false,
    draining: false,
    inFlight: 0,
    drainSeconds,
    warnings: [],
    probes: {},
    dependencies() {
      const now = Date.now();
      if (!cached || now - cached.at >= PROBE_CACHE_MS) {
        const names = Object.keys(lc.probes);
        cached = {
          at: now,
          answers: Promise.all(names.map((n) => answer(lc.probes[n]!))).then((oks) => Object.fromEntries(names.map((n, i) => [n, oks[i]!]))),
        };
      }
      return cached.answers;
    },
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
