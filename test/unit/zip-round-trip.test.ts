import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { readZip } from '../../lib/zip/read-zip.ts';
import { encodeZip, writeZip } from '../../lib/zip/write-zip.ts';

const LIMITS = { maxEntries: 100, maxEntryBytes: 1024 * 1024, maxTotalBytes: 10 * 1024 * 1024 };

const FILES = new Map<string, Buffer>([
  ['prompt.md', Buffer.from('# Hello\n')],
  ['manifest.json', Buffer.from('{"name":"@a/b"}')],
  ['assets/empty.txt', Buffer.alloc(0)],
  ['assets/noise.bin', Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7919) % 251))],
  ['références/guide.md', Buffer.from('é')],
]);

describe('ZIP write and read', () => {
  test('what writeZip writes, readZip reads back byte for byte', async () => {
    const files = await readZip(writeZip(FILES), LIMITS);
    assert.equal(files.size, FILES.size);
    for (const [name, content] of FILES) assert.deepEqual(files.get(name), content, name);
  });

  test('writeZip is deterministic: same files in any order give the same bytes', async () => {
    const reversed = [...FILES].reverse();
    assert.deepEqual(writeZip(reversed), writeZip(FILES));
    const names = [...(await readZip(writeZip(reversed), LIMITS)).keys()];
    assert.deepEqual(names, ['assets/empty.txt', 'assets/noise.bin', 'manifest.json', 'prompt.md', 'références/guide.md']);
  });

  test('stored (method 0) entries are read', async () => {
    const content = Buffer.from('stored text');
    const archive = encodeZip([{ name: 'a.txt', method: 0, data: content, crc32: zlib.crc32(content), uncompressedSize: content.length }]);
    assert.deepEqual((await readZip(archive, LIMITS)).get('a.txt'), content);
  });

  test('an archive with ZIP64 end records is read', async () => {
    const content = Buffer.from('zip64');
    const archive = encodeZip(
      [{ name: 'a.txt', method: 0, data: content, crc32: zlib.crc32(content), uncompressedSize: content.length }],
      { zip64: true },
    );
    assert.deepEqual((await readZip(archive, LIMITS)).get('a.txt'), content);
  });

  test('an entry failing its CRC-32 is refused', async () => {
    const content = Buffer.from('hello');
    const archive = encodeZip([{ name: 'a.txt', method: 8, data: zlib.deflateRawSync(content), crc32: 12345, uncompressedSize: 5 }]);
    await assert.rejects(() => readZip(archive, LIMITS), (err: any) => err.code === 'package_archive_unreadable' && /CRC-32/.test(err.detail));
  });

  test('a compression method other than stored or deflate is refused', async () => {
    const content = Buffer.from('hello');
    const archive = encodeZip([{ name: 'a.txt', method: 12, data: content, crc32: zlib.crc32(content), uncompressedSize: 5 }]);
    await assert.rejects(() => readZip(archive, LIMITS), (err: any) => err.code === 'package_archive_unreadable' && /method 12/.test(err.detail));
  });

  test('files that are not ZIP archives, or are cut short, are package_archive_unreadable', async () => {
    const whole = writeZip(FILES);
    for (const bytes of [Buffer.alloc(0), Buffer.from('not a zip at all, just text'), whole.subarray(0, whole.length - 30), whole.subarray(40)]) {
      await assert.rejects(() => readZip(bytes, LIMITS), { code: 'package_archive_unreadable' });
    }
  });

  test('a corrupt deflate stream is package_archive_unreadable', async () => {
    const archive = encodeZip([{ name: 'a.txt', method: 8, data: Buffer.from([0xff, 0xff, 0xff, 0xff]), crc32: 0, uncompressedSize: 10 }]);
    await assert.rejects(() => readZip(archive, LIMITS), { code: 'package_archive_unreadable' });
  });

  test('a stored entry is a view of the upload: reading it costs no copy', async () => {
    const content = Buffer.from('stored text');
    const archive = encodeZip([{ name: 'a.txt', method: 0, data: content, crc32: zlib.crc32(content), uncompressedSize: content.length }]);
    const file = (await readZip(archive, LIMITS)).get('a.txt')!;
    assert.equal(file.toString(), 'stored text');
    assert.equal(file.buffer, archive.buffer, 'the entry shares the upload memory');
  });
});
