// A key whose first request is still running answers 409 idempotency_in_progress; its lease is
// renewed while the owner lives and expires when the owner dies. Over memory and over Redis.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Request, Response } from '../../api/http.ts';
import { after, before, describe, test } from 'node:test';
import { createIdempotency } from '../../api/middleware/idempotency.ts';
import { createMemoryStore } from '../../lib/cache/memory.ts';
import { createRedisStore } from '../../lib/cache/redis.ts';
import type { CacheStore } from '../../lib/cache/store.ts';
import { isProblem } from '../../lib/problem.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { call } from '../support/http.ts';

/** What the idempotency stage reads from a request that passed authentication. */
function aCreateRequest(idem: string): Request {
  return {
    method: 'POST', originalUrl: '/api/end-users', path: '/api/end-users',
    headers: { 'idempotency-key': idem },
    ctx: { requestId: 'req_test', org: { id: 'org-1' }, space: { id: 'spc_1' } },
  } as unknown as Request;
}
const aResponse = { getHeader: () => undefined } as unknown as Response;
const BODY = Buffer.from('{"externalId":"a","name":"b"}');
const inProgress = (err: unknown) => isProblem(err) && err.code === 'idempotency_in_progress' && err.status === 409;

const redisStores: CacheStore[] = [];
function aRedisStore(prefix: string): CacheStore & { client: { disconnect(): void } } {
  const store = createRedisStore(process.env.TEST_REDIS_URL!, prefix);
  redisStores.push(store);
  return store;
}
after(async () => {
  for (const s of redisStores) await s.close().catch(() => {});
});

for (const flavour of ['memory', 'redis'] as const) {
  describe(`in progress over the ${flavour} store`, () => {
    let app: TestApp;
    let key: string;

    before(async () => {
      app = await startTestApp({ redis: flavour === 'redis' });
      const org = await anOrg(app.deps.database.pool);
      ({ key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId }));
    });
    after(() => app.close());

    test('a retry while the first request runs answers 409; once it finished, the retry replays it', async () => {
      const pool = app.deps.database.pool;
      const idem = randomUUID();
      const body = { externalId: `slow-${idem}`, name: 'Slow' };
      const send = () => call(app.url, 'POST', '/api/end-users', { key, body, headers: { 'idempotency-key': idem } });
      // Hold the first request inside its handler: its INSERT waits on this table lock.
      const locker = await pool.connect();
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE end_users IN EXCLUSIVE MODE');
      const first = send();
      try {
        for (let waited = 0; ; waited += 10) {
          const { rows } = await pool.query(
            `SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'end_users'::regclass AND NOT granted
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
          );
          if (rows[0].n > 0) break;
          assert.ok(waited < 5000, 'the first request never reached its INSERT');
          await sleep(10);
        }
        const retry = await send();
        assert.equal(retry.status, 409);
        assert.equal(retry.body.code, 'idempotency_in_progress');
      } finally {
        await locker.query('COMMIT');
        locker.release();
      }
      const done = await first;
      assert.equal(done.status, 201);
      const later = await send();
      assert.equal(later.status, 201);
      assert.equal(later.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(later.body, done.body);
    });

    test('a live owner keeps renewing its lease past the lease time', async () => {
      const store = flavour === 'memory' ? createMemoryStore() : aRedisStore(`t:lease:${randomBytes(4).toString('hex')}:`);
      const begin = createIdempotency(store, { leaseMs: 150 });
      const idem = randomUUID();
      const owner = await begin(aCreateRequest(idem), aResponse, BODY);
      assert.ok(owner.settle);
      await sleep(500);
      await assert.rejects(begin(aCreateRequest(idem), aResponse, BODY), inProgress);
      await owner.settle!({ status: 201, body: { id: 'eu_1' } });
      const replay = await begin(aCreateRequest(idem), aResponse, BODY);
      assert.equal(replay.replay?.status, 201);
    });
  });
}

describe('an in-progress lease whose owner died expires', () => {
  test('memory: once the lease time passes without renewal, the key runs again', async () => {
    let now = 1_000_000;
    const store = createMemoryStore(() => now);
    const begin = createIdempotency(store, { leaseMs: 30_000 });
    const idem = randomUUID();
    const dead = await begin(aCreateRequest(idem), aResponse, BODY);
    await assert.rejects(begin(aCreateRequest(idem), aResponse, BODY), inProgress);
    now += 29_000;
    await assert.rejects(begin(aCreateRequest(idem), aResponse, BODY), inProgress);
    now += 1_001;
    const retry = await begin(aCreateRequest(idem), aResponse, BODY);
    assert.ok(retry.settle && !retry.replay, 'the retry runs');
    // The late owner cannot overwrite the new holder's record.
    await dead.settle!({ status: 201, body: { id: 'eu_dead' } });
    await retry.settle!({ status: 201, body: { id: 'eu_retry' } });
    const replay = await begin(aCreateRequest(idem), aResponse, BODY);
    assert.deepEqual(replay.replay?.body, { id: 'eu_retry' });
  });

  test('redis: an instance whose connection died stops renewing, and another instance takes the key over', async () => {
    const prefix = `t:dead:${randomBytes(4).toString('hex')}:`;
    const ownerStore = aRedisStore(prefix);
    const survivorStore = aRedisStore(prefix);
    const ownerBegin = createIdempotency(ownerStore, { leaseMs: 300 });
    const survivorBegin = createIdempotency(survivorStore, { leaseMs: 300 });
    const idem = randomUUID();
    await ownerBegin(aCreateRequest(idem), aResponse, BODY);
    await assert.rejects(survivorBegin(aCreateRequest(idem), aResponse, BODY), inProgress);
    ownerStore.client.disconnect();
    redisStores.splice(redisStores.indexOf(ownerStore), 1);
    await sleep(450);
    const retry = await survivorBegin(aCreateRequest(idem), aResponse, BODY);
    assert.ok(retry.settle && !retry.replay, 'the retry runs at the surviving instance');
    await retry.settle!({ status: 201, body: { id: 'eu_2' } });
  });
});
