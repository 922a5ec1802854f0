import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { readZip, type ZipLimits } from '../../lib/zip/read-zip.ts';
import { encodeZip, writeZip } from '../../lib/zip/write-zip.ts';

const LIMITS: ZipLimits = { maxEntries: 2000, maxEntryBytes: 50 * 1024 * 1024, maxTotalBytes: 200 * 1024 * 1024 };
const GiB = 1024 * 1024 * 1024;

/** A raw deflate stream of `mebibytes` MiB of zeros, built from ~1 KiB blocks so building it costs no memory. */
function zerosDeflateStream(mebibytes: number): Buffer {
  const block = zlib.deflateRawSync(Buffer.alloc(1024 * 1024), { level: 9, finishFlush: zlib.constants.Z_SYNC_FLUSH });
  const finalBlock = zlib.deflateRawSync(Buffer.alloc(0));
  return Buffer.concat([...Array.from({ length: mebibytes }, () => block), finalBlock]);
}

describe('ZIP reader limits', () => {
  test('an entry whose deflate stream inflates far past its small declared size is refused, memory stays low', async () => {
    const stream = zerosDeflateStream(60); // ~60 KiB that inflates to 60 MiB
    const archive = encodeZip([{ name: 'bomb.bin', method: 8, data: stream, crc32: 0, uncompressedSize: 1024 }]);
    assert.ok(archive.length < 100 * 1024, `archive is ${archive.length} bytes`);

    const started = Date.now();
    await assert.rejects(() => readZip(archive, LIMITS), (err: any) => {
      assert.equal(err.code, 'package_archive_unreadable');
      assert.match(err.detail, /expands past its declared size/);
      return true;
    });
    assert.ok(Date.now() - started < 2000);
    assert.ok(process.memoryUsage().rss < 200 * 1024 * 1024, `rss ${process.memoryUsage().rss}`);
  });

  test('a ~60 KB archive declaring 10 GB (ZIP64 sizes) is refused before anything is inflated', async () => {
    const stream = zerosDeflateStream(60);
    const archive = encodeZip([{ name: 'huge.bin', method: 8, data: stream, crc32: 0, uncompressedSize: 10 * GiB }]);
    assert.ok(archive.length < 100 * 1024);

    const started = Date.now();
    await assert.rejects(() => readZip(archive, LIMITS), (err: any) => {
      assert.equal(err.code, 'package_archive_unreadable');
      assert.match(err.detail, /expands to 10737418240 bytes/);
      return true;
    });
    assert.ok(Date.now() - started < 200, 'refused on the declared size alone');
    assert.ok(process.memoryUsage().rss < 200 * 1024 * 1024);
  });

  test('many entries whose declared sizes add up past the total limit are refused', async () => {
    const stream = zerosDeflateStream(1);
    const entries = Array.from({ length: 5 }, (_, i) => ({
      name: `part-${i}.bin`, method: 8, data: stream, crc32: 0, uncompressedSize: 45 * 1024 * 1024,
    }));
    await assert.rejects(() => readZip(encodeZip(entries), LIMITS), { code: 'package_archive_unreadable' });
  });

  test('one file declared over the per-file limit is file_too_large', async () => {
    const stream = zerosDeflateStream(1);
    const archive = encodeZip([{ name: 'video.mp4', method: 8, data: stream, crc32: 0, uncompressedSize: 60 * 1024 * 1024 }]);
    await assert.rejects(() => readZip(archive, LIMITS), (err: any) => {
      assert.equal(err.code, 'file_too_large');
      assert.equal(err.status, 400);
      return true;
    });
  });

  test('an archive with more entries than allowed is refused on the count alone', async () => {
    const files = Array.from({ length: 11 }, (_, i): [string, Buffer] => [`f${i}.txt`, Buffer.from('x')]);
    await assert.rejects(() => readZip(writeZip(files), { ...LIMITS, maxEntries: 10 }), (err: any) => {
      assert.equal(err.code, 'package_archive_unreadable');
      assert.match(err.detail, /11 entries/);
      return true;
    });
    assert.equal((await readZip(writeZip(files), { ...LIMITS, maxEntries: 11 })).size, 11);
  });

  test('an entry that inflates to less than its declared size is refused', async () => {
    const content = Buffer.from('short');
    const archive = encodeZip([{
      name: 'a.txt', method: 8, data: zlib.deflateRawSync(content), crc32: zlib.crc32(content), uncompressedSize: 100,
    }]);
    await assert.rejects(() => readZip(archive, LIMITS), { code: 'package_archive_unreadable' });
  });
});
