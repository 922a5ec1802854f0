// Service-Version: header, then the organization's pin, then the current version.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { anOrg, aKey } from '../support/builders.ts';
import { call } from '../support/http.ts';

let app: TestApp;
let key: string;
let orgId: string;

before(async () => {
  app = await startTestApp();
  const org = await anOrg(app.deps.database.pool);
  orgId = org.orgId;
  ({ key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId }));
});
after(() => app.close());

test('the current version is echoed on authenticated responses', async () => {
  const res = await call(app.url, 'GET', '/api/end-users', { key });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('service-version'), '2026-03-21');
});

test('a header that is not a date answers 400 invalid_api_version', async () => {
  for (const v of ['yesterday', '2026-3-21', '2026-02-30']) {
    const res = await call(app.url, 'GET', '/api/end-users', { key, headers: { 'service-version': v } });
    assert.equal(res.status, 400, v);
    assert.equal(res.body.code, 'invalid_api_version');
    assert.equal(res.body.param, 'Service-Version');
  }
});

test('a date the server does not serve answers 400 unsupported_api_version, never a silent fallback', async () => {
  const res = await call(app.url, 'GET', '/api/end-users', { key, headers: { 'service-version': '2025-01-01' } });
  assert.equal(res.status, 400);
  assert.equal(res.body.code, 'unsupported_api_version');
});

test("the organization's pin applies when no header is sent, and an unservable pin is refused", async () => {
  await app.deps.database.pool.query('UPDATE organizations SET api_version = $2 WHERE id = $1', [orgId, '2026-03-21']);
  app.deps.authCache.clear();
  const pinned = await call(app.url, 'GET', '/api/end-users', { key });
  assert.equal(pinned.headers.get('service-version'), '2026-03-21');
  await app.deps.database.pool.query('UPDATE organizations SET api_version = $2 WHERE id = $1', [orgId, '2024-01-01']);
  app.deps.authCache.clear();
  const bad = await call(app.url, 'GET', '/api/end-users', { key });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.code, 'unsupported_api_version');
  const headerWins = await call(app.url, 'GET', '/api/end-users', { key, headers: { 'service-version': '2026-03-21' } });
  assert.equal(headerWins.status, 200);
});
