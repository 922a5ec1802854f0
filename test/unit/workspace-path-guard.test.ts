import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkRelativePath, WorkspacePathError, WorkspaceRoot } from '../../agent-runtime/workspace-path.ts';
import { editFile, globToRegExp, listFolder, readLines, searchFiles, writeFile } from '../../agent-runtime/workspace-tools.ts';

describe('checkRelativePath', () => {
  test('accepts relative paths and normalizes . and empty segments', () => {
    assert.equal(checkRelativePath('a/b.txt'), 'a/b.txt');
    assert.equal(checkRelativePath('./a//b/./c'), 'a/b/c');
    assert.equal(checkRelativePath('.', true), '.');
    assert.equal(checkRelativePath('', true), '.');
  });

  for (const [given, reason] of [
    ['../x', /'\.\.' leaves/],
    ['a/../../x', /'\.\.' leaves/],
    ['a/..', /'\.\.' leaves/],
    ['/etc/passwd', /absolute/],
    ['/workspace/a.txt', /absolute/],
    ['a\0b', /NUL/],
    ['x/'.repeat(2100), /longer than 4096 bytes/],
    [`${'n'.repeat(256)}.txt`, /longer than 255 bytes/],
    ['', /workspace itself/],
    ['.', /workspace itself/],
  ] as const) {
    test(`refuses ${JSON.stringify(given.slice(0, 30))}`, () => {
      assert.throws(() => checkRelativePath(given), (err: Error) => err instanceof WorkspacePathError && reason.test(err.message));
    });
  }

  test('refuses what is not a string', () => {
    assert.throws(() => checkRelativePath(42), WorkspacePathError);
    assert.throws(() => checkRelativePath(undefined), WorkspacePathError);
  });
});

