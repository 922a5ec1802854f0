import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { aPackageWorld, agentFiles, download, importArchive, zip } from './packages-harness.ts';
import { readZip } from '../../lib/zip/index.ts';

const w = await aPackageWorld({ env: { PACKAGE_EDIT_MAX_FILE_BYTES: '1024', PACKAGE_EDIT_MAX_TREE_BYTES: '4096' } });
after(() => w.app.close());
const base = '/api/packages/@acme/editor';
assert.equal((await importArchive(w, zip({ ...agentFiles('@acme/editor', '1.0.0'), 'docs/a.md': 'A' }))).status, 201);

const expectProblem = (res: { status: number; body: any; text: string }, status: number, code: string) => {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.code, code);
};

test('files are written, moved and removed; the draft records what changed', async () => {
  const put = await w.api.put(`${base}/draft/files`, { path: 'docs/b.md', content: 'B' });
  assert.equal(put.status, 200, put.text);
  assert.equal(put.body.has_unarchived_changes, true);
  assert.match(put.headers.get('etag')!, /^"[^"]+"$/);
  const bin = await w.api.put(`${base}/draft/files`, { path: 'assets/x.bin', content: Buffer.from([9, 8, 7]).toString('base64'), encoding: 'base64' });
  assert.equal(bin.status, 200);
  const moved = await w.api.post(`${base}/draft/move`, { from: 'docs', to: 'guide' });
  assert.equal(moved.status, 200, moved.text);
  assert.deepEqual(moved.body.files.map((f: any) => f.path), ['assets/x.bin', 'guide/a.md', 'guide/b.md', 'manifest.json', 'prompt.md']);
  const removed = await w.api.delete(`${base}/draft/files?path=guide/b.md`);
  assert.equal(removed.status, 200);
  assert.ok(!removed.body.files.some((f: any) => f.path === 'guide/b.md'));
  const content = await download(w.app.url, `${base}/files/content?path=assets/x.bin`, { key: w.key });
  assert.deepEqual([...content.bytes], [9, 8, 7]);
});

test('unusable paths, the manifest entry and the prompt are guarded', async () => {
  expectProblem(await w.api.put(`${base}/draft/files`, { path: '../escape.md', content: 'x' }), 400, 'invalid_path');
  expectProblem(await w.api.put(`${base}/draft/files`, { path: '/abs.md', content: 'x' }), 400, 'invalid_path');
  expectProblem(await w.api.put(`${base}/draft/files`, { path: 'manifest.json', content: '{}' }), 400, 'reserved_entry');
  expectProblem(await w.api.delete(`${base}/draft/files?path=manifest.json`), 400, 'reserved_entry');
  expectProblem(await w.api.delete(`${base}/draft/files?path=prompt.md`), 400, 'content_entry_immovable');
  expectProblem(await w.api.put(`${base}/draft/files`, { path: 'prompt.md', content: '  \n' }), 400, 'content_entry_immovable');
  expectProblem(await w.api.post(`${base}/draft/move`, { from: 'prompt.md', to: 'old-prompt.md' }), 400, 'content_entry_immovable');
  expectProblem(await w.api.post(`${base}/draft/move`, { from: 'guide/a.md', to: 'prompt.md' }), 400, 'path_conflict');
  expectProblem(await w.api.put(`${base}/draft/files`, { path: 'guide', content: 'x' }), 400, 'path_conflict');
  expectProblem(await w.api.put(`${base}/draft/files`, { path: 'guide/a.md/deeper.md', content: 'x' }), 400, 'path_conflict');
  expectProblem(await w.api.delete(`${base}/draft/files?path=nope.md`), 404, 'not_found');
});

test('a file over the edit limit is 413 file_too_large; a tree over its limit is 413 tree_too_large', async () => {
  expectProblem(await w.api.put(`${base}/draft/files`, { path: 'big.txt', content: 'x'.repeat(1025) }), 413, 'file_too_large');
  for (let i = 0; i < 3; i++) assert.equal((await w.api.put(`${base}/draft/files`, { path: `fill-${i}.txt`, content: 'y'.repeat(1000) })).status, 200);
  expectProblem(await w.api.put(`${base}/draft/files`, { path: 'fill-3.txt', content: 'y'.repeat(1000) }), 413, 'tree_too_large');
  for (let i = 0; i < 3; i++) assert.equal((await w.api.delete(`${base}/draft/files?path=fill-${i}.txt`)).status, 200);
});

