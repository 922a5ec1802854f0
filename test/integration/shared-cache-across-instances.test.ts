// Two API instances over one database and one Redis: an Idempotency-Key used at one replays at
// the other, and a rate-limit bucket filled at one is full at the other.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { call } from '../support/http.ts';

let a: TestApp;
let b: TestApp;
let org: Awaited<ReturnType<typeof anOrg>>;

before(async () => {
  const cachePrefix = `t:shared:${randomBytes(4).toString('hex')}:`;
  a = await startTestApp({ redis: true, cachePrefix });
  b = await startTestApp({ redis: true, cachePrefix, databaseUrl: a.deps.database.url });
  org = await anOrg(a.deps.database.pool);
});
after(async () => {
  await b.close();
  await a.close();
});

test('a key used at instance A replays at instance B without running again', async () => {
  const { key } = await aKey(a.deps.database.pool, { ...org, userId: org.ownerId });
  const idem = randomUUID();
  const body = { externalId: `across-${idem}`, name: 'Ada' };
  const headers = { 'idempotency-key': idem };
  const atA = await call(a.url, 'POST', '/api/end-users', { key, body, headers });
  assert.equal(atA.status, 201);
  const atB = await call(b.url, 'POST', '/api/end-users', { key, body, headers });
  assert.equal(atB.status, 201);
  assert.equal(atB.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(atB.body, atA.body);
  const conflict = await call(b.url, 'POST', '/api/end-users', { key, body: { ...body, name: 'Other' }, headers });
  assert.equal(conflict.status, 422);
  assert.equal(conflict.body.code, 'idempotency_conflict');
  const { rows } = await a.deps.database.pool.query('SELECT count(*)::int AS n FROM end_users WHERE external_id = $1', [body.externalId]);
  assert.equal(rows[0].n, 1);
});

test('one rate-limit bucket spans both instances: 30 writes at each, the 61st is refused at either', async () => {
  const { key } = await aKey(a.deps.database.pool, { ...org, userId: org.ownerId });
  const tag = randomUUID();
  for (let i = 0; i < 60; i++) {
    const at = i % 2 === 0 ? a : b;
    const res = await call(at.url, 'POST', '/api/end-users', { key, body: { externalId: `${tag}-${i}`, name: 'N' } });
    assert.equal(res.status, 201, res.text);
    assert.match(res.headers.get('ratelimit')!, new RegExp(`^limit=60, remaining=${59 - i}, reset=\\d+$`));
  }
  for (const at of [a, b]) {
    const res = await call(at.url, 'POST', '/api/end-users', { key, body: { externalId: `${tag}-over`, name: 'N' } });
    assert.equal(res.status, 429);
    assert.equal(res.body.code, 'rate_limited');
    assert.match(res.headers.get('ratelimit')!, /^limit=60, remaining=0, reset=\d+$/);
  }
});
