// A mistyped API key (its checksum does not match) is refused before any database work, and says
// so in its detail; an unknown key with a valid checksum is looked up and refused as unknown. Both
// stay 401 unauthorized with a Bearer challenge on the wire.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { newApiKey } from '../../lib/api-key-format.ts';

let app: TestApp;
let key: string;
let queries = 0;

before(async () => {
  app = await startTestApp();
  const org = await anOrg(app.deps.database.pool);
  ({ key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId }));
  const pool = app.deps.database.pool;
  const query = pool.query.bind(pool);
  (pool as { query: unknown }).query = (...args: Parameters<typeof query>) => {
    queries++;
    return query(...args);
  };
});
after(() => app.close());

function flipLast(k: string): string {
  return k.slice(0, -1) + (k.endsWith('0') ? '1' : '0');
}

test('a key whose checksum does not match is refused as malformed without a database query', async () => {
  const before = queries;
  const res = await call(app.url, 'GET', '/api/spaces', { key: flipLast(key) });
  assert.equal(res.status, 401);
  assert.equal(res.body.code, 'unauthorized');
  assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
  assert.equal(res.body.detail, 'The API key is malformed.');
  assert.equal(queries, before, 'the database was asked about a key its checksum already refuses');
});

test('a well-formed unknown key is looked up, and refused as unknown', async () => {
  const before = queries;
  const res = await call(app.url, 'GET', '/api/spaces', { key: newApiKey().key });
  assert.equal(res.status, 401);
  assert.equal(res.body.code, 'unauthorized');
  assert.equal(res.body.detail, 'The API key is invalid, revoked or expired.');
  assert.ok(queries > before, 'an unknown key must be looked up');
});

test('the genuine key is accepted', async () => {
  const res = await call(app.url, 'GET', '/api/spaces', { key });
  assert.equal(res.status, 200, res.text);
});
