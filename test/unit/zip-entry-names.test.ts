import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { classifyEntryName } from '../../lib/zip/entry-name.ts';
import { readZip } from '../../lib/zip/read-zip.ts';
import { encodeZip, writeZip } from '../../lib/zip/write-zip.ts';

const LIMITS = { maxEntries: 100, maxEntryBytes: 1024 * 1024, maxTotalBytes: 10 * 1024 * 1024 };

function archiveWith(names: string[]): Buffer {
  const content = Buffer.from('payload');
  return encodeZip(names.map((name) => ({
    name, method: 8, data: zlib.deflateRawSync(content), crc32: zlib.crc32(content), uncompressedSize: content.length,
  })));
}

const REFUSED = [
  ['../evil.sh', /"\.\." segment/],
  ['skills/../../evil.sh', /"\.\." segment/],
  ['a/..', /"\.\." segment/],
  ['/etc/passwd', /absolute path/],
  ['C:/Windows/evil.dll', /drive letter/],
  ['c:evil', /drive letter/],
  ['scripts\\..\\evil.sh', /backslash/],
  ['evil\u0000.txt', /NUL byte/],
  ['line\nbreak.txt', /control character/],
  ['a//b.txt', /empty segment/],
  ['./prompt.md', /"\." segment/],
] as const;

describe('ZIP entry names (zip-slip)', () => {
  for (const [name, reason] of REFUSED) {
    test(`the reader refuses ${JSON.stringify(name)} with invalid_path`, async () => {
      await assert.rejects(() => readZip(archiveWith(['manifest.json', name]), LIMITS), (err: any) => {
        assert.equal(err.code, 'invalid_path');
        assert.match(err.detail, reason);
        return true;
      });
    });
  }

  test('the writer refuses the same names', async () => {
    for (const [name] of REFUSED) {
      assert.throws(() => writeZip([[name, Buffer.from('x')]]), { code: 'invalid_path' }, name);
    }
  });

  test('directory entries and __MACOSX entries are skipped, not returned', async () => {
    const files = await readZip(archiveWith(['docs/', 'docs/readme.md', '__MACOSX/', '__MACOSX/docs/._readme.md']), LIMITS);
    assert.deepEqual([...files.keys()], ['docs/readme.md']);
  });

  test('a directory entry with a ".." segment is still refused', async () => {
    await assert.rejects(() => readZip(archiveWith(['../']), LIMITS), { code: 'invalid_path' });
  });

  test('two entries with one name are refused', async () => {
    await assert.rejects(() => readZip(archiveWith(['prompt.md', 'prompt.md']), LIMITS), (err: any) => {
      assert.equal(err.code, 'invalid_path');
      assert.match(err.detail, /more than once/);
      return true;
    });
  });

  test('ordinary names pass, including non-ASCII and dotted names', async () => {
    for (const name of ['manifest.json', 'references/guide.md', 'assets/café.png', '.well-known/x', 'a..b/c']) {
      assert.deepEqual(classifyEntryName(name), { kind: 'file' }, name);
    }
  });
});