test('a write while another holds the draft is 409 conflict', async () => {
  const client = await w.app.deps.database.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT 1 FROM packages WHERE id = '@acme/editor' FOR UPDATE`);
    expectProblem(await w.api.put(`${base}/draft/files`, { path: 'docs/c.md', content: 'C' }), 409, 'conflict');
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
  assert.equal((await w.api.put(`${base}/draft/files`, { path: 'docs/c.md', content: 'C' })).status, 200);
});

test('saving the draft requires If-Match: 428 when missing, 412 with the current ETag when stale', async () => {
  const current = await w.api.get(`${base}/draft`);
  const etag = current.headers.get('etag')!;
  assert.equal(current.body.etag, etag);
  const manifest = { ...current.body.manifest, description: 'Edited' };

  const missing = await w.api.put(`${base}/draft`, { manifest });
  expectProblem(missing, 428, 'precondition_required');

  const stale = await w.api.put(`${base}/draft`, { manifest }, { headers: { 'if-match': '"not-the-etag"' } });
  expectProblem(stale, 412, 'precondition_failed');
  assert.equal(stale.headers.get('etag'), etag);

  const saved = await w.api.put(`${base}/draft`, { manifest }, { headers: { 'if-match': etag } });
  assert.equal(saved.status, 200, saved.text);
  assert.notEqual(saved.headers.get('etag'), etag);
  assert.equal(saved.body.manifest.description, 'Edited');

  const replay = await w.api.put(`${base}/draft`, { manifest }, { headers: { 'if-match': etag } });
  expectProblem(replay, 412, 'precondition_failed');
  assert.equal(replay.headers.get('etag'), saved.headers.get('etag'));

  // a stale If-Match on a file edit is refused too, and changes nothing
  const fileStale = await w.api.put(`${base}/draft/files`, { path: 'docs/d.md', content: 'D' }, { headers: { 'if-match': etag } });
  expectProblem(fileStale, 412, 'precondition_failed');
});

test('a draft manifest that is invalid, or names another package, is invalid_draft_manifest', async () => {
  const etag = (await w.api.get(`${base}/draft`)).headers.get('etag')!;
  const current = (await w.api.get(`${base}/draft`)).body.manifest;
  const badVersion = await w.api.put(`${base}/draft`, { manifest: { ...current, version: 'soon' } }, { headers: { 'if-match': etag } });
  expectProblem(badVersion, 400, 'invalid_draft_manifest');
  assert.equal(badVersion.body.errors[0].field, 'manifest.version');
  expectProblem(await w.api.put(`${base}/draft`, { manifest: { ...current, name: '@acme/other' } }, { headers: { 'if-match': etag } }), 400, 'invalid_draft_manifest');
  expectProblem(await w.api.put(`${base}/draft`, { manifest: { ...current, type: 'skill' } }, { headers: { 'if-match': etag } }), 400, 'invalid_draft_manifest');
});

test('saving with files replaces the tree; the prompt cannot be left out', async () => {
  const draft = await w.api.get(`${base}/draft`);
  const etag = draft.headers.get('etag')!;
  expectProblem(await w.api.put(`${base}/draft`, { manifest: draft.body.manifest, files: { 'notes.md': 'n' } }, { headers: { 'if-match': etag } }), 400, 'content_entry_immovable');
  const saved = await w.api.put(`${base}/draft`, { manifest: draft.body.manifest, files: { 'prompt.md': 'Rewritten prompt.', 'notes.md': 'n' } }, { headers: { 'if-match': etag } });
  assert.equal(saved.status, 200, saved.text);
  assert.deepEqual(saved.body.files.map((f: any) => f.path), ['manifest.json', 'notes.md', 'prompt.md']);
});

test('publishing the draft makes a new version; publishing it again is no_changes', async () => {
  const published = await w.api.post(`${base}/publish`, {});
  assert.equal(published.status, 201, published.text);
  assert.equal(published.body.version, '1.0.1', 'the next patch, since 1.0.0 is taken');
  const again = await w.api.post(`${base}/publish`, {});
  expectProblem(again, 409, 'no_changes');
  const lower = await w.api.post(`${base}/publish`, { version: '0.1.0' });
  expectProblem(lower, 409, 'no_changes');

  const archive = await download(w.app.url, `${base}/1.0.1/download`, { key: w.key });
  const files = await readZip(archive.bytes, { maxEntries: 100, maxEntryBytes: 1 << 20, maxTotalBytes: 1 << 22 });
  assert.equal(files.get('prompt.md')!.toString(), 'Rewritten prompt.');
  assert.equal(JSON.parse(files.get('manifest.json')!.toString()).version, '1.0.1');

  await w.api.put(`${base}/draft/files`, { path: 'notes.md', content: 'more' });
  expectProblem(await w.api.post(`${base}/publish`, { version: '1.0.0' }), 409, 'version_exists');
  expectProblem(await w.api.post(`${base}/publish`, { version: '0.5.0' }), 409, 'version_not_higher');
  const explicit = await w.api.post(`${base}/publish`, { version: '2.0.0' });
  assert.equal(explicit.status, 201);
  const record = await w.api.get(base);
  assert.equal(record.body.latest_version, '2.0.0');
  assert.equal(record.body.draft.has_unarchived_changes, false);
  assert.equal(record.body.draft.base_version, '2.0.0');
});
