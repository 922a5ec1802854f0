// Per-route rate limits: RateLimit and RateLimit-Policy on every limited answer, 429 rate_limited
// with Retry-After past the limit, one bucket per method + route pattern + identity, no bypass
// for owners, and the client IP taken from X-Forwarded-For only as far as TRUST_PROXY allows.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg, aSession, type BuiltOrg } from '../support/builders.ts';
import { call, type CallOptions, type WireResponse } from '../support/http.ts';

let app: TestApp;
let proxied: TestApp;
let org: BuiltOrg;

before(async () => {
  [app, proxied] = await Promise.all([startTestApp(), startTestApp({ env: { TRUST_PROXY: '1' } })]);
  org = await anOrg(app.deps.database.pool);
});
after(() => Promise.all([app.close(), proxied.close()]));

const anOwnerKey = async () => (await aKey(app.deps.database.pool, { ...org, userId: org.ownerId })).key;
const createEndUser = (auth: CallOptions) => call(app.url, 'POST', '/api/end-users', { ...auth, body: { externalId: `eu-${randomUUID()}`, name: 'N' } });

function rateLimitOf(res: WireResponse): { limit: number; remaining: number; reset: number } {
  const m = /^limit=(\d+), remaining=(\d+), reset=(\d+)$/.exec(res.headers.get('ratelimit') ?? '');
  assert.ok(m, `RateLimit header: ${res.headers.get('ratelimit')}`);
  return { limit: Number(m[1]), remaining: Number(m[2]), reset: Number(m[3]) };
}

/** Spends `n` points of a write bucket, checking the countdown on the way. */
async function spend(n: number, send: () => Promise<WireResponse>, limit: number) {
  for (let i = 0; i < n; i++) {
    const res = await send();
    assert.ok(res.status < 300, `${res.status} ${res.text}`);
    assert.equal(rateLimitOf(res).remaining, limit - 1 - i);
  }
}

function assertRateLimited(res: WireResponse, limit: number) {
  assert.equal(res.status, 429);
  assert.equal(res.body.code, 'rate_limited');
  assert.match(res.headers.get('content-type')!, /^application\/problem\+json/);
  const retryAfter = Number(res.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${res.headers.get('retry-after')}`);
  assert.equal(res.body.retry_after, retryAfter);
  assert.deepEqual(rateLimitOf(res), { limit, remaining: 0, reset: retryAfter });
  assert.equal(res.headers.get('ratelimit-policy'), `${limit};w=60`);
}

describe('headers and the 429', () => {
  test('a read carries RateLimit and RateLimit-Policy for its row', async () => {
    const res = await call(app.url, 'GET', '/api/end-users', { key: await anOwnerKey() });
    assert.equal(res.status, 200);
    const rl = rateLimitOf(res);
    assert.equal(rl.limit, 300);
    assert.equal(rl.remaining, 299);
    assert.ok(rl.reset >= 1 && rl.reset <= 60);
    assert.equal(res.headers.get('ratelimit-policy'), '300;w=60');
  });

  test("the 61st end-user write in a minute by an owner's key answers 429, and even a replay is refused", async () => {
    const key = await anOwnerKey();
    const retried = { key, headers: { 'idempotency-key': randomUUID() }, body: { externalId: `eu-${randomUUID()}`, name: 'N' } };
    const first = await call(app.url, 'POST', '/api/end-users', retried);
    assert.equal(first.status, 201);
    assert.equal(first.headers.get('ratelimit-policy'), '60;w=60');
    assert.equal(rateLimitOf(first).remaining, 59);
    await spend(59, () => createEndUser({ key }), 59);
    assertRateLimited(await createEndUser({ key }), 60);
    // Rate limiting runs before the idempotency check.
    const replay = await call(app.url, 'POST', '/api/end-users', retried);
    assertRateLimited(replay, 60);
  });

  test("an owner's session has no bypass either", async () => {
    const { cookie } = await aSession(app.deps.database.pool, org.ownerId);
    const auth = { cookie, org: org.orgId, space: org.spaceId };
    await spend(60, () => createEndUser(auth), 60);
    assertRateLimited(await createEndUser(auth), 60);
  });
});

describe('buckets: method + route pattern + identity', () => {
  let key: string;
  let endUserIds: string[];

  before(async () => {
    key = await anOwnerKey();
    // Arranged with another key so that `key`'s buckets start empty.
    const arranger = await anOwnerKey();
    endUserIds = [];
    for (let i = 0; i < 3; i++) endUserIds.push((await createEndUser({ key: arranger })).body.id);
    await spend(60, () => createEndUser({ key }), 60);
    assertRateLimited(await createEndUser({ key }), 60);
  });

  test('another key of the same user and space has its own bucket', async () => {
    const res = await createEndUser({ key: await anOwnerKey() });
    assert.equal(res.status, 201);
    assert.equal(rateLimitOf(res).remaining, 59);
  });

  test('another route or method is not limited by this one', async () => {
    const list = await call(app.url, 'GET', '/api/end-users', { key });
    assert.equal(list.status, 200);
    assert.equal(rateLimitOf(list).limit, 300);
    const patch = await call(app.url, 'PATCH', `/api/end-users/${endUserIds[0]}`, { key, body: { name: 'Renamed' } });
    assert.equal(patch.status, 200);
    assert.deepEqual([rateLimitOf(patch).limit, rateLimitOf(patch).remaining], [60, 59]);
  });

  test('the bucket follows the route pattern, not the URL: PATCHes of different ids share it', async () => {
    // One PATCH was spent by the previous test.
    for (let i = 1; i < 60; i++) {
      const res = await call(app.url, 'PATCH', `/api/end-users/${endUserIds[i % 2]}`, { key, body: { name: `N${i}` } });
      assert.equal(res.status, 200, res.text);
    }
    const res = await call(app.url, 'PATCH', `/api/end-users/${endUserIds[2]}`, { key, body: { name: 'Third' } });
    assertRateLimited(res, 60);
  });
});

describe('the client IP behind a proxy (POST /api/auth/bootstrap/redeem: 5 per minute per IP)', () => {
  const redeem = (base: string, forwardedFor: string) =>
    call(base, 'POST', '/api/auth/bootstrap/redeem', {
      headers: { 'x-forwarded-for': forwardedFor },
      body: { token: 'not-the-token', email: 'owner@example.test', password: 'irrelevant', name: 'Owner' },
    });

  test('with TRUST_PROXY=1 the forwarded client is the identity; spoofed hops before it are ignored', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await redeem(proxied.url, '203.0.113.7');
      assert.notEqual(res.status, 429);
      assert.equal(res.headers.get('ratelimit-policy'), '5;w=60');
      assert.equal(rateLimitOf(res).remaining, 4 - i);
    }
    assertRateLimited(await redeem(proxied.url, '203.0.113.7'), 5);
    assertRateLimited(await redeem(proxied.url, '198.51.100.99, 203.0.113.7'), 5);
    const another = await redeem(proxied.url, '203.0.113.8');
    assert.notEqual(another.status, 429);
    assert.equal(rateLimitOf(another).remaining, 4);
  });

  test('with TRUST_PROXY=false X-Forwarded-For is ignored: every forwarded address shares the socket\'s bucket', async () => {
    for (let i = 0; i < 5; i++) assert.notEqual((await redeem(app.url, `203.0.113.${10 + i}`)).status, 429);
    assertRateLimited(await redeem(app.url, '203.0.113.99'), 5);
  });
});
