import type { CacheStore } from './store.ts';

interface Entry {
  value: string;
  expiresAt: number;
}

/** Process-local twin of the Redis store: not shared across replicas, lost on restart. */
export function createMemoryStore(now: () => number = Date.now): CacheStore {
  const entries = new Map<string, Entry>();
  /** key → member → expiry (ms) */
  const places = new Map<string, Map<string, number>>();
  const placesOf = (key: string): Map<string, number> => {
    let held = places.get(key);
    if (!held) places.set(key, (held = new Map()));
    const t = now();
    for (const [member, expiresAt] of held) if (expiresAt <= t) held.delete(member);
    return held;
  };
  let sweeps = 0;

  const live = (key: string): Entry | undefined => {
    const e = entries.get(key);
    if (!e) return undefined;
    if (e.expiresAt <= now()) {
      entries.delete(key);
      return undefined;
    }
    return e;
  };
  // Expired keys nobody reads again are dropped now and then, so memory stays bounded.
  const maybeSweep = () => {
    if (++sweeps % 1000 !== 0) return;
    const t = now();
    for (const [k, e] of entries) if (e.expiresAt <= t) entries.delete(k);
  };

  return {
    kind: 'memory',
    async get(key) {
      return live(key)?.value ?? null;
    },
    async set(key, value, ttlMs) {
      maybeSweep();
      entries.set(key, { value, expiresAt: now() + ttlMs });
    },
    async setIfAbsent(key, value, ttlMs) {
      maybeSweep();
      if (live(key)) return false;
      entries.set(key, { value, expiresAt: now() + ttlMs });
      return true;
    },
    async deleteIfEquals(key, expected) {
      const e = live(key);
      if (!e || e.value !== expected) return false;
      entries.delete(key);
      return true;
    },
    async delete(key) {
      entries.delete(key);
    },
    async increment(key, ttlMs) {
      maybeSweep();
      const e = live(key);
      if (!e) {
        entries.set(key, { value: '1', expiresAt: now() + ttlMs });
        return { count: 1, resetMs: ttlMs };
      }
      e.value = String(Number(e.value) + 1);
      return { count: Number(e.value), resetMs: e.expiresAt - now() };
    },
    async acquirePlace(key, member, limit, ttlMs) {
      const held = placesOf(key);
      if (held.has(member)) return 'held';
      if (held.size >= limit) return 'full';
      held.set(member, now() + ttlMs);
      return 'acquired';
    },
    async renewPlace(key, member, ttlMs) {
      const held = placesOf(key);
      if (!held.has(member)) return false;
      held.set(member, now() + ttlMs);
      return true;
    },
    async releasePlace(key, member) {
      const held = places.get(key);
      held?.delete(member);
      if (held?.size === 0) places.delete(key);
    },
    async close() {
      entries.clear();
      places.clear();
    },
  };
}
