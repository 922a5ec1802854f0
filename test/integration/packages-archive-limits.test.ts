import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import zlib from 'node:zlib';
import { encodeZip, type RawZipEntry } from '../../lib/zip/index.ts';
import { client } from '../support/http.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { startAppProcess } from './packages-app-process.ts';
import { aPackageWorld, agentFiles, importArchive, manifest, storedZip, upload } from './packages-harness.ts';

const w = await aPackageWorld();
after(() => w.app.close());

const GIB = 1024 ** 3;

/** Raw deflate of `bytes` zeros, built from one repeated sync-flushed segment (no 1 GiB buffer is ever made). */
function deflatedZeros(bytes: number): Buffer {
  const piece = 8 * 1024 * 1024;
  const segment = zlib.deflateRawSync(Buffer.alloc(piece), { level: 9, finishFlush: zlib.constants.Z_SYNC_FLUSH });
  const parts = new Array<Buffer>(bytes / piece).fill(segment);
  return Buffer.concat([...parts, Buffer.from([0x03, 0x00])]); // a final empty fixed block ends the stream
}

function bomb(declaredSize: number): Buffer {
  const data = deflatedZeros(GIB);
  const entries: RawZipEntry[] = [{ name: 'manifest.json', method: 0, data: Buffer.from(manifest('@acme/bomb', '1.0.0', 'skill')), crc32: 0, uncompressedSize: 0 }];
  entries[0].crc32 = zlib.crc32(entries[0].data);
  entries[0].uncompressedSize = entries[0].data.length;
  for (let i = 0; i < 10; i++) entries.push({ name: `zeros-${i}.bin`, method: 8, data, crc32: 0, uncompressedSize: declaredSize });
  return encodeZip(entries);
}

test('an archive of about 10 MB expanding to 10 GiB is refused with 422, and the platform process grows by less than 96 MB', async (t) => {
  // the platform in its own process: its memory is measured without this test's buffers
  const platform = await startAppProcess({ API_BODY_LIMIT_BYTES: String(16 * 1024 * 1024) });
  t.after(() => platform.close());
  const pool = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
  const org = await anOrg(pool);
  const { key } = await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId });
  await pool.end();
  const before = await platform.rss();

  const honest = bomb(GIB);
  assert.ok(honest.length < 12 * 1024 * 1024, `the bomb is small (${honest.length} bytes)`);
  const refused = await upload(platform.url, '/api/packages/import', honest, { key });
  assert.equal(refused.status, 422, refused.text);
  assert.equal(refused.body.code, 'package_archive_unreadable');

  // The same data declaring 1 KB per entry: inflating stops one byte past the declaration.
  const refusedToo = await upload(platform.url, '/api/packages/import', bomb(1000), { key });
  assert.equal(refusedToo.status, 422, refusedToo.text);
  assert.equal(refusedToo.body.code, 'package_archive_unreadable');

  const after = await platform.rss();
  const mb = (n: number) => Math.round(n / 1024 / 1024);
  t.diagnostic(`platform RSS ${mb(before)} MB before, ${mb(after)} MB after`);
  // growth, not a total: the idle platform's size changes with the modules it loads
  assert.ok(after - before < 96 * 1024 * 1024, `platform RSS grew ${mb(after - before)} MB over the bombs (${mb(before)} → ${mb(after)} MB)`);
  const listed = await client(platform.url, { key }).get('/api/packages');
  assert.equal(listed.body.total, 0, 'nothing was stored');
});

test('an archive entry that would escape the package folder (zip-slip) is refused', async () => {
  for (const evil of ['../evil.sh', 'skills/../../evil.sh', '/etc/cron.d/evil', 'C:/evil.bat', 'a\\..\\evil']) {
    const res = await importArchive(w, storedZip({ ...agentFiles('@acme/slip', '1.0.0'), [evil]: 'echo pwned' }));
    assert.equal(res.status, 400, `${evil}: ${res.text}`);
    assert.equal(res.body.code, 'invalid_path', evil);
  }
});

test('archives that are not packages are refused with the import codes', async () => {
  const cases: Array<[Buffer, number, string]> = [
    [Buffer.from('not a zip at all'), 422, 'package_archive_unreadable'],
    [storedZip({ 'prompt.md': 'hi' }), 400, 'missing_manifest'],
    [storedZip({ 'manifest.json': '{"name": "@acme/x"' }), 400, 'invalid_manifest'],
    [storedZip({ 'manifest.json': manifest('@acme/x', 'one', 'agent'), 'prompt.md': 'hi' }), 400, 'invalid_manifest'],
    [storedZip({ 'manifest.json': manifest('@acme/x', '1.0.0', 'agent') }), 400, 'missing_content'],
    [storedZip({ 'manifest.json': manifest('@acme/x', '1.0.0', 'agent'), 'prompt.md': '   ' }), 400, 'missing_content'],
    [storedZip({ 'manifest.json': manifest('@acme/x', '1.0.0', 'skill'), 'SKILL.md': 'no frontmatter' }), 400, 'invalid_content'],
  ];
  for (const [bytes, status, code] of cases) {
    const res = await importArchive(w, bytes);
    assert.equal(res.status, status, `${code}: ${res.text}`);
    assert.equal(res.body.code, code);
  }
});

test('an MCP server must come as a multipart archive (415 archive_required); other types may come as JSON', async () => {
  const api = client(w.app.url, { key: await w.freshKey() });
  const mcp = await api.post('/api/packages/import', {
    manifest: { name: '@acme/server', version: '1.0.0', type: 'mcp-server', server: { command: ['node', 'index.js'] } },
    files: { 'index.js': 'console.log(1)' },
  });
  assert.equal(mcp.status, 415);
  assert.equal(mcp.body.code, 'archive_required');

  const raw = await api.post('/api/packages/import', undefined, { rawBody: 'PK...', headers: { 'content-type': 'application/octet-stream' } });
  assert.equal(raw.status, 415);
  assert.equal(raw.body.code, 'archive_required');

  const skill = await api.post('/api/packages/import', {
    manifest: { name: '@acme/json-skill', version: '1.0.0', type: 'skill' },
    files: { 'SKILL.md': '---\nname: json-skill\ndescription: Imported as JSON.\n---\nBody', 'assets/logo.bin': { content: Buffer.from([1, 2, 3]).toString('base64'), encoding: 'base64' } },
  });
  assert.equal(skill.status, 201, skill.text);
  const files = await w.api.get('/api/packages/@acme/json-skill/files');
  assert.deepEqual(files.body.data.map((f: any) => f.path), ['SKILL.md', 'assets/logo.bin', 'manifest.json']);
  assert.equal(files.body.data[1].size, 3);
});
