// GET /api/connections is cursor-paged like the spec's other cursor lists: 20 by default (100 at
// most), oldest first, startingAfter / endingBefore naming the connection ids received, Link
// headers a client follows as they are; a caller with more than 500 connections sees them all.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, type BuiltOrg } from '../support/builders.ts';
import { call, linksOf, type WireResponse } from '../support/http.ts';

let app: TestApp;
let org: BuiltOrg;
let key: string;
/** the connections the owner sees, in creation order: its own and the one a member shares */
let visible: string[] = [];
let othersPrivate: string;
/** creation times one after the other, whatever the transactions' clocks */
let clock = Date.now();

/** `n` connections of `owner` to @acme/crm, created one after the other. */
async function connections(owner: string, n: number, shared = false): Promise<string[]> {
  const sealed = app.deps.secrets.seal(JSON.stringify({ api_key: 'sk-page' }));
  const { rows } = await app.deps.database.pool.query<{ id: string }>(
    `INSERT INTO integration_connections (org_id, space_id, integration_package_id, auth_key, owner_user_id, account_id, label, credentials, shared_with_org, created_at)
     SELECT $1, $2, '@acme/crm', 'key', $3, 'account-' || g, $5 || ' ' || g, $4, $6, $8::timestamptz + g * interval '1 millisecond'
       FROM generate_series(1, $7::int) g ORDER BY g RETURNING id`,
    [org.orgId, org.spaceId, owner, sealed, shared ? 'Shared' : 'Own', shared, n, new Date(clock += 1000)],
  );
  return rows.map((r) => r.id);
}

before(async () => {
  app = await startTestApp();
  const pool = app.deps.database.pool;
  org = await anOrg(pool);
  ({ key } = await aKey(pool, { ...org, userId: org.ownerId }));
  const member = await aMember(pool, org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'editor' });
  visible = await connections(org.ownerId, 520);
  [othersPrivate] = await connections(member, 1);
  visible.push(...(await connections(member, 1, true)));
});
after(() => app.close());

const get = (path: string) => call(app.url, 'GET', path, { key });
const idsOf = (res: WireResponse) => res.body.data.map((c: { id: string }) => c.id);


describe('GET /api/connections', () => {
  test('the first page holds the 20 oldest, with hasMore and a rel="next" link naming the last id', async () => {
    const first = await get('/api/connections');
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.object, 'list');
    assert.deepEqual(idsOf(first), visible.slice(0, 20));
    assert.equal(first.body.hasMore, true);
    const links = linksOf(first);
    assert.deepEqual(Object.keys(links), ['next']);
    assert.equal(new URL(links.next, app.url).searchParams.get('startingAfter'), visible[19]);
  });

  test('walking rel="next" with limit=100 gives every connection the caller sees once, past 500, and no one else\'s', async () => {
    const seen: string[] = [];
    let res = await get('/api/connections?limit=100');
    let pages = 1;
    for (;;) {
      assert.equal(res.status, 200, res.text);
      seen.push(...idsOf(res));
      const next = linksOf(res).next;
      if (!next) break;
      assert.equal(res.body.hasMore, true);
      res = await get(next);
      pages += 1;
    }
    assert.equal(pages, 6);
    assert.equal(res.body.hasMore, false);
    assert.equal(seen.length, 521);
    assert.deepEqual(seen, visible, 'oldest first, each once, the shared one included');
    assert.ok(!seen.includes(othersPrivate), "a member's private connection is not listed");
  });

  test('endingBefore gives the page before a cursor in list order; the filter by integration pages too', async () => {
    const back = await get(`/api/connections?limit=10&endingBefore=${visible[30]}`);
    assert.deepEqual(idsOf(back), visible.slice(20, 30));
    assert.ok(linksOf(back).next && linksOf(back).prev && linksOf(back).first);
    const filtered = await get('/api/connections?integration_package_id=@acme/crm&limit=5');
    assert.deepEqual(idsOf(filtered), visible.slice(0, 5));
    const none = await get('/api/connections?integration_package_id=@acme/other');
    assert.deepEqual(none.body.data, []);
    assert.equal(none.body.hasMore, false);
  });

  test('a cursor naming no connection of the caller is 400 invalid_request with its param', async () => {
    for (const [param, value] of [['startingAfter', 'not-an-id'], ['startingAfter', othersPrivate], ['endingBefore', '00000000-0000-4000-8000-000000000000']]) {
      const res = await get(`/api/connections?${param}=${value}`);
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.code, 'invalid_request');
      assert.equal(res.body.param, param);
    }
  });
});
