// Archive inflation through HTTP: the per-package limit PACKAGE_MAX_INFLATED_BYTES (archives and
// each package of a bundle), the header checks, and other tenants served while a big archive inflates.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import zlib from 'node:zlib';
import { buildBundle } from '../../lib/afps/index.ts';
import { encodeZip, writeZip, type RawZipEntry } from '../../lib/zip/index.ts';
import { client } from '../support/http.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { startAppProcess } from './packages-app-process.ts';
import { aPackageWorld, agentFiles, upload } from './packages-harness.ts';

const MIB = 1024 * 1024;
const w = await aPackageWorld({ env: { PACKAGE_MAX_INFLATED_BYTES: String(4 * MIB) } });
after(() => w.app.close());

function zeros(mebibytes: number): Buffer {
  return Buffer.alloc(mebibytes * MIB);
}

async function importBytes(path: string, bytes: Buffer) {
  return upload(w.app.url, path, bytes, { key: await w.freshKey() }, path.endsWith('bundle') ? 'x.afps-bundle' : 'x.afps');
}

test('an archive inflating past PACKAGE_MAX_INFLATED_BYTES is 422 package_archive_unreadable naming the setting', async () => {
  const fits = writeZip(Object.entries({ ...agentFiles('@acme/fits', '1.0.0'), 'data/a.bin': zeros(3) }).map(([k, v]) => [k, Buffer.from(v)]));
  assert.equal((await importBytes('/api/packages/import', fits)).status, 201);

  const over = writeZip(Object.entries({ ...agentFiles('@acme/over', '1.0.0'), 'data/a.bin': zeros(3), 'data/b.bin': zeros(2) }).map(([k, v]) => [k, Buffer.from(v)]));
  const res = await importBytes('/api/packages/import', over);
  assert.equal(res.status, 422, res.text);
  assert.equal(res.body.code, 'package_archive_unreadable');
  assert.match(res.body.detail, /at most 4194304 are accepted \(PACKAGE_MAX_INFLATED_BYTES\)/);
});

test('a bundle with one package past PACKAGE_MAX_INFLATED_BYTES is refused; packages under it are not summed', async () => {
  const files = (extra: Record<string, Buffer>) => new Map(Object.entries({ ...agentFiles('@acme/bundled', '1.0.0'), ...extra }).map(([k, v]) => [k, Buffer.from(v)]));
  const over = buildBundle({ root: '@acme/bundled', packages: [{ id: '@acme/bundled', version: '1.0.0', files: files({ 'a.bin': zeros(3), 'b.bin': zeros(2) }) }] });
  const res = await importBytes('/api/packages/import-bundle', over);
  assert.equal(res.status, 422, res.text);
  assert.equal(res.body.code, 'package_archive_unreadable');
  assert.match(res.body.detail, /"packages\/@acme\/bundled\/1\.0\.0\/".*per package \(PACKAGE_MAX_INFLATED_BYTES\)/);

  const fits = buildBundle({ root: '@acme/bundled', packages: [{ id: '@acme/bundled', version: '1.0.0', files: files({ 'a.bin': zeros(3) }) }] });
  const ok = await importBytes('/api/packages/import-bundle', fits);
  assert.equal(ok.status, 201, ok.text);
});

/** Central and local header offsets of an encodeZip/writeZip archive's entries, in order. */
function headerOffsets(archive: Buffer): { local: number[]; central: number[] } {
  const local: number[] = [];
  const central: number[] = [];
  for (let at = 0; at + 4 <= archive.length; at++) {
    if (archive.readUInt32LE(at) === 0x04034b50) local.push(at);
    if (archive.readUInt32LE(at) === 0x02014b50) central.push(at);
  }
  return { local, central };
}

