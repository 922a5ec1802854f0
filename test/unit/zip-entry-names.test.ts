import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { classifyEntryName, compareEntryNames, MAX_ENTRY_NAME_LENGTH, printableEntryName } from '../../lib/zip/entry-name.ts';
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

describe('ZIP entry names: each rule on its own', () => {
  const refuse = (reason: string) => ({ kind: 'refuse', reason });

  test('each refusal names its own reason', () => {
    assert.deepEqual(classifyEntryName(''), refuse('the name is empty'));
    assert.deepEqual(classifyEntryName('a\u0000b'), refuse('the name contains a NUL byte'));
    assert.deepEqual(classifyEntryName('a\\b'), refuse('the name contains a backslash'));
    assert.deepEqual(classifyEntryName('/a'), refuse('the name is an absolute path'));
    assert.deepEqual(classifyEntryName('Z:x'), refuse('the name starts with a drive letter'));
    assert.deepEqual(classifyEntryName('a/../b'), refuse('the name has a ".." segment'));
    assert.deepEqual(classifyEntryName('a/./b'), refuse('the name has a "." segment'));
    assert.deepEqual(classifyEntryName('a//b'), refuse('the name has an empty segment'));
  });

  test('the length limit is 1024 characters, counted as characters', () => {
    assert.deepEqual(classifyEntryName('x'.repeat(1024)), { kind: 'file' });
    assert.deepEqual(classifyEntryName('x'.repeat(1025)), refuse('the name is longer than 1024 characters'));
    assert.equal(MAX_ENTRY_NAME_LENGTH, 1024);
  });

  test('every C0 control character and DEL are refused; the characters around them are not', () => {
    for (let code = 1; code <= 0x1f; code++) {
      assert.deepEqual(classifyEntryName(`a${String.fromCharCode(code)}b`), refuse('the name contains a control character'), `U+${code.toString(16)}`);
    }
    assert.deepEqual(classifyEntryName('a\u007fb'), refuse('the name contains a control character'));
    for (const ok of ['a b', 'a~b', 'a\u0080b', 'a\u00a0b']) assert.deepEqual(classifyEntryName(ok), { kind: 'file' }, JSON.stringify(ok));
  });

  test('a drive letter counts only at the start, and only as a letter and a colon', () => {
    for (const name of ['a:', 'z:b', 'A:b', 'Z:/b']) assert.equal(classifyEntryName(name).kind, 'refuse', name);
    for (const name of ['dir/c:x', '1:x', 'ab:c', ':x', 'a']) assert.deepEqual(classifyEntryName(name), { kind: 'file' }, name);
  });

  test('only a leading slash is absolute; a trailing one makes a directory', () => {
    assert.deepEqual(classifyEntryName('a/b/'), { kind: 'skip' });
    assert.deepEqual(classifyEntryName('a/'), { kind: 'skip' });
    assert.deepEqual(classifyEntryName('/'), refuse('the name is an absolute path'));
  });

  test('directory names are checked segment by segment too', () => {
    assert.deepEqual(classifyEntryName('a/../'), refuse('the name has a ".." segment'));
    assert.deepEqual(classifyEntryName('./'), refuse('the name has a "." segment'));
    assert.deepEqual(classifyEntryName('a//'), refuse('the name has an empty segment'));
    assert.deepEqual(classifyEntryName('...'), { kind: 'file' });
    assert.deepEqual(classifyEntryName('a./.b'), { kind: 'file' });
  });

  test('__MACOSX is skipped only as the first segment and only by its exact name', () => {
    assert.deepEqual(classifyEntryName('__MACOSX/x'), { kind: 'skip' });
    assert.deepEqual(classifyEntryName('__MACOSX'), { kind: 'skip' });
    for (const name of ['docs/__MACOSX/x', '__macosx/x', '__MACOSX2/x']) {
      assert.deepEqual(classifyEntryName(name), { kind: 'file' }, name);
    }
  });

  test('names compare by their UTF-8 bytes, not by UTF-16 code units', () => {
    // U+FF61 sorts before U+1F600 in UTF-8 (EF.. < F0..) and after it in UTF-16 (FF61 > D83D)
    assert.ok(compareEntryNames('\uff61', '\u{1f600}') < 0);
    assert.ok(compareEntryNames('\u{1f600}', '\uff61') > 0);
    assert.equal(compareEntryNames('same', 'same'), 0);
    assert.deepEqual(['b', 'a/b', 'a', 'B'].sort(compareEntryNames), ['B', 'a', 'a/b', 'b']);
  });

  test('a printed name is quoted with control characters escaped and cut after 200 characters', () => {
    assert.equal(printableEntryName('a\nb'), '"a\\nb"');
    assert.equal(printableEntryName('y'.repeat(200)), `"${'y'.repeat(200)}"`);
    assert.equal(printableEntryName('y'.repeat(201)), `"${'y'.repeat(200)}..."`);
  });
});
