// A process-local cache of resolved credentials. Any change to identity data (revocation, role,
// membership, password) sends NOTIFY auth_changed in its transaction; every instance clears its
// cache on it. While the LISTEN connection is down nothing is cached, so a change always takes
// effect at once.
import pg from 'pg';
import type { Logger } from '../../lib/log.ts';

export const AUTH_CHANGED_CHANNEL = 'auth_changed';
const TTL_MS = 60_000;
const MAX_ENTRIES = 50_000;

export interface AuthCache {
  get<T>(key: string): T | undefined;
  /**
   * The cached value, or `load()`'s, kept unless an identity change cleared the cache while it
   * loaded (a read that began before a change commits must not outlive the change).
   */
  through<T>(key: string, load: () => Promise<T>): Promise<T>;
  clear(): void;
  /** called after every identity change heard (and whenever changes may have been missed) */
  onChange(listener: () => void): () => void;
  close(): Promise<void>;
}

export async function createAuthCache(databaseUrl: string, log: Logger): Promise<AuthCache> {
  const entries = new Map<string, { value: unknown; expiresAt: number }>();
  // bumped by every clear: a load that straddles one is not stored
  let generation = 0;
  const listeners = new Set<() => void>();
  const clear = () => {
    generation++;
    entries.clear();
  };
  const changed = () => {
    clear();
    for (const l of listeners) l();
  };
  let listening = false;
  let closed = false;
  let client: pg.Client | null = null;

  const connect = async () => {
    if (closed) return;
    const c = new pg.Client({ connectionString: databaseUrl });
    c.on('notification', changed);
    c.on('error', () => {});
    c.on('end', () => {
      listening = false;
      changed();
      if (!closed) setTimeout(() => void connect().catch(() => {}), 1000).unref();
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${AUTH_CHANGED_CHANNEL}`);
      client = c;
      listening = true;
    } catch (err) {
      log.warn('auth cache listener unavailable; credentials are resolved on every request', { error: String(err) });
      await c.end().catch(() => {});
    }
  };
  await connect();

  /** The live entry for a key (its value may be null: "no such credential" is cached too). */
  const live = (key: string) => {
    if (!listening) return undefined;
    const e = entries.get(key);
    if (e && e.expiresAt < Date.now()) {
      entries.delete(key);
      return undefined;
    }
    return e;
  };

  return {
    get: <T>(key: string) => live(key)?.value as T | undefined,
    async through<T>(key: string, load: () => Promise<T>): Promise<T> {
      const hit = live(key);
      if (hit) return hit.value as T;
      const before = generation;
      const value = await load();
      if (listening && generation === before) {
        if (entries.size >= MAX_ENTRIES) entries.clear();
        entries.set(key, { value, expiresAt: Date.now() + TTL_MS });
      }
      return value;
    },
    clear,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      listeners.clear();
      listening = false;
      await client?.end().catch(() => {});
    },
  };
}

/** Call inside the transaction that changes identity data. */
export const NOTIFY_AUTH_CHANGED = `NOTIFY ${AUTH_CHANGED_CHANNEL}`;
