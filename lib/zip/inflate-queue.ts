// Admission to archive inflation. Entries inflate in a small pool of worker threads, one entry
// per worker at a time, so the machine's cores stay mostly for serving; waiting tenants are
// served in turn (round robin by key), so one tenant's stream of imports cannot starve another's.

export class FairQueue {
  private running = 0;
  /** waiters by key; Map order is the rotation order */
  private readonly waiting = new Map<string, Array<() => void>>();

  constructor(readonly slots: number) {}

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    await this.admit(key);
    try {
      return await task();
    } finally {
      this.running--;
      this.dispatch();
    }
  }

  /** tasks waiting for a slot, all keys together */
  get queued(): number {
    let count = 0;
    for (const list of this.waiting.values()) count += list.length;
    return count;
  }

  private admit(key: string): Promise<void> {
    // Stryker disable next-line ConditionalExpression: a free slot with tasks waiting never lasts past dispatch(), which fills it at once
    if (this.running < this.slots && this.waiting.size === 0) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const list = this.waiting.get(key);
      if (list) list.push(resolve);
      else this.waiting.set(key, [resolve]);
    });
  }

  private dispatch(): void {
    while (this.running < this.slots && this.waiting.size > 0) {
      const [key, list] = this.waiting.entries().next().value as [string, Array<() => void>];
      const next = list.shift()!;
      // the served key goes to the back of the rotation
      this.waiting.delete(key);
      if (list.length > 0) this.waiting.set(key, list);
      this.running++;
      next();
    }
  }
}

/** Two entries at a time, so at most two inflate workers exist. */
export const inflateQueue = new FairQueue(2);
