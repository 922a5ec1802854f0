// Dist-tags other than latest are set and removed through the API and resolve like versions.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { aKey, aMember } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { aPackageWorld, agentFiles, download, importArchive, zip } from './packages-harness.ts';

const w = await aPackageWorld();
after(() => w.app.close());
const base = '/api/packages/@acme/tagged';
for (const v of ['1.0.0', '1.1.0']) assert.equal((await importArchive(w, zip(agentFiles('@acme/tagged', v)))).status, 201);
const tagPath = (tag: string) => `${base}/dist-tags/${encodeURIComponent(tag)}`;

test('a tag set on a version resolves to it, outlives a new release, and is removed', async () => {
  const set = await w.api.put(tagPath('beta'), { version: '1.0.0' });
  assert.equal(set.status, 200, set.text);
  assert.deepEqual(set.body, { packageId: '@acme/tagged', dist_tags: { latest: '1.1.0', beta: '1.0.0' } });
  const byTag = await download(w.app.url, `${base}/beta/download`, { key: w.key });
  assert.equal(byTag.status, 200);
  assert.equal(byTag.headers.get('x-package-version'), '1.0.0');

  assert.equal((await importArchive(w, zip(agentFiles('@acme/tagged', '1.2.0')))).status, 201);
  const versions = await w.api.get(`${base}/versions`);
  assert.deepEqual(versions.body.dist_tags, { latest: '1.2.0', beta: '1.0.0' });

  const moved = await w.api.put(tagPath('beta'), { version: '1.2.0' });
  assert.equal(moved.body.dist_tags.beta, '1.2.0');
  const removed = await w.api.delete(tagPath('beta'));
  assert.equal(removed.status, 200, removed.text);
  assert.deepEqual(removed.body.dist_tags, { latest: '1.2.0' });
  const again = await w.api.delete(tagPath('beta'));
  assert.equal(again.status, 404);
  assert.equal(again.body.code, 'not_found');
});

test('latest, and tags that read as a version or a range, are refused', async () => {
  for (const tag of ['latest', '1.0.0', '^1.0.0', 'x', 'Beta']) {
    const res = await w.api.put(tagPath(tag), { version: '1.0.0' });
    assert.equal(res.status, 400, tag);
    assert.equal(res.body.code, 'invalid_request', tag);
  }
  const dropLatest = await w.api.delete(tagPath('latest'));
  assert.equal(dropLatest.status, 400);
  assert.equal((await w.api.get(`${base}/versions`)).body.dist_tags.latest, '1.2.0');
});

test('a missing version is 404 version_not_found, a yanked one 410 version_yanked', async () => {
  const missing = await w.api.put(tagPath('next'), { version: '9.9.9' });
  assert.equal(missing.status, 404);
  assert.equal(missing.body.code, 'version_not_found');
  assert.equal((await w.api.post(`${base}/versions/1.1.0/yank`)).status, 200);
  const yanked = await w.api.put(tagPath('next'), { version: '1.1.0' });
  assert.equal(yanked.status, 410);
  assert.equal(yanked.body.code, 'version_yanked');
  assert.equal((await w.api.get(`${base}/versions`)).body.dist_tags.next, undefined);
});

test('a viewer of the home space cannot set or remove a tag', async () => {
  const pool = w.app.deps.database.pool;
  const viewer = await aMember(pool, w.org.orgId, 'member', { spaceId: w.org.spaceId, roleKey: 'viewer' });
  const { key } = await aKey(pool, { orgId: w.org.orgId, spaceId: w.org.spaceId, userId: viewer });
  const res = await call(w.app.url, 'PUT', tagPath('rc'), { key, body: { version: '1.0.0' } });
  assert.equal(res.status, 403);
  assert.equal(res.body.code, 'forbidden');
  assert.equal((await w.api.get(`${base}/versions`)).body.dist_tags.rc, undefined);
});