test('an archive whose local header names another file, or with an entry flagged encrypted, is 422', async () => {
  const pkg = () => writeZip(Object.entries(agentFiles('@acme/headers', '1.0.0')).map(([k, v]) => [k, Buffer.from(v)]));
  const renamed = pkg();
  const firstLocal = headerOffsets(renamed).local[0];
  renamed[firstLocal + 30] ^= 0x20; // manifest.json becomes Manifest.json in its local header only
  const encrypted = pkg();
  const firstCentral = headerOffsets(encrypted).central[0];
  encrypted.writeUInt16LE(encrypted.readUInt16LE(firstCentral + 8) | 0x0001, firstCentral + 8);
  for (const [bytes, why] of [[renamed, /local header for another name/], [encrypted, /is encrypted/]] as const) {
    const res = await importBytes('/api/packages/import', bytes);
    assert.equal(res.status, 422, res.text);
    assert.equal(res.body.code, 'package_archive_unreadable');
    assert.match(res.body.detail, why);
  }
});

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

test('while one tenant imports four 50 MiB entries of zeros, another tenant is answered without stalls', async (t) => {
  const platform = await startAppProcess();
  t.after(() => platform.close());
  const pool = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
  const importer = await anOrg(pool);
  const neighbour = await anOrg(pool);
  const { key: importerKey } = await aKey(pool, { orgId: importer.orgId, spaceId: importer.spaceId, userId: importer.ownerId });
  const { key: neighbourKey } = await aKey(pool, { orgId: neighbour.orgId, spaceId: neighbour.spaceId, userId: neighbour.ownerId });
  await pool.end();

  const text = (s: string): RawZipEntry => ({ name: '', method: 0, data: Buffer.from(s), crc32: zlib.crc32(Buffer.from(s)), uncompressedSize: Buffer.byteLength(s) });
  const entries: RawZipEntry[] = Object.entries(agentFiles('@acme/zeros', '1.0.0')).map(([name, content]) => ({ ...text(String(content)), name }));
  // just under 50 MiB each, so that with the manifest the package stays within the 200 MiB default
  const size = 50 * MIB - 64 * 1024;
  const data = zlib.deflateRawSync(Buffer.alloc(size), { level: 9 });
  const crc = zlib.crc32(Buffer.alloc(size));
  for (let i = 0; i < 4; i++) entries.push({ name: `data/zeros-${i}.bin`, method: 8, data, crc32: crc, uncompressedSize: size });
  const archive = encodeZip(entries);

  const neighbourApi = client(platform.url, { key: neighbourKey });
  const timed = async () => {
    const started = performance.now();
    const res = await neighbourApi.get('/api/runs');
    assert.equal(res.status, 200);
    return performance.now() - started;
  };
  const unloaded: number[] = [];
  for (let i = 0; i < 30; i++) unloaded.push(await timed());

  const rssBefore = await platform.rss();
  let importing = true;
  const imported = upload(platform.url, '/api/packages/import', archive, { key: importerKey }).finally(() => { importing = false; });
  const loaded: number[] = [];
  while (importing) loaded.push(await timed());
  const res = await imported;
  assert.equal(res.status, 201, res.text);
  const rssAfter = await platform.rss();
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const rssLater = await platform.rss();

  unloaded.sort((a, b) => a - b);
  loaded.sort((a, b) => a - b);
  const worst = loaded[loaded.length - 1];
  t.diagnostic(`GET /api/runs unloaded p50 ${quantile(unloaded, 0.5).toFixed(1)} ms; during the import (${loaded.length} calls) `
    + `p50 ${quantile(loaded, 0.5).toFixed(1)} ms, max ${worst.toFixed(1)} ms; RSS ${Math.round(rssBefore / MIB)} MB before, ${Math.round(rssAfter / MIB)} MB after, ${Math.round(rssLater / MIB)} MB 3 s later`);
  // inflating on the event loop holds every request for the whole inflation (four entries, back to back)
  assert.ok(loaded.length >= 5, `${loaded.length} calls were answered during the import`);
  assert.ok(worst < 500, `the slowest call during the import took ${worst.toFixed(0)} ms`);
});
