import { Redis } from 'ioredis';
import type { CacheStore, PlaceOutcome } from './store.ts';

const DELETE_IF_EQUALS = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
const INCREMENT = `local c = redis.call('incr', KEYS[1])
if c == 1 then redis.call('pexpire', KEYS[1], ARGV[1]) end
return {c, redis.call('pttl', KEYS[1])}`;
// Places are a sorted set of members scored by their expiry (the server's clock, one for every
// instance); the key itself lives as long as its newest place (every place has the same ttl).
const NOW_MS = `local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;
const ACQUIRE_PLACE = `${NOW_MS}redis.call('zremrangebyscore', KEYS[1], '-inf', now)
if redis.call('zscore', KEYS[1], ARGV[1]) then return 'held' end
if redis.call('zcard', KEYS[1]) >= tonumber(ARGV[2]) then return 'full' end
redis.call('zadd', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('pexpire', KEYS[1], ARGV[3])
return 'acquired'`;
const RENEW_PLACE = `${NOW_MS}local held = redis.call('zscore', KEYS[1], ARGV[1])
if not held or tonumber(held) <= now then
  redis.call('zrem', KEYS[1], ARGV[1])
  return 0
end
redis.call('zadd', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('pexpire', KEYS[1], ARGV[2])
return 1`;

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
    async acquirePlace(key, member, limit, ttlMs) {
      return (await client.eval(ACQUIRE_PLACE, 1, key, member, String(limit), String(Math.max(1, Math.ceil(ttlMs))))) as PlaceOutcome;
    },
    async renewPlace(key, member, ttlMs) {
      return (await client.eval(RENEW_PLACE, 1, key, member, String(Math.max(1, Math.ceil(ttlMs))))) === 1;
    },
    async releasePlace(key, member) {
      await client.zrem(key, member);
    },
    async close() {
      await client.quit().catch(() => client.disconnect());
    },
  };
}
