// The shared-cache interface. Redis when REDIS_URL is set, process memory otherwise; code above
// it never asks which.

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
  close(): Promise<void>;
}
