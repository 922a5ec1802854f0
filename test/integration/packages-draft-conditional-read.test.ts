// Reading a draft honours If-None-Match: 304 while the ETag the caller holds is still current.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { aPackageWorld, agentFiles, importArchive, zip } from './packages-harness.ts';

const w = await aPackageWorld();
after(() => w.app.close());
const base = '/api/packages/@acme/cached';
assert.equal((await importArchive(w, zip(agentFiles('@acme/cached', '1.0.0')))).status, 201);

test('a current ETag (strong, weak, in a list, or *) answers 304 with the ETag and no body', async () => {
  const first = await w.api.get(`${base}/draft`);
  assert.equal(first.status, 200);
  const etag = first.headers.get('etag')!;
  assert.match(etag, /^"[^"]+"$/);
  for (const value of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
    const again = await w.api.get(`${base}/draft`, { headers: { 'if-none-match': value } });
    assert.equal(again.status, 304, `If-None-Match: ${value}`);
    assert.equal(again.headers.get('etag'), etag);
    assert.equal(again.text, '');
  }
});

test('after a change the old ETag reads the new draft in full', async () => {
  const old = (await w.api.get(`${base}/draft`)).headers.get('etag')!;
  assert.equal((await w.api.put(`${base}/draft/files`, { path: 'notes.md', content: 'new' })).status, 200);
  const res = await w.api.get(`${base}/draft`, { headers: { 'if-none-match': old } });
  assert.equal(res.status, 200);
  assert.notEqual(res.headers.get('etag'), old);
  assert.ok(res.body.files.some((f: { path: string }) => f.path === 'notes.md'));
});
