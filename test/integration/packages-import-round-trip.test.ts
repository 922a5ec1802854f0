import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { treeIntegrity } from '../../lib/afps/index.ts';
import { aPackageWorld, agentFiles, download, importArchive, storedZip, upload } from './packages-harness.ts';

const w = await aPackageWorld();
after(() => w.app.close());

test('an imported archive is listed, its files read, and downloaded byte for byte', async () => {
  const files = { ...agentFiles('@acme/round-trip', '1.0.0', { display_name: 'Round trip' }), 'docs/notes.txt': 'some notes\n', 'bin/data.bin': Buffer.from([0, 1, 2, 255]) };
  const archive = storedZip(files);

  const imported = await importArchive(w, archive);
  assert.equal(imported.status, 201, imported.text);
  assert.equal(imported.body.packageId, '@acme/round-trip');
  assert.equal(imported.body.type, 'agent');
  assert.equal(imported.body.version, '1.0.0');
  const tree = new Map(Object.entries(files).map(([path, v]) => [path, Buffer.isBuffer(v) ? v : Buffer.from(v)]));
  assert.equal(imported.body.integrity, treeIntegrity(tree), 'the integrity is the tree integrity of the files');

  const list = await w.api.get('/api/packages');
  assert.equal(list.status, 200);
  assert.equal(list.body.object, 'list');
  assert.deepEqual(list.body.data.map((p: any) => [p.packageId, p.type, p.latest_version, p.placement, p.display_name]), [['@acme/round-trip', 'agent', '1.0.0', 'home', 'Round trip']]);
  assert.equal(list.body.total, 1);

  const record = await w.api.get('/api/packages/@acme/round-trip');
  assert.equal(record.status, 200);
  assert.equal(record.body.home_space_id, w.org.spaceId);
  assert.deepEqual(record.body.dist_tags, { latest: '1.0.0' });
  assert.deepEqual(record.body.versions.map((v: any) => v.version), ['1.0.0']);

  const listed = await w.api.get('/api/packages/@acme/round-trip/files?version=1.0.0');
  assert.equal(listed.status, 200);
  assert.deepEqual(listed.body.data.map((f: any) => f.path).sort(), ['bin/data.bin', 'docs/notes.txt', 'manifest.json', 'prompt.md']);
  const bin = listed.body.data.find((f: any) => f.path === 'bin/data.bin');
  assert.equal(bin.size, 4);
  assert.equal(bin.sha256, createHash('sha256').update(Buffer.from([0, 1, 2, 255])).digest('hex'));
  assert.ok(listed.headers.get('ratelimit-policy')?.startsWith('50;'));

  const draftFiles = await w.api.get('/api/packages/@acme/round-trip/files');
  assert.deepEqual(draftFiles.body.data, listed.body.data, 'the draft starts as the imported version');

  const content = await download(w.app.url, '/api/packages/@acme/round-trip/files/content?path=bin/data.bin&version=latest', { key: w.key });
  assert.equal(content.status, 200);
  assert.deepEqual([...content.bytes], [0, 1, 2, 255]);
  const prompt = await w.api.get('/api/packages/@acme/round-trip/files/content?path=prompt.md');
  assert.equal(prompt.text, 'Answer the question.');

  for (const spec of ['1.0.0', 'latest', '^1.0.0']) {
    const got = await download(w.app.url, `/api/packages/@acme/round-trip/${encodeURIComponent(spec)}/download`, { key: w.key });
    assert.equal(got.status, 200, spec);
    assert.equal(got.headers.get('content-type'), 'application/zip');
    assert.ok(got.bytes.equals(archive), `download of ${spec} is the uploaded archive byte for byte`);
  }
});

test('reading a file that is not there is 404; a version that does not exist is 404 version_not_found', async () => {
  const missing = await w.api.get('/api/packages/@acme/round-trip/files/content?path=nope.txt');
  assert.equal(missing.status, 404);
  assert.equal(missing.body.code, 'not_found');
  const noVersion = await w.api.get('/api/packages/@acme/round-trip/9.9.9/download');
  assert.equal(noVersion.status, 404);
  assert.equal(noVersion.body.code, 'version_not_found');
  const noPackage = await w.api.get('/api/packages/@acme/none');
  assert.equal(noPackage.status, 404);
  assert.equal(noPackage.body.code, 'package_not_found');
});

test('importing the identical archive again answers 200 with the same version; a new version becomes latest', async () => {
  const again = await importArchive(w, storedZip({ ...agentFiles('@acme/idem', '1.0.0') }));
  assert.equal(again.status, 201);
  const same = await importArchive(w, storedZip({ ...agentFiles('@acme/idem', '1.0.0') }));
  assert.equal(same.status, 200);
  assert.deepEqual(same.body, again.body);
  const next = await importArchive(w, storedZip({ ...agentFiles('@acme/idem', '1.1.0', {}, 'A better prompt.') }));
  assert.equal(next.status, 201);
  const record = await w.api.get('/api/packages/@acme/idem');
  assert.deepEqual(record.body.dist_tags, { latest: '1.1.0' });
});

test('the import form must carry the archive in the field "file"; a body over the limit is 413', async () => {
  const form = new FormData();
  form.append('other', new Blob([Buffer.from('x')]), 'x.afps');
  const res = await fetch(`${w.app.url}/api/packages/import`, { method: 'POST', headers: { authorization: `Bearer ${w.key}` }, body: form });
  assert.equal(res.status, 400);
  assert.equal(((await res.json()) as { param: string }).param, 'file');

  const big = await upload(w.app.url, '/api/packages/import', Buffer.alloc(11 * 1024 * 1024), { key: w.key });
  assert.equal(big.status, 413);
  assert.equal(big.body.code, 'payload_too_large');
});
