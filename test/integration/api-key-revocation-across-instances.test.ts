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
