// The organization's pinned API version is set and cleared through PATCH /api/orgs/{orgId}.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CURRENT_API_VERSION } from '../../api/middleware/api-version.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aMember, anOrg, aSession, type BuiltOrg } from '../support/builders.ts';
import { call } from '../support/http.ts';

let app: TestApp;
let org: BuiltOrg;
let owner: string;

before(async () => {
  app = await startTestApp();
  org = await anOrg(app.deps.database.pool);
  owner = (await aSession(app.deps.database.pool, org.ownerId)).cookie;
});
after(() => app.close());

const patch = (cookie: string, body: unknown) => call(app.url, 'PATCH', `/api/orgs/${org.orgId}`, { cookie, body });
const pinned = async () => (await call(app.url, 'GET', `/api/orgs/${org.orgId}`, { cookie: owner })).body.api_version;

test('an owner pins a served version and unpins it with null; the organization shows its pin', async () => {
  assert.equal(await pinned(), null);
  const set = await patch(owner, { api_version: CURRENT_API_VERSION });
  assert.equal(set.status, 200, set.text);
  assert.equal(set.body.api_version, CURRENT_API_VERSION);
  assert.equal(await pinned(), CURRENT_API_VERSION);
  const { rows } = await app.deps.database.pool.query('SELECT api_version FROM organizations WHERE id = $1', [org.orgId]);
  assert.equal(rows[0].api_version, CURRENT_API_VERSION);
  const renamed = await patch(owner, { name: 'Renamed' });
  assert.equal(renamed.body.api_version, CURRENT_API_VERSION, 'a rename leaves the pin');
  const cleared = await patch(owner, { api_version: null });
  assert.equal(cleared.status, 200);
  assert.equal(await pinned(), null);
});

test('a pin that is not a date, or that the instance does not serve, is refused and changes nothing', async () => {
  for (const [value, code] of [['yesterday', 'invalid_api_version'], ['2026-02-30', 'invalid_api_version'], ['2024-01-01', 'unsupported_api_version']]) {
    const res = await patch(owner, { api_version: value });
    assert.equal(res.status, 400, value);
    assert.equal(res.body.code, code, value);
    assert.equal(res.body.errors?.[0]?.field, 'api_version');
  }
  assert.equal(await pinned(), null);
});

test('a member cannot pin the version', async () => {
  const member = await aMember(app.deps.database.pool, org.orgId, 'member');
  const res = await patch((await aSession(app.deps.database.pool, member)).cookie, { api_version: CURRENT_API_VERSION });
  assert.equal(res.status, 403);
  assert.equal(await pinned(), null);
});
