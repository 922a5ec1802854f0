// What the idempotency stage keeps: finished 2xx and 4xx answers (status, headers, body) for
// 24 hours; a 5xx, a thrown error or a body over 1 MiB releases the key so a retry runs again.
// The stage is driven directly, as the router drives it, over memory and over Redis.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import type { Request, Response } from '../../api/http.ts';
import { Redis } from 'ioredis';
import { after, describe, test } from 'node:test';
import { createIdempotency } from '../../api/middleware/idempotency.ts';
import { createMemoryStore } from '../../lib/cache/memory.ts';
import { createRedisStore } from '../../lib/cache/redis.ts';
import type { CacheStore } from '../../lib/cache/store.ts';
import { isProblem } from '../../lib/problem.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

function aRequest(idem: string, o: { method?: string; url?: string } = {}): Request {
  const url = o.url ?? '/api/end-users';
  return {
    method: o.method ?? 'POST', originalUrl: url, path: url.split('?')[0],
    headers: { 'idempotency-key': idem },
    ctx: { requestId: 'req_test', org: { id: 'org-1' }, space: { id: 'spc_1' } },
  } as unknown as Request;
}
const aResponse = { getHeader: () => undefined } as unknown as Response;
const BODY = Buffer.from('{"externalId":"a","name":"b"}');

const closers: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of closers) await c().catch(() => {});
});

function aStore(flavour: 'memory' | 'redis'): { store: CacheStore; prefix: string } {
  const prefix = `t:stored:${randomBytes(4).toString('hex')}:`;
  if (flavour === 'memory') return { store: createMemoryStore(), prefix };
  const store = createRedisStore(process.env.TEST_REDIS_URL!, prefix);
  closers.push(() => store.close());
  return { store, prefix };
}

/** Runs the first attempt to its end and reports what a retry then meets. */
async function retryAfter(store: CacheStore, finish: (settle: NonNullable<Awaited<ReturnType<ReturnType<typeof createIdempotency>>>['settle']>) => Promise<void>) {
  const begin = createIdempotency(store);
  const idem = randomUUID();
  const first = await begin(aRequest(idem), aResponse, BODY);
  await finish(first.settle!);
  return begin(aRequest(idem), aResponse, BODY);
}

for (const flavour of ['memory', 'redis'] as const) {
  describe(`stored responses over the ${flavour} store`, () => {
    test('a 2xx answer is stored with its status, headers and body and replayed as such', async () => {
      const { store } = aStore(flavour);
      const retry = await retryAfter(store, (settle) =>
        settle({ status: 201, body: { id: 'eu_1', name: 'Ada' }, headers: { Location: '/api/end-users/eu_1', ETag: '"v1"', 'X-Other': 'no' } }),
      );
      assert.equal(retry.settle, undefined, 'the handler does not run again');
      assert.equal(retry.replay!.status, 201);
      assert.deepEqual(retry.replay!.body, { id: 'eu_1', name: 'Ada' });
      assert.equal(retry.replay!.headers!['Idempotent-Replayed'], 'true');
      assert.equal(retry.replay!.headers!.location, '/api/end-users/eu_1');
      assert.equal(retry.replay!.headers!.etag, '"v1"');
      assert.equal(retry.replay!.headers!['x-other'], undefined, 'only the representation headers are kept');
    });

    test('a 4xx answer is stored and replayed', async () => {
      const { store } = aStore(flavour);
      const retry = await retryAfter(store, (settle) => settle({ status: 409, body: { code: 'external_id_taken' }, headers: { 'content-type': 'application/problem+json; charset=utf-8' } }));
      assert.equal(retry.replay!.status, 409);
      assert.equal(retry.replay!.headers!['content-type'], 'application/problem+json; charset=utf-8');
    });

    test('a 5xx answer releases the key: the retry runs again', async () => {
      const { store } = aStore(flavour);
      const retry = await retryAfter(store, (settle) => settle({ status: 503, body: { code: 'upstream_unavailable' } }));
      assert.equal(retry.replay, undefined);
      assert.ok(retry.settle);
    });

    test('a thrown error (settled with nothing) releases the key', async () => {
      const { store } = aStore(flavour);
      const retry = await retryAfter(store, (settle) => settle(null));
      assert.equal(retry.replay, undefined);
      assert.ok(retry.settle);
    });

    test('a body over 1,048,576 characters is not stored; one just under is', async () => {
      const { store } = aStore(flavour);
      const over = await retryAfter(store, (settle) => settle({ status: 201, body: { blob: 'x'.repeat(1_048_576) } }));
      assert.equal(over.replay, undefined, 'released');
      assert.ok(over.settle);
      const under = await retryAfter(store, (settle) => settle({ status: 201, body: { blob: 'x'.repeat(1_048_500) } }));
      assert.equal(under.replay?.status, 201, 'stored');
    });

    test('the same key with another method answers 422 idempotency_conflict', async () => {
      const { store } = aStore(flavour);
      const begin = createIdempotency(store);
      const idem = randomUUID();
      const first = await begin(aRequest(idem), aResponse, BODY);
      await first.settle!({ status: 201, body: { id: 'eu_1' } });
      await assert.rejects(begin(aRequest(idem, { method: 'PUT' }), aResponse, BODY), (err) => isProblem(err) && err.code === 'idempotency_conflict' && err.status === 422);
    });
  });
}

describe('stored answers expire after 24 hours', () => {
  test('memory: replayed until the 24th hour, then the key runs again', async () => {
    let now = 5_000_000;
    const store = createMemoryStore(() => now);
    const begin = createIdempotency(store);
    const idem = randomUUID();
    const first = await begin(aRequest(idem), aResponse, BODY);
    await first.settle!({ status: 201, body: { id: 'eu_1' } });
    now += DAY_MS - 1000;
    assert.equal((await begin(aRequest(idem), aResponse, BODY)).replay?.status, 201);
    now += 1000;
    const later = await begin(aRequest(idem), aResponse, BODY);
    assert.equal(later.replay, undefined);
    assert.ok(later.settle);
    await later.settle!(null);
  });

  test('redis: the stored record carries a 24-hour time to live', async () => {
    const { store, prefix } = aStore('redis');
    const raw = new Redis(process.env.TEST_REDIS_URL!);
    closers.push(() => raw.quit());
    const begin = createIdempotency(store);
    const first = await begin(aRequest(randomUUID()), aResponse, BODY);
    const leased = await raw.keys(`${prefix}*`);
    assert.equal(leased.length, 1);
    assert.ok((await raw.pttl(leased[0])) <= 30_000, 'while in progress, only the lease holds it');
    await first.settle!({ status: 201, body: { id: 'eu_1' } });
    const ttl = await raw.pttl(leased[0]);
    assert.ok(ttl > DAY_MS - 60_000 && ttl <= DAY_MS, `ttl ${ttl}`);
  });
});
