// The chat engine's live-session cap counts across instances through the shared cache: with two
// API instances on one database and one Redis, a turn streaming at one takes the only place, so the
// other answers 429 chat_capacity (and 409 chat_turn_in_progress for that same session) until it
// ends. Below it, the places themselves, in both twins of the cache: a counting semaphore whose
// places expire when their holder stops renewing them.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createMemoryStore } from '../../lib/cache/memory.ts';
import { createRedisStore } from '../../lib/cache/redis.ts';
import type { CacheStore } from '../../lib/cache/store.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg, aSession, type BuiltOrg } from '../support/builders.ts';
import { postTurn } from '../support/chat-turn.ts';
import { client } from '../support/http.ts';

describe('two instances on one Redis', () => {
  let fake: FakeModel;
  let a: TestApp;
  let b: TestApp;
  let org: BuiltOrg;
  let owner: Record<string, string>;
  let hangModelId: string;

  before(async () => {
    fake = await startFakeModel();
    const cachePrefix = `t:chat-live:${randomBytes(4).toString('hex')}:`;
    const env = { EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host, CHAT_MAX_LIVE_SESSIONS: '1', CHAT_TURN_RATE_PER_MIN: '100' };
    a = await startTestApp({ redis: true, cachePrefix, env });
    // one instance key, as replicas of one deployment share ENCRYPTION_KEY
    b = await startTestApp({ redis: true, cachePrefix, env, databaseUrl: a.deps.database.url, secrets: a.deps.secrets });
    const pool = a.deps.database.pool;
    org = await anOrg(pool);
    const api = client(a.url, { key: (await aKey(pool, { ...org, userId: org.ownerId })).key });
    const cred = await api.post('/api/model-provider-credentials', { provider: 'openai-compatible', name: 'fake', base_url: fake.url, api_key: 'sk-fake-provider-key' });
    assert.equal(cred.status, 201, cred.text);
    assert.equal((await api.post('/api/models', { credential_id: cred.body.id, model: 'fake-text', name: 'fake-text', is_default: true })).status, 201);
    const hang = await api.post('/api/models', { credential_id: cred.body.id, model: 'fake-hang', name: 'fake-hang' });
    assert.equal(hang.status, 201, hang.text);
    hangModelId = hang.body.id;
    owner = { cookie: (await aSession(pool, org.ownerId)).cookie, 'x-org-id': org.orgId, 'x-space-id': org.spaceId };
  });
  after(async () => {
    await b?.close();
    await a?.close();
    await fake?.close();
  });

  test('a turn streaming at one instance holds the only place at the other, until it ends', async () => {
    const hung = await client(a.url, { headers: owner }).post('/api/chat/sessions', { model_id: hangModelId });
    const other = await client(a.url, { headers: owner }).post('/api/chat/sessions', {});
    assert.equal(hung.status, 201, hung.text);
    assert.equal(other.status, 201, other.text);

    // with nothing live, either instance answers
    const first = await postTurn(b.url, other.body.id, 'hi', owner);
    assert.equal(first.status, 200, first.text);

    const before = fake.requests.length;
    const stop = new AbortController();
    const holding = postTurn(a.url, hung.body.id, 'wait forever', owner, stop.signal).catch((err) => err);
    const started = Date.now();
    while (!fake.requests.slice(before).some((r) => r.model === 'fake-hang')) {
      assert.ok(Date.now() - started < 10_000, 'the hanging turn reached the model');
      await new Promise((r) => setTimeout(r, 20));
    }
    const full = await postTurn(b.url, other.body.id, 'hi', owner);
    assert.equal(full.status, 429, full.text);
    assert.equal(full.problem.code, 'chat_capacity');
    assert.equal(full.headers.get('retry-after'), '5');
    const again = await postTurn(b.url, hung.body.id, 'hi', owner);
    assert.equal(again.status, 409, again.text);
    assert.equal(again.problem.code, 'chat_turn_in_progress');

    stop.abort();
    await holding;
    // the stopped turn at A frees the place B counts
    for (;;) {
      const res = await postTurn(b.url, other.body.id, 'hi', owner);
      if (res.status === 200) break;
      assert.equal(res.problem.code, 'chat_capacity');
      assert.ok(Date.now() - started < 10_000, 'the stopped turn released its place');
      await new Promise((r) => setTimeout(r, 100));
    }
  });
});

describe('places in the shared cache', () => {
  const stores: CacheStore[] = [];
  after(async () => {
    for (const s of stores) await s.close();
  });
  const aRedisPair = () => {
    const prefix = `t:places:${randomBytes(4).toString('hex')}:`;
    const pair = [createRedisStore(process.env.TEST_REDIS_URL!, prefix), createRedisStore(process.env.TEST_REDIS_URL!, prefix)];
    stores.push(...pair);
    return pair;
  };

  for (const flavour of ['memory', 'redis'] as const) {
    test(`${flavour}: at most limit places; a member holds one once; a release frees it`, async () => {
      const [one, two] = flavour === 'memory' ? [createMemoryStore(), null] : aRedisPair();
      const other = two ?? one;
      assert.equal(await one.acquirePlace('k', 's1', 2, 60_000), 'acquired');
      assert.equal(await other.acquirePlace('k', 's1', 2, 60_000), 'held');
      assert.equal(await other.acquirePlace('k', 's2', 2, 60_000), 'acquired');
      assert.equal(await one.acquirePlace('k', 's3', 2, 60_000), 'full');
      assert.equal(await one.acquirePlace('another', 's3', 2, 60_000), 'acquired', 'each key counts its own');
      await other.releasePlace('k', 's1');
      assert.equal(await one.acquirePlace('k', 's3', 2, 60_000), 'acquired');
      assert.equal(await one.renewPlace('k', 's3', 60_000), true);
      assert.equal(await one.renewPlace('k', 's1', 60_000), false, 'a released place cannot be renewed');
    });
  }

  test('memory: a place not renewed in time frees itself; a renewed one stays', async () => {
    let now = 1_000;
    const store = createMemoryStore(() => now);
    assert.equal(await store.acquirePlace('k', 'dead', 2, 1_000), 'acquired');
    assert.equal(await store.acquirePlace('k', 'alive', 2, 1_000), 'acquired');
    now += 900;
    assert.equal(await store.renewPlace('k', 'alive', 1_000), true);
    assert.equal(await store.acquirePlace('k', 'new', 2, 1_000), 'full');
    now += 200;
    assert.equal(await store.acquirePlace('k', 'new', 2, 1_000), 'acquired', 'the unrenewed place expired');
    assert.equal(await store.renewPlace('k', 'dead', 1_000), false);
    assert.equal(await store.acquirePlace('k', 'late', 2, 1_000), 'full', 'the renewed place is still held');
  });

  test('redis: the place of a holder that stopped renewing frees itself for every instance', async () => {
    const [one, two] = aRedisPair();
    const started = Date.now();
    assert.equal(await one.acquirePlace('k', 'dead', 1, 300), 'acquired');
    assert.equal(await two.acquirePlace('k', 'next', 1, 60_000), 'full');
    let outcome = 'full';
    while (outcome === 'full') {
      assert.ok(Date.now() - started < 5_000, 'the expired place came back');
      await new Promise((r) => setTimeout(r, 50));
      outcome = await two.acquirePlace('k', 'next', 1, 60_000);
    }
    assert.equal(outcome, 'acquired');
    assert.ok(Date.now() - started >= 250, 'not before its time');
    assert.equal(await one.renewPlace('k', 'dead', 300), false);
  });
});
