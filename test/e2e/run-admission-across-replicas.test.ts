// 60 simultaneous launches in one organization with max_concurrent_per_org=50, spread over two
// platform processes sharing one database and over enough API keys that the per-caller route
// limit (20/min) is not what refuses them: exactly 50 are admitted, 10 get 429.
// Both processes serve the API only and their engine is unreachable, so admitted runs stay
// pending and keep counting against the cap for the whole test.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { client } from '../support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importFixture } from '../support/runs.ts';

const API_ONLY = {
  ROLE: 'api',
  RESTATE_INGRESS_URL: 'http://127.0.0.1:9',
  RESTATE_ADMIN_URL: 'http://127.0.0.1:9',
  PLATFORM_RUN_LIMITS: '{"max_concurrent_per_org": 50}',
  // Replicas share the instance key, or one cannot open what another sealed.
  ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
};

let db: TestDatabase;
let a: PlatformProcess;
let b: PlatformProcess;
let fake: Awaited<ReturnType<typeof startFakeModel>>;

before(async () => {
  fake = await startFakeModel();
  db = await freshDatabase();
  // Their engine is unreachable on purpose, so readiness says 503: wait for them to serve instead.
  const env = { ...API_ONLY, EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host };
  [a, b] = await Promise.all([startPlatformProcess({ db, env, waitFor: 'serving' }), startPlatformProcess({ db, env, waitFor: 'serving' })]);
});
after(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await db?.drop();
  await fake?.close();
});

test('exactly max_concurrent_per_org launches are admitted across two replicas', async () => {
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  try {
    const org = await anOrg(pool);
    const keys: string[] = [];
    for (let i = 0; i < 6; i++) keys.push((await aKey(pool, { ...org, userId: org.ownerId })).key);
    await importFixture(a.url, keys[0], 'agent-echo');
    await aDefaultModel(a.url, keys[0], fake.url);

    const launches = Array.from({ length: 60 }, (_, i) => {
      const base = i % 2 === 0 ? a.url : b.url;
      return client(base, { key: keys[i % keys.length] }).post('/api/agents/@fixtures/agent-echo/run', { input: { message: `launch ${i}` } });
    });
    const results = await Promise.all(launches);
    const byStatus = new Map<number, number>();
    for (const r of results) byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
    assert.equal(byStatus.get(201), 50, JSON.stringify([...byStatus]));
    assert.equal(byStatus.get(429), 10);
    for (const r of results.filter((x) => x.status === 429)) assert.equal(r.body.code, 'org_run_concurrency_exceeded');
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM runs WHERE org_id = $1 AND status IN ('pending', 'running')`, [org.orgId]);
    assert.equal(rows[0].n, 50);
  } finally {
    await pool.end();
  }
});