describe('WorkspaceRoot and the file tools on a real folder', () => {
  let base: string;
  let ws: string;
  let outside: string;
  let root: WorkspaceRoot;

  before(() => {
    base = mkdtempSync(join(tmpdir(), 'ws-guard-'));
    ws = join(base, 'workspace');
    outside = join(base, 'outside');
    mkdirSync(join(ws, 'docs', 'deep'), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(outside, 'secret.txt'), 'host secret\n');
    writeFileSync(join(ws, 'notes.txt'), 'one\ntwo\nthree\nfour\nfive\n');
    writeFileSync(join(ws, 'docs', 'a.md'), '# A\nfind me here\n');
    writeFileSync(join(ws, 'docs', 'deep', 'b.md'), 'nothing\nFIND ME too\n');
    writeFileSync(join(ws, 'twice.txt'), 'x = 1\nx = 1\n');
    symlinkSync(join(outside, 'secret.txt'), join(ws, 'link-out'));
    symlinkSync('/etc/passwd', join(ws, 'passwd'));
    symlinkSync(outside, join(ws, 'dir-out'));
    symlinkSync('notes.txt', join(ws, 'link-in'));
    execFileSync('mkfifo', [join(ws, 'pipe')]);
    root = new WorkspaceRoot(ws);
  });
  after(() => rmSync(base, { recursive: true, force: true }));

  const refused = (fn: () => unknown, reason: RegExp) =>
    assert.throws(fn, (err: Error) => err instanceof WorkspacePathError && reason.test(err.message), String(reason));

  test('reads a line range', () => {
    assert.equal(readLines(root, 'notes.txt', 2, 2), 'notes.txt: lines 2-3\ntwo\nthree\n[more lines follow: read with offset=4]');
    assert.equal(readLines(root, 'notes.txt', 4, 10), 'notes.txt: lines 4-5\nfour\nfive');
    assert.match(readLines(root, 'notes.txt', 9, 1), /no lines from line 9 \(the file has 5\)/);
  });

  test('a link inside the workspace is followed; links out, to a file or through a folder, are refused', () => {
    assert.match(readLines(root, 'link-in'), /one\ntwo/);
    refused(() => readLines(root, 'link-out'), /outside the workspace/);
    refused(() => readLines(root, 'passwd'), /outside the workspace|no such file/);
    refused(() => readLines(root, 'dir-out/secret.txt'), /outside the workspace/);
    refused(() => listFolder(root, 'dir-out'), /outside the workspace/);
    refused(() => readLines(root, '../outside/secret.txt'), /'\.\.' leaves/);
    refused(() => readLines(root, join(outside, 'secret.txt')), /absolute/);
  });

  test('writes never follow a link: through a linked folder or onto a link, nothing is written outside', () => {
    refused(() => writeFile(root, 'dir-out/new.txt', 'x'), /symbolic link/);
    assert.equal(existsSync(join(outside, 'new.txt')), false);
    refused(() => writeFile(root, 'link-out', 'overwritten'), /symbolic link/);
    assert.equal(readFileSync(join(outside, 'secret.txt'), 'utf8'), 'host secret\n');
    refused(() => writeFile(root, 'dir-out/sub/new.txt', 'x'), /symbolic link/);
    assert.equal(existsSync(join(outside, 'sub')), false);
  });

  test('write creates folders inside; edit replaces exactly one match and refuses missing or ambiguous ones', () => {
    assert.equal(writeFile(root, 'out/report.md', 'count: 3\n'), 'wrote 9 bytes to out/report.md');
    assert.equal(readFileSync(join(ws, 'out', 'report.md'), 'utf8'), 'count: 3\n');
    assert.equal(editFile(root, 'out/report.md', 'count: 3', 'count: 4'), 'replaced 1 occurrence in out/report.md');
    assert.equal(readFileSync(join(ws, 'out', 'report.md'), 'utf8'), 'count: 4\n');
    assert.throws(() => editFile(root, 'out/report.md', 'count: 9', 'x'), /not found/);
    assert.throws(() => editFile(root, 'twice.txt', 'x = 1', 'x = 2'), /occurs 2 times/);
    assert.equal(readFileSync(join(ws, 'twice.txt'), 'utf8'), 'x = 1\nx = 1\n');
    refused(() => editFile(root, 'link-out', 'host', 'x'), /outside the workspace/);
  });

  test('a file with another hard link is neither read nor written (its other name may be outside)', () => {
    linkSync(join(outside, 'secret.txt'), join(ws, 'hard'));
    try {
      refused(() => writeFile(root, 'hard', 'overwritten'), /other hard links/);
      refused(() => readLines(root, 'hard'), /other hard links/);
      assert.equal(readFileSync(join(outside, 'secret.txt'), 'utf8'), 'host secret\n');
    } finally {
      rmSync(join(ws, 'hard'));
    }
  });

  test('a FIFO is neither read nor written (no hang)', () => {
    refused(() => readLines(root, 'pipe'), /not a regular file/);
    refused(() => writeFile(root, 'pipe', 'x'), /not a regular file/);
  });

  test('list shows folders, sizes and links without following them', () => {
    const listing = listFolder(root, '.');
    assert.match(listing, /^docs\/$/m);
    assert.match(listing, /^notes\.txt\t24 bytes$/m);
    assert.match(listing, /^dir-out -> /m);
  });

  test('search by glob and by text; links are not followed', () => {
    assert.equal(searchFiles(root, { path: 'docs', glob: '**/*.md' }), 'docs/a.md\ndocs/deep/b.md');
    assert.equal(searchFiles(root, { glob: '*.txt' }), 'notes.txt\ntwice.txt');
    assert.equal(searchFiles(root, { path: 'docs', text: 'find me', ignoreCase: true }), 'docs/a.md:2: find me here\ndocs/deep/b.md:2: FIND ME too');
    assert.equal(searchFiles(root, { text: 'host secret' }), 'no matches');
    refused(() => searchFiles(root, { path: '../outside', text: 'x' }), /'\.\.' leaves/);
  });

  test('globs', () => {
    assert.ok(globToRegExp('*.md').test('a.md'));
    assert.ok(!globToRegExp('*.md').test('d/a.md'));
    assert.ok(globToRegExp('**/*.md').test('a.md'));
    assert.ok(globToRegExp('docs/**').test('docs/x/y'));
    assert.ok(globToRegExp('a?.txt').test('ab.txt'));
    assert.ok(!globToRegExp('a.txt').test('abtxt'));
  });
});
