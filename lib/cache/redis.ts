import { Redis } from 'ioredis';
import type { CacheStore } from './store.ts';

const DELETE_IF_EQUALS = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
const INCREMENT = `local c = redis.call('incr', KEYS[1])
if c == 1 then redis.call('pexpire', KEYS[1], ARGV[1]) end
return {c, redis.call('pttl', KEYS[1])}`;

/** Shared store: every replica sees the same keys, and they survive a platform restart. */
export function createRedisStore(url: string, keyPrefix = 'ap:'): CacheStore & { client: Redis } {
  const client = new Redis(url, { keyPrefix, lazyConnect: false, maxRetriesPerRequest: 2, enableOfflineQueue: true });
  return {
    kind: 'redis',
    client,
    async get(key) {
      return client.get(key);
    },
    async set(key, value, ttlMs) {
      await client.set(key, value, 'PX', Math.max(1, Math.ceil(ttlMs)));
    },
    async setIfAbsent(key, value, ttlMs) {
      return (await client.set(key, value, 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX')) === 'OK';
    },
    async deleteIfEquals(key, expected) {
      return (await client.eval(DELETE_IF_EQUALS, 1, key, expected)) === 1;
    },
    async delete(key) {
      await client.del(key);
    },
    async increment(key, ttlMs) {
      const [count, pttl] = (await client.eval(INCREMENT, 1, key, String(Math.ceil(ttlMs)))) as [number, number];
      return { count, resetMs: pttl > 0 ? pttl : ttlMs };
    },
    async close() {
      await client.quit().catch(() => client.disconnect());
    },
  };
}
