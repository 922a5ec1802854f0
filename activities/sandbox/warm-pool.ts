// Keeps a number of sandbox pairs started and waiting, so a run's start is a claim, not a spawn.
// Refills one pair at a time in the background; a pair that dies while waiting is replaced;
// repeated start failures back off instead of spinning. Both backends' pairs wait here.
import type { Logger } from '../../lib/log.ts';

/** A started pair waiting for its run, as the pool sees it. */
export interface WaitingPair {
  readonly id: string;
  readonly heapMb: number;
  alive(): boolean;
  /** settles once one of its programs has exited */
  readonly ended: Promise<unknown>;
  stop(): Promise<void>;
  /** what its programs last wrote to stderr, for the log of one that died waiting */
  stderrTail(): string;
}

const MAX_BACKOFF_MS = 30_000;

export class WarmPool<P extends WaitingPair> {
  private readonly ready: P[] = [];
  private inFlight: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private closed = false;
  private fullWaiters: (() => void)[] = [];

  constructor(
    private readonly size: number,
    /** the agent heap ceiling of pooled pairs: a run asking for another one gets a fresh pair */
    readonly heapMb: number,
    private readonly spawn: () => Promise<P>,
    private readonly log?: Logger,
  ) {}

  get warm(): number {
    return this.ready.length;
  }

  /** Every waiting pair (for the parent's exit hook). */
  pairs(): readonly P[] {
    return this.ready;
  }

  /**
   * A waiting pair with this heap ceiling, if any. The caller refills (fill()) once its run is
   * assigned: spawning two programs meanwhile would compete with the claim for the CPU.
   */
  take(heapMb: number): P | undefined {
    const index = this.ready.findIndex((p) => p.heapMb === heapMb && p.alive());
    return index >= 0 ? this.ready.splice(index, 1)[0] : undefined;
  }

  /** Resolves once the pool holds its full count (at once when it does). */
  whenFull(): Promise<void> {
    if (this.ready.length >= this.size || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.fullWaiters.push(resolve));
  }

  fill(): void {
    if (this.closed || this.inFlight || this.retryTimer || this.ready.length >= this.size) return;
    this.inFlight = this.spawnOne().finally(() => {
      this.inFlight = null;
      this.fill();
    });
  }

  private async spawnOne(): Promise<void> {
    let pair: P;
    try {
      pair = await this.spawn();
    } catch (err) {
      // a pair that failed while the pool was drained is not retried
      if (this.closed) return;
      this.failures += 1;
      const backoff = Math.min(MAX_BACKOFF_MS, 500 * 2 ** (this.failures - 1));
      this.log?.warn('warm pool could not start a sandbox', { error: (err as Error).message, retryInMs: backoff });
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null;
        this.fill();
      }, backoff);
      this.retryTimer.unref();
      return;
    }
    this.failures = 0;
    if (this.closed) {
      await pair.stop();
      return;
    }
    this.ready.push(pair);
    void pair.ended.then(() => this.evict(pair));
    if (this.ready.length >= this.size) for (const wake of this.fullWaiters.splice(0)) wake();
  }

  /** A pair that died while waiting is removed and replaced; a claimed one is no longer ours. */
  private evict(pair: P): void {
    const index = this.ready.indexOf(pair);
    if (index < 0) return;
    this.ready.splice(index, 1);
    this.log?.warn('a waiting sandbox exited; replacing it', { sandboxId: pair.id, stderr: pair.stderrTail() });
    void pair.stop();
    this.fill();
  }

  /** Stops refilling and stops every waiting pair. */
  async drain(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    for (const wake of this.fullWaiters.splice(0)) wake();
    await this.inFlight;
    await Promise.all(this.ready.splice(0).map((p) => p.stop()));
  }
}
