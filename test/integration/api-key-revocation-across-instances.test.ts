// Two API instances over one database, each caching resolved credentials: a key revoked through
// one stops working on the other as soon as the NOTIFY auth_changed arrives there.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createApp } from '../../api/app.ts';
import type { AppDeps } from '../../api/deps.ts';
import { createLifecycle } from '../../api/lifecycle.ts';
import { allRoutes } from '../../api/routes/index.ts';
import { createAuthCache } from '../../api/services/auth-cache.ts';
import { connectDatabase } from '../../db/client.ts';
import { createMemoryStore } from '../../lib/cache/memory.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { anOrg, aSession } from '../support/builders.ts';
import { client } from '../support/http.ts';

let first: TestApp;
let second: { url: string; close(): Promise<void> };

/** Another instance of the API on the first one's database, with its own credential cache. */
async function anotherInstance(of: TestApp) {
  const database = connectDatabase(of.deps.database.url, { max: 5 });
  const authCache = await createAuthCache(database.url, of.deps.log);
  const lifecycle = createLifecycle(of.deps.config.SHUTDOWN_DRAIN_SECONDS);
  const deps: AppDeps = { ...of.deps, database, authCache, lifecycle, cache: createMemoryStore() };
  const { app } = createApp(deps, { routes: allRoutes(), modules: [], log: of.deps.log, version: 'test' });
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  lifecycle.ready = true;
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await authCache.close();
      await database.close();
    },
  };
}

before(async () => {
  first = await startTestApp();
  second = await anotherInstance(first);
});
after(async () => {
  await second.close();
  await first.close();
});

async function statusWithin(url: string, key: string, expected: number, ms: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const res = await client(url).get('/api/spaces', { key });
    if (res.status === expected || Date.now() - started > ms) return res.status;
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('a key revoked on one instance is refused by the other', async () => {
  const pool = first.deps.database.pool;
  const org = await anOrg(pool);
  const ctx = { cookie: (await aSession(pool, org.ownerId)).cookie, org: org.orgId, space: org.spaceId };
  const made = await client(first.url).post('/api/api-keys', { name: 'shared', scopes: ['spaces:read'] }, ctx);
  // The second instance resolves the key once and caches it.
  assert.equal((await client(second.url).get('/api/spaces', { key: made.body.key })).status, 200);
  assert.equal((await client(second.url).get('/api/spaces', { key: made.body.key })).status, 200);

  assert.equal((await client(first.url).delete(`/api/api-keys/${made.body.id}`, ctx)).status, 204);
  assert.equal(await statusWithin(second.url, made.body.key, 401, 1000), 401);
});

test('the cached space list follows a space created and renamed on the other instance', async () => {
  const pool = first.deps.database.pool;
  const org = await anOrg(pool);
  const ctx = { cookie: (await aSession(pool, org.ownerId)).cookie, org: org.orgId, space: org.spaceId };
  const names = async () => ((await client(second.url).get('/api/spaces', ctx)).body.data as Array<{ name: string }>).map((s) => s.name).sort();
  const before = await names();
  assert.deepEqual(await names(), before, 'served again (now from the cache)');
  const made = await client(first.url).post('/api/spaces', { name: 'Fresh' }, ctx);
  assert.equal(made.status, 201, made.text);
  const seen = async (want: string[]) => {
    const started = Date.now();
    while (Date.now() - started < 1000 && JSON.stringify(await names()) !== JSON.stringify(want)) await new Promise((r) => setTimeout(r, 10));
    return names();
  };
  assert.deepEqual(await seen([...before, 'Fresh'].sort()), [...before, 'Fresh'].sort());
  assert.equal((await client(first.url).patch(`/api/spaces/${made.body.id}`, { name: 'Renamed' }, ctx)).status, 200);
  assert.deepEqual(await seen([...before, 'Renamed'].sort()), [...before, 'Renamed'].sort());
});

test('a value loaded while an identity change cleared the cache is not kept', async () => {
  const cache = await createAuthCache(first.deps.database.url, first.deps.log);
  try {
    let loads = 0;
    const stale = await cache.through('k:x', async () => {
      loads++;
      cache.clear(); // a change committed while this read was in flight
      return 'read before the change';
    });
    assert.equal(stale, 'read before the change');
    assert.equal(await cache.through('k:x', async () => (loads++, 'read after the change')), 'read after the change');
    assert.equal(await cache.through('k:x', async () => (loads++, 'not loaded again')), 'read after the change');
    assert.equal(loads, 2);
  } finally {
    await cache.close();
  }
});
