// The list envelope and cursor paging, on GET /api/end-users: pages of 20 by default (100 at
// most, out-of-range limits fall back to 20), startingAfter / endingBefore cursors that are
// resource ids, and Link headers (rel=next, prev, first) that a client follows as they are.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { call, linksOf, type WireResponse } from '../support/http.ts';

let app: TestApp;
let key: string;
/** the 45 end-users' ids in creation order */
const ids: string[] = [];

before(async () => {
  app = await startTestApp();
  const org = await anOrg(app.deps.database.pool);
  ({ key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId }));
  for (let i = 0; i < 45; i++) {
    const res = await call(app.url, 'POST', '/api/end-users', { key, body: { externalId: `page-${i}`, name: `User ${i}` } });
    assert.equal(res.status, 201);
    ids.push(res.body.id);
  }
});
after(() => app.close());

const get = (path: string) => call(app.url, 'GET', path, { key });
const idsOf = (res: WireResponse) => res.body.data.map((e: { id: string }) => e.id);

test('the envelope is {object: "list", data, hasMore}', async () => {
  const res = await get('/api/end-users');
  assert.equal(res.status, 200);
  assert.deepEqual(Object.keys(res.body).sort(), ['data', 'hasMore', 'object']);
  assert.equal(res.body.object, 'list');
  assert.ok(Array.isArray(res.body.data));
  assert.equal(res.body.data[0].object, 'end_user');
});

describe('walking the pages by their Link headers', () => {
  test('forward: 20, 20, then the last 5, with next, prev and first where they apply', async () => {
    const p1 = await get('/api/end-users');
    assert.deepEqual(idsOf(p1), ids.slice(0, 20));
    assert.equal(p1.body.hasMore, true);
    const l1 = linksOf(p1);
    assert.deepEqual(Object.keys(l1), ['next']);
    assert.equal(new URL(l1.next, app.url).searchParams.get('startingAfter'), ids[19], 'the cursor is the last id received');

    const p2 = await get(l1.next);
    assert.deepEqual(idsOf(p2), ids.slice(20, 40));
    assert.equal(p2.body.hasMore, true);
    const l2 = linksOf(p2);
    assert.deepEqual(Object.keys(l2).sort(), ['first', 'next', 'prev']);

    const p3 = await get(l2.next);
    assert.deepEqual(idsOf(p3), ids.slice(40));
    assert.equal(p3.body.hasMore, false);
    const l3 = linksOf(p3);
    assert.equal(l3.next, undefined);
    assert.ok(l3.prev && l3.first);

    assert.deepEqual(idsOf(await get(l3.first)), ids.slice(0, 20));
  });

  test('backward with endingBefore gives the same pages in list order', async () => {
    const back2 = await get(`/api/end-users?endingBefore=${ids[40]}`);
    assert.deepEqual(idsOf(back2), ids.slice(20, 40));
    assert.equal(back2.body.hasMore, true);
    const l2 = linksOf(back2);
    assert.ok(l2.next && l2.prev && l2.first);
    assert.deepEqual(idsOf(await get(l2.next)), ids.slice(40));

    const back1 = await get(l2.prev);
    assert.deepEqual(idsOf(back1), ids.slice(0, 20));
    const l1 = linksOf(back1);
    assert.equal(l1.prev, undefined, 'nothing precedes the first page');
    assert.deepEqual(idsOf(await get(l1.next)), ids.slice(20, 40));
  });

  test('a smaller page size is kept in the links', async () => {
    const res = await get('/api/end-users?limit=5');
    assert.deepEqual(idsOf(res), ids.slice(0, 5));
    const next = new URL(linksOf(res).next, app.url);
    assert.equal(next.searchParams.get('limit'), '5');
    assert.deepEqual(idsOf(await get(linksOf(res).next)), ids.slice(5, 10));
  });
});

describe('limit', () => {
  test('defaults to 20 and allows up to 100', async () => {
    assert.equal((await get('/api/end-users')).body.data.length, 20);
    const all = await get('/api/end-users?limit=100');
    assert.deepEqual(idsOf(all), ids);
    assert.equal(all.body.hasMore, false);
    assert.equal(all.headers.get('link'), null);
  });

  test('an out-of-range value falls back to the default', async () => {
    for (const limit of ['101', '0', '-5', '']) {
      const res = await get(`/api/end-users?limit=${limit}`);
      assert.equal(res.status, 200, limit);
      assert.equal(res.body.data.length, 20, `limit=${limit}`);
    }
  });

  test('a value that is not an integer is refused: invalid_request naming the parameter', async () => {
    for (const limit of ['abc', '1.5', '2x']) {
      const res = await get(`/api/end-users?limit=${limit}`);
      assert.equal(res.status, 400, limit);
      assert.equal(res.body.code, 'invalid_request');
      assert.equal(res.body.param, 'limit');
    }
  });
});
