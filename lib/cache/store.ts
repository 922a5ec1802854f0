// The shared-cache interface. Redis when REDIS_URL is set, process memory otherwise; code above
// it never asks which.

export type PlaceOutcome = 'acquired' | 'held' | 'full';

export interface CacheStore {
  readonly kind: 'redis' | 'memory';
  get(key: string): Promise<string | null>;
  /** sets with a time to live in milliseconds */
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** sets only when absent; true when it was set */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  /** deletes only when the current value equals `expected` (lease release) */
  deleteIfEquals(key: string, expected: string): Promise<boolean>;
  delete(key: string): Promise<void>;
  /** increments a counter that expires ttlMs after its first increment; returns the count and ms left */
  increment(key: string, ttlMs: number): Promise<{ count: number; resetMs: number }>;
  /**
   * Takes one of `limit` places under `key` for `member` until ttlMs from now (a counting
   * semaphore every instance shares): 'acquired'; 'held' when the member already holds one;
   * 'full' when `limit` places are held. A place not renewed in time frees itself, so the places of
   * an instance that died come back.
   */
  acquirePlace(key: string, member: string, limit: number, ttlMs: number): Promise<PlaceOutcome>;
  /** extends a held place to ttlMs from now; false when the member holds none (it expired) */
  renewPlace(key: string, member: string, ttlMs: number): Promise<boolean>;
  releasePlace(key: string, member: string): Promise<void>;
  close(): Promise<void>;
}
