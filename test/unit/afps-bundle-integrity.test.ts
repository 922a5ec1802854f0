import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { fixtureFiles } from '../fixtures/build-packages.ts';
import { buildBundle, readBundle, type BundleInput } from '../../lib/afps/bundle.ts';
import { treeIntegrity } from '../../lib/afps/integrity.ts';
import { readZip } from '../../lib/zip/read-zip.ts';
import { encodeZip, writeZip } from '../../lib/zip/write-zip.ts';

const LIMITS = { maxEntries: 1000, maxEntryBytes: 1 << 24, maxTotalBytes: 1 << 26 };
const OPEN = { policy: 'off', trustRoot: [] } as const;

function anAgentBundle(): BundleInput {
  return {
    root: '@fixtures/agent-plain',
    packages: [
      { id: '@fixtures/agent-plain', version: '1.2.0', files: fixtureFiles('agent-plain') },
      { id: '@fixtures/skill-summarize', version: '1.0.0', files: fixtureFiles('skill-summarize') },
      { id: '@fixtures/integration-sample', version: '1.0.0', files: fixtureFiles('integration-sample') },
    ],
  };
}

/** The bundle's entries with one changed, re-zipped as a valid archive so only the hashes can tell. */
async function rezipped(bundle: Buffer, change: (entries: Map<string, Buffer>) => void): Promise<Buffer> {
  const entries = await readZip(bundle, LIMITS);
  change(entries);
  return writeZip(entries);
}

describe('bundle integrity', () => {
  test('a bundle round-trips: root, packages, files and hashes', async () => {
    const input = anAgentBundle();
    const read = await readBundle(buildBundle(input), OPEN);
    assert.equal(read.root, '@fixtures/agent-plain');
    assert.equal(read.signed, false);
    assert.deepEqual(read.warnings, []);
    assert.deepEqual(read.packages.map((p) => `${p.id}@${p.version}`), [
      '@fixtures/agent-plain@1.2.0', '@fixtures/integration-sample@1.0.0', '@fixtures/skill-summarize@1.0.0',
    ]);
    for (const pkg of input.packages) {
      const got = read.packages.find((p) => p.id === pkg.id)!;
      assert.deepEqual(got.files, pkg.files);
      assert.equal(got.integrity, treeIntegrity(pkg.files));
    }
    assert.match(read.integrity, /^sha256-/);
  });

  test('building is deterministic', async () => {
    assert.deepEqual(buildBundle(anAgentBundle()), buildBundle({ ...anAgentBundle(), packages: anAgentBundle().packages.reverse() }));
  });

  test('one byte changed in a package file is refused as an integrity fault', async () => {
    const tampered = await rezipped(buildBundle(anAgentBundle()), (entries) => {
      const name = 'packages/@fixtures/agent-plain/1.2.0/prompt.md';
      const bytes = Buffer.from(entries.get(name)!);
      bytes[0] ^= 0x01;
      entries.set(name, bytes);
    });
    await assert.rejects(() => readBundle(tampered, OPEN), (err: any) => {
      assert.equal(err.code, 'invalid_bundle');
      assert.match(err.detail, /integrity/);
      assert.match(err.detail, /prompt\.md/);
      return true;
    });
  });

  test('one byte flipped in the raw bundle bytes is refused', async () => {
    const bundle = buildBundle(anAgentBundle());
    const raw = Buffer.from(bundle);
    // flip a byte inside the first stored entry's data (past its local header)
    raw[80] ^= 0xff;
    await assert.rejects(() => readBundle(raw, OPEN), (err: any) => ['invalid_bundle', 'package_archive_unreadable'].includes(err.code));
  });

  test('a missing file, an extra file and an edited index are refused', async () => {
    const bundle = buildBundle(anAgentBundle());
    const missing = await rezipped(bundle, (e) => e.delete('packages/@fixtures/skill-summarize/1.0.0/references/style-guide.md'));
    await assert.rejects(() => readBundle(missing, OPEN), (err: any) => err.code === 'invalid_bundle' && /lacks its file/.test(err.detail));

    const extra = await rezipped(bundle, (e) => e.set('packages/@fixtures/skill-summarize/1.0.0/scripts/run.sh', Buffer.from('rm -rf /')));
    await assert.rejects(() => readBundle(extra, OPEN), (err: any) => err.code === 'invalid_bundle' && /not listed/.test(err.detail));

    const stray = await rezipped(bundle, (e) => e.set('README.md', Buffer.from('hi')));
    await assert.rejects(() => readBundle(stray, OPEN), (err: any) => err.code === 'invalid_bundle' && /not listed/.test(err.detail));

    const reRooted = await rezipped(bundle, (e) => {
      const index = JSON.parse(e.get('bundle.json')!.toString());
      index.root = '@fixtures/skill-summarize';
      e.set('bundle.json', Buffer.from(JSON.stringify(index)));
    });
    await assert.rejects(() => readBundle(reRooted, OPEN), (err: any) => err.code === 'invalid_bundle' && /overall hash/.test(err.detail));

    const swapped = await rezipped(bundle, (e) => {
      const index = JSON.parse(e.get('bundle.json')!.toString());
      index.packages[0].integrity = index.packages[1].integrity;
      e.set('bundle.json', Buffer.from(JSON.stringify(index)));
    });
    await assert.rejects(() => readBundle(swapped, OPEN), (err: any) => err.code === 'invalid_bundle' && /package hash/.test(err.detail));
  });

  test('a bundle without bundle.json, or with an index of another shape, is invalid_bundle', async () => {
    await assert.rejects(() => readBundle(writeZip([['x.txt', Buffer.from('x')]]), OPEN), { code: 'invalid_bundle' });
    const bundle = buildBundle(anAgentBundle());
    const extraMember = await rezipped(bundle, (e) => {
      const index = JSON.parse(e.get('bundle.json')!.toString());
      index.comment = 'hi';
      e.set('bundle.json', Buffer.from(JSON.stringify(index)));
    });
    await assert.rejects(() => readBundle(extraMember, OPEN), { code: 'invalid_bundle' });
  });

  test('a bundle must be rooted at one agent whose manifests match the index', async () => {
    const input = anAgentBundle();
    assert.throws(() => buildBundle({ ...input, root: '@fixtures/skill-summarize' }), { code: 'bundle_invalid' });
    assert.throws(() => buildBundle({ ...input, root: '@fixtures/absent' }), { code: 'bundle_invalid' });
    assert.throws(() => buildBundle({ ...input, packages: [...input.packages, input.packages[0]] }), { code: 'bundle_invalid' });
    const misfiled = { ...input, packages: input.packages.map((p) => (p.id === '@fixtures/skill-summarize' ? { ...p, version: '1.0.1' } : p)) };
    assert.throws(() => buildBundle(misfiled), { code: 'bundle_invalid' });
  });

  test('zip-slip names inside a bundle are refused before any hash is checked', async () => {
    const content = Buffer.from('x');
    const evil = encodeZip([{ name: '../bundle.json', method: 8, data: zlib.deflateRawSync(content), crc32: zlib.crc32(content), uncompressedSize: 1 }]);
    await assert.rejects(() => readBundle(evil, OPEN), { code: 'invalid_path' });
  });
});
