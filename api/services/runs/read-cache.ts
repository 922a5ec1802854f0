// A process-local cache of run reads (one run's wire, a page of runs), grouped by space. A trigger
// announces every committed change to what a run's wire shows (NOTIFY run_wire_changed with the
// space id, status-feed.ts), and the space's entries go at once; while that connection is down
// nothing is served from the cache, and when it comes back everything cached before is dropped.
// Polling clients and dashboards then cost the database nothing until something changes.
import type { RunStatusFeed } from './status-feed.ts';

const TTL_MS = 30_000;
/** the cached text's budget, across every space */
const MAX_BYTES = 32 * 2 ** 20;
/** a read larger than this is not kept: it would push out many small ones */
const MAX_ENTRY_BYTES = 512 * 2 ** 10;

interface Entry {
  value: unknown;
  bytes: number;
  expiresAt: number;
}

export interface RunReadCache {
  /**
   * The cached value for (space, key), or `load()`'s: kept unless a change in the space was heard
   * while it loaded (a read that began before a change commits must not outlive the change).
   * `size` tells what the value weighs (its text length); the key's length is added to it.
   */
  through<T>(spaceId: string, key: string, load: () => Promise<T>, size: (value: T) => number): Promise<T>;
  /**
   * This process has just committed a change to a run of the space: drop its entries now, so the
   * caller's next read sees the change without waiting for the notification to come back.
   */
  changed(spaceId: string): void;
  close(): void;
}

export function createRunReadCache(feed: RunStatusFeed): RunReadCache {
  const spaces = new Map<string, Map<string, Entry>>();
  // bumped at each change heard, per space; `epoch` at each reset
  const generations = new Map<string, number>();
  let epoch = 0;
  let bytes = 0;

  const dropSpace = (spaceId: string) => {
    const entries = spaces.get(spaceId);
    if (entries) for (const e of entries.values()) bytes -= e.bytes;
    spaces.delete(spaceId);
  };
  const changed = (spaceId: string) => {
    generations.set(spaceId, (generations.get(spaceId) ?? 0) + 1);
    dropSpace(spaceId);
  };
  const offWire = feed.onWireChange(changed);
  const offReset = feed.onReset(() => {
    epoch++;
    spaces.clear();
    generations.clear();
    bytes = 0;
  });

  /** Drops whole spaces, oldest first, until `needed` more bytes fit. */
  const makeRoom = (needed: number) => {
    for (const spaceId of spaces.keys()) {
      if (bytes + needed <= MAX_BYTES) return;
      dropSpace(spaceId);
    }
  };

  return {
    async through(spaceId, key, load, size) {
      if (!feed.listening) return load();
      const entries = spaces.get(spaceId);
      const hit = entries?.get(key);
      if (hit && hit.expiresAt > Date.now()) return hit.value as Awaited<ReturnType<typeof load>>;
      const before = `${epoch}:${generations.get(spaceId) ?? 0}`;
      const value = await load();
      // the key counts too: a flood of reads of missing runs (null values) stays within the budget
      const weight = size(value) + key.length;
      if (feed.listening && `${epoch}:${generations.get(spaceId) ?? 0}` === before && weight <= MAX_ENTRY_BYTES) {
        makeRoom(weight);
        let space = spaces.get(spaceId);
        if (!space) spaces.set(spaceId, (space = new Map()));
        const old = space.get(key);
        if (old) bytes -= old.bytes;
        space.set(key, { value, bytes: weight, expiresAt: Date.now() + TTL_MS });
        bytes += weight;
      }
      return value;
    },
    changed,
    close() {
      offWire();
      offReset();
      spaces.clear();
    },
  };
}
