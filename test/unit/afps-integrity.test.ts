import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { isSha256Integrity, sha256Integrity, treeIntegrity, treeListing } from '../../lib/afps/integrity.ts';

describe('integrity hashes', () => {
  test('sha256Integrity is sha256- and the standard base64 digest', () => {
    const bytes = Buffer.from('hello');
    assert.equal(sha256Integrity(bytes), `sha256-${createHash('sha256').update(bytes).digest('base64')}`);
    assert.equal(sha256Integrity(Buffer.alloc(0)), 'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=');
    assert.ok(isSha256Integrity(sha256Integrity(bytes)));
  });

  test('the tree listing is one line per file in byte order of the paths', () => {
    const files = new Map([['b.md', Buffer.from('b')], ['a/z.md', Buffer.from('z')], ['B.md', Buffer.from('B')]]);
    assert.equal(treeListing(files), [
      `${sha256Integrity(Buffer.from('B'))} B.md\n`,
      `${sha256Integrity(Buffer.from('z'))} a/z.md\n`,
      `${sha256Integrity(Buffer.from('b'))} b.md\n`,
    ].join(''));
  });

  test('the tree hash ignores insertion order but not names or contents', () => {
    const a = new Map([['x', Buffer.from('1')], ['y', Buffer.from('2')]]);
    const b = new Map([['y', Buffer.from('2')], ['x', Buffer.from('1')]]);
    assert.equal(treeIntegrity(a), treeIntegrity(b));
    assert.notEqual(treeIntegrity(a), treeIntegrity(new Map([['x', Buffer.from('2')], ['y', Buffer.from('1')]])));
    assert.notEqual(treeIntegrity(a), treeIntegrity(new Map([['x', Buffer.from('1')], ['z', Buffer.from('2')]])));
  });

  test('paths that could forge a listing line are refused', () => {
    assert.throws(() => treeIntegrity(new Map([['a\nsha256-x b', Buffer.from('')]])), { code: 'invalid_path' });
  });
});
