// The reader's judgement of each entry, with archives laid out by hand so a local header can
// disagree with its central one in any field: names, flags, methods, sizes, offsets, data cut
// short. Then the limits at their exact edges, and the inflation workers and queue on their own.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import { FairQueue, inflateQueue } from '../../lib/zip/inflate-queue.ts';
import { inflateInWorker, inflateWorkerCount } from '../../lib/zip/inflate-workers.ts';
import { digestOfRead, inflatedBytesTotal, planZip, readZip, type ZipLimits } from '../../lib/zip/read-zip.ts';

const LIMITS: ZipLimits = { maxEntries: 100, maxEntryBytes: 1024 * 1024, maxTotalBytes: 10 * 1024 * 1024 };

interface Entry {
  name: string | Buffer;
  content?: Buffer;
  method?: number;
  /** the stored bytes; defaults to content, deflated for method 8 */
  data?: Buffer;
  crc32?: number;
  uncompressedSize?: number;
  compressedSize?: number;
  flags?: number;
  local?: { name?: string | Buffer; flags?: number; extra?: Buffer; signature?: number };
  /** cut the stored data to this many bytes (the headers still declare the whole) */
  truncateTo?: number;
  offset?: number;
  /** the central header's comment */
  comment?: Buffer;
}

/** An archive laid out entry by entry: local header, data, then the central directory and end record. */
function layout(entries: Entry[]): Buffer {
  const parts: Buffer[] = [];
  const centrals: Buffer[] = [];
  let at = 0;
  for (const e of entries) {
    const content = e.content ?? Buffer.from('content');
    const method = e.method ?? 0;
    const data = e.data ?? (method === 8 ? zlib.deflateRawSync(content) : content);
    const name = Buffer.from(e.name);
    const localName = Buffer.from(e.local?.name ?? e.name);
    const localExtra = e.local?.extra ?? Buffer.alloc(0);
    const crc = e.crc32 ?? zlib.crc32(content);
    const compressed = e.compressedSize ?? data.length;
    const size = e.uncompressedSize ?? content.length;

    const local = Buffer.alloc(30);
    local.writeUInt32LE(e.local?.signature ?? 0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(e.local?.flags ?? e.flags ?? 0, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(compressed, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(localName.length, 26);
    local.writeUInt16LE(localExtra.length, 28);
    const stored = e.truncateTo === undefined ? data : data.subarray(0, e.truncateTo);
    const record = Buffer.concat([local, localName, localExtra, stored]);

    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(e.flags ?? 0, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(compressed, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt16LE(e.comment?.length ?? 0, 32);
    central.writeUInt32LE(e.offset ?? at, 42);
    centrals.push(Buffer.concat([central, name, e.comment ?? Buffer.alloc(0)]));
    parts.push(record);
    at += record.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(at, 16);
  return Buffer.concat([...parts, directory, end]);
}

async function refused(archive: Buffer, code: string, detail: RegExp, limits = LIMITS): Promise<void> {
  await assert.rejects(() => readZip(archive, limits), (err: any) => {
    assert.equal(err.code, code);
    assert.match(err.detail, detail);
    return true;
  });
}

describe('ZIP reader: each entry judged against its headers', () => {
  test('a well-formed stored and deflated pair is read, with its digests', async () => {
    const a = Buffer.from('alpha'.repeat(100));
    const files = await readZip(layout([{ name: 'a.txt', content: a }, { name: 'b.txt', content: a, method: 8, local: { extra: Buffer.alloc(9, 7) } }]), LIMITS);
    assert.deepEqual([...files.keys()], ['a.txt', 'b.txt']);
    const digest = `sha256-${createHash('sha256').update(a).digest('base64')}`;
    for (const file of files.values()) {
      assert.deepEqual(file, a);
      assert.equal(digestOfRead(file), digest);
    }
  });

  test('the entry count limit is inclusive', async () => {
    const three = layout(['a', 'b', 'c'].map((name) => ({ name })));
    assert.equal((await readZip(three, { ...LIMITS, maxEntries: 3 })).size, 3);
    await refused(three, 'package_archive_unreadable', /^The archive holds 3 entries; at most 2 are accepted\.$/, { ...LIMITS, maxEntries: 2 });
  });

  test('a name that is not UTF-8 is invalid_path', async () => {
    await refused(layout([{ name: Buffer.from([0x61, 0xff, 0x62]) }]), 'invalid_path', /^An archive entry name is not valid UTF-8\.$/);
  });

  test('refused and repeated names say which entry and why', async () => {
    await refused(layout([{ name: 'ok.txt' }, { name: '../x' }]), 'invalid_path', /^Archive entry "\.\.\/x" is refused: the name has a "\.\." segment\.$/);
    await refused(layout([{ name: 'x' }, { name: 'y' }, { name: 'x' }]), 'invalid_path', /^Archive entry "x" appears more than once\.$/);
  });

  test('skipped entries are neither returned nor checked against their local headers', async () => {
    const files = await readZip(layout([{ name: 'docs/', local: { signature: 0 } }, { name: '__MACOSX/._a', local: { name: 'other' } }, { name: 'a' }]), LIMITS);
    assert.deepEqual([...files.keys()], ['a']);
  });

  test('the per-file limit is inclusive and names the size', async () => {
    const content = Buffer.alloc(64, 1);
    assert.equal((await readZip(layout([{ name: 'f', content }]), { ...LIMITS, maxEntryBytes: 64 })).get('f')!.length, 64);
    await refused(layout([{ name: 'f', content }]), 'file_too_large', /^Archive entry "f" is 64 bytes; at most 63 are accepted per file\.$/, { ...LIMITS, maxEntryBytes: 63 });
  });

  test('either encryption flag in the central header is refused', async () => {
    for (const flags of [0x0001, 0x0040, 0x0041]) {
      await refused(layout([{ name: 's', flags, local: { flags: 0 } }]), 'package_archive_unreadable', /^Archive entry "s" is encrypted\.$/);
    }
  });

  test('either encryption flag in the local header alone is refused', async () => {
    for (const flags of [0x0001, 0x0040]) {
      await refused(layout([{ name: 's', local: { flags } }]), 'package_archive_unreadable', /^Archive entry "s" is encrypted\.$/);
    }
  });

  test('other flags (UTF-8 names, data descriptors) are not refusals', async () => {
    const files = await readZip(layout([{ name: 'é.txt', flags: 0x0808 }]), LIMITS);
    assert.deepEqual([...files.keys()], ['é.txt']);
  });

  test('methods other than stored and deflate are refused by number', async () => {
    for (const method of [1, 9, 12, 14, 99]) {
      await refused(layout([{ name: 'm', method, data: Buffer.from('content') }]), 'package_archive_unreadable',
        new RegExp(`^Archive entry "m" uses compression method ${method}; only stored and deflate are supported\\.$`));
    }
  });

  test('a stored entry whose two sizes differ is refused', async () => {
    await refused(layout([{ name: 's', compressedSize: 6 }]), 'package_archive_unreadable', /^Archive entry "s" is stored but its sizes differ\.$/);
    await refused(layout([{ name: 's', uncompressedSize: 8 }]), 'package_archive_unreadable', /stored but its sizes differ/);
  });

  test('a deflated entry may have sizes that differ', async () => {
    const content = Buffer.alloc(1000, 0x41);
    assert.deepEqual((await readZip(layout([{ name: 'd', content, method: 8 }]), LIMITS)).get('d'), content);
  });

  test('a local header that is missing, misplaced or past the end is refused', async () => {
    const missing = /^Archive entry "e" has no local header\.$/;
    await refused(layout([{ name: 'e', local: { signature: 0x02014b50 } }]), 'package_archive_unreadable', missing);
    await refused(layout([{ name: 'e', offset: 1 }]), 'package_archive_unreadable', missing);
    const archive = layout([{ name: 'e' }]);
    // the offset of the end record's last bytes: fewer than 30 bytes remain after it
    await refused(layout([{ name: 'e', offset: archive.length - 29 }]), 'package_archive_unreadable', missing);
    await refused(layout([{ name: 'e', offset: 0xfffffff0 }]), 'package_archive_unreadable', missing);
    // two bytes before the end: too few for even a signature
    await refused(layout([{ name: 'e', offset: archive.length - 2 }]), 'package_archive_unreadable', missing);
  });

  test('a local header signature exactly 30 bytes before the end is a header (of no name here)', async () => {
    // the central comment's last 8 bytes and the end record are the last 30 bytes; the comment
    // starts a local header signature there
    const comment = Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0, 0, 0]);
    const archive = layout([{ name: 'e', comment }]);
    await refused(layout([{ name: 'e', comment, offset: archive.length - 30 }]), 'package_archive_unreadable', /^Archive entry "e" has a local header for another name\.$/);
  });

  test('a local header naming another file, or a longer or shorter name, is refused', async () => {
    const other = /^Archive entry "name\.txt" has a local header for another name\.$/;
    for (const localName of ['Name.txt', 'name.txt2', 'name.tx', '']) {
      await refused(layout([{ name: 'name.txt', local: { name: localName } }]), 'package_archive_unreadable', other);
    }
  });

  test('data declared to run past the end of the file is truncated; up to the last byte is not', async () => {
    const content = Buffer.from('0123456789');
    const whole = layout([{ name: 't', content, method: 8 }]);
    const reach = whole.length - (30 + 1);
    await refused(layout([{ name: 't', content, method: 8, compressedSize: reach + 1 }]), 'package_archive_unreadable', /^Archive entry "t" is truncated\.$/);
    // declared to run up to the file's last byte: not truncated (the inflater stops at the stream's end)
    assert.deepEqual((await readZip(layout([{ name: 't', content, method: 8, compressedSize: reach }]), LIMITS)).get('t'), content);
    assert.equal(planZip(whole, LIMITS)[0].dataStart, 30 + 1);
  });

  test('where the data starts counts the local name and extra, not the central ones', async () => {
    const plan = planZip(layout([{ name: 'ab', local: { extra: Buffer.alloc(5) } }, { name: 'c' }]), LIMITS);
    assert.deepEqual(plan.map((p) => p.dataStart), [30 + 2 + 5, 30 + 2 + 5 + 7 + 30 + 1]);
  });

  test('a stored entry failing its CRC-32, and a deflated one inflating short, say so', async () => {
    await refused(layout([{ name: 'c', crc32: 1 }]), 'package_archive_unreadable', /^Archive entry "c" fails its CRC-32 check\.$/);
    const content = Buffer.from('short');
    await refused(layout([{ name: 'd', content, method: 8, uncompressedSize: 6 }]), 'package_archive_unreadable', /^Archive entry "d" is shorter than its declared size\.$/);
  });

  test('a stored entry larger than one slice is checked over every slice', async () => {
    const content = Buffer.alloc(512 * 1024 * 2 + 17);
    for (let i = 0; i < content.length; i++) content[i] = (i * 31) % 256;
    assert.deepEqual((await readZip(layout([{ name: 'big', content }]), { ...LIMITS, maxEntryBytes: 2 * 1024 * 1024 })).get('big'), content);
    // a byte changed in the last slice only
    const archive = layout([{ name: 'big', content }]);
    archive[30 + 3 + content.length - 1] ^= 0xff;
    await refused(archive, 'package_archive_unreadable', /fails its CRC-32 check/, { ...LIMITS, maxEntryBytes: 2 * 1024 * 1024 });
  });

  test('checking a stored entry slice by slice lets the event loop turn between slices', async () => {
    const content = Buffer.alloc(3 * 512 * 1024, 0x45);
    let turned = false;
    setImmediate(() => { turned = true; });
    const files = await readZip(layout([{ name: 'big', content }]), { ...LIMITS, maxEntryBytes: 4 * 1024 * 1024 });
    assert.equal(files.get('big')!.length, content.length);
    assert.ok(turned, 'an immediate queued before the read ran before the read ended');
  });

  test('a corrupt deflate stream names the inflater\'s complaint', async () => {
    await refused(layout([{ name: 'z', method: 8, data: Buffer.from([0xff, 0xff, 0xff]), uncompressedSize: 4 }]), 'package_archive_unreadable',
      /^Archive entry "z" is corrupt: .+\.$/);
  });

  test('bytes inflated are counted: what was read, and how far a lying entry got', async () => {
    const content = Buffer.alloc(3000, 0x42);
    let before = inflatedBytesTotal();
    await readZip(layout([{ name: 'n', content, method: 8 }, { name: 's', content }]), LIMITS);
    assert.equal(inflatedBytesTotal() - before, 3000, 'deflated bytes only; stored entries are not inflated');
    before = inflatedBytesTotal();
    await refused(layout([{ name: 'liar', content, method: 8, uncompressedSize: 100 }]), 'package_archive_unreadable',
      /^Archive entry "liar" expands past its declared size of 100 bytes\.$/);
    assert.equal(inflatedBytesTotal() - before, 3000, 'the one chunk that went past');
  });
});

describe('ZIP reader: totals and groups at their edges', () => {
  const kib = (n: number) => Buffer.alloc(n * 1024, 0x43);

  test('the total limit is inclusive, named in the refusal with its setting when given', async () => {
    const archive = layout([{ name: 'a', content: kib(2) }, { name: 'b', content: kib(2) }]);
    assert.equal((await readZip(archive, { ...LIMITS, maxTotalBytes: 4096 })).size, 2);
    await refused(archive, 'package_archive_unreadable', /^The archive expands to 4096 bytes at entry "b"; at most 4095 are accepted\.$/, { ...LIMITS, maxTotalBytes: 4095 });
    await refused(archive, 'package_archive_unreadable', /^The archive expands to 4096 bytes at entry "b"; at most 4095 are accepted \(MAX_X\)\.$/,
      { ...LIMITS, maxTotalBytes: 4095, totalSetting: 'MAX_X' });
  });

  test('a group cap is inclusive and per group, counted by the first `depth` segments', async () => {
    const group = { depth: 2, maxBytes: 2048 };
    const fits = layout([{ name: 'p/one/a', content: kib(1) }, { name: 'p/one/b', content: kib(1) }, { name: 'p/two/a', content: kib(2) }, { name: 'p/top', content: kib(3) }]);
    assert.equal((await readZip(fits, { ...LIMITS, group })).size, 4, 'a file at depth 2 belongs to no group');
    const over = layout([{ name: 'p/one/a', content: kib(1) }, { name: 'p/two/a', content: kib(1) }, { name: 'p/one/sub/b', content: Buffer.alloc(1025) }]);
    await refused(over, 'package_archive_unreadable', /^"p\/one\/" expands to 2049 bytes at entry "p\/one\/sub\/b"; at most 2048 are accepted per package\.$/, { ...LIMITS, group });
    await refused(over, 'package_archive_unreadable', /per package \(GROUP_SETTING\)\.$/, { ...LIMITS, group: { ...group, setting: 'GROUP_SETTING' } });
  });

  test('without a group cap, group-sized entries are judged only against the total', async () => {
    const archive = layout([{ name: 'p/one/a', content: kib(3) }, { name: 'p/one/b', content: kib(3) }]);
    assert.equal((await readZip(archive, LIMITS)).size, 2);
  });
});

describe('inflation workers', () => {
  test('an exact-size stream fills its cap; one byte more is past it', async () => {
    const content = Buffer.alloc(5000, 0x44);
    const deflated = zlib.deflateRawSync(content);
    const exact = await inflateInWorker(deflated, 5000, 1024);
    assert.ok('data' in exact);
    assert.deepEqual(exact.data, content);
    assert.equal(exact.crc, zlib.crc32(content));
    assert.equal(exact.digest, createHash('sha256').update(content).digest('base64'));
    const past = await inflateInWorker(deflated, 4999, 1024);
    assert.deepEqual(past, { past: 5000 });
  });

  test('a worker that fails is dropped and counted out; the next job gets a working one', async () => {
    const deadline = Date.now() + 6000;
    while (inflateWorkerCount() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    // a job first, so the failing one runs on a reused worker
    await inflateInWorker(zlib.deflateRawSync(Buffer.from('warm')), 10, 64);
    assert.equal(inflateWorkerCount(), 1);
    // a cap past the largest buffer there can be: the worker throws and ends
    await assert.rejects(() => inflateInWorker(zlib.deflateRawSync(Buffer.from('x')), 2 ** 60, 64));
    assert.equal(inflateWorkerCount(), 0);
    const after = await inflateInWorker(zlib.deflateRawSync(Buffer.from('again')), 10, 64);
    assert.ok('data' in after && after.data.toString() === 'again');
    assert.equal(inflateWorkerCount(), 1);
    while (inflateWorkerCount() > 0 && Date.now() < deadline + 6000) await new Promise((r) => setTimeout(r, 100));
    assert.equal(inflateWorkerCount(), 0, 'the replacement ends when idle, counted once');
  });

  test('the input is copied: the caller\'s buffer stays whole', async () => {
    const deflated = zlib.deflateRawSync(Buffer.from('keep me'));
    const copy = Buffer.from(deflated);
    await inflateInWorker(deflated, 100, 64);
    assert.deepEqual(deflated, copy);
  });

  test('workers are reused one after another and end when idle', async () => {
    await inflateInWorker(zlib.deflateRawSync(Buffer.from('one')), 10, 64);
    const afterOne = inflateWorkerCount();
    await inflateInWorker(zlib.deflateRawSync(Buffer.from('two')), 10, 64);
    assert.equal(inflateWorkerCount(), afterOne, 'the idle worker took the second job');
    const both = await Promise.all([1, 2].map((i) => inflateInWorker(zlib.deflateRawSync(Buffer.from(`p${i}`)), 10, 64)));
    assert.ok(both.every((o) => 'data' in o));
    assert.ok(inflateWorkerCount() >= 2, 'two jobs at once need two workers');
    const deadline = Date.now() + 6000;
    while (inflateWorkerCount() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.equal(inflateWorkerCount(), 0, 'idle workers end after two seconds');
  });
});

describe('inflation queue', () => {
  test('the shared queue admits two entries at a time', () => {
    assert.equal(inflateQueue.slots, 2);
  });

  test('slots run at once up to their number; the rest wait and are counted', async () => {
    const queue = new FairQueue(2);
    let running = 0;
    let peak = 0;
    const gates: Array<() => void> = [];
    const task = () => queue.run('k', async () => {
      running++;
      peak = Math.max(peak, running);
      await new Promise<void>((r) => gates.push(r));
      running--;
    });
    const all = [task(), task(), task(), task(), task()];
    await new Promise((r) => setImmediate(r));
    assert.equal(running, 2);
    assert.equal(queue.queued, 3);
    while (gates.length) {
      gates.shift()!();
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(all);
    assert.equal(peak, 2);
    assert.equal(queue.queued, 0);
  });

  test('a task that throws frees its slot and the next one runs', async () => {
    const queue = new FairQueue(1);
    await assert.rejects(() => queue.run('a', async () => { throw new Error('boom'); }), /boom/);
    assert.equal(await queue.run('a', async () => 7), 7);
  });

  test('three keys are served in rotation, each at the back after its turn', async () => {
    const queue = new FairQueue(1);
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    const first = queue.run('x', async () => { await gate; });
    const waiting = ['a', 'a', 'b', 'c', 'b', 'a'].map((key, i) => queue.run(key, async () => { order.push(`${key}${i}`); }));
    assert.equal(queue.queued, 6);
    release();
    await Promise.all([first, ...waiting]);
    assert.deepEqual(order, ['a0', 'b2', 'c3', 'a1', 'b4', 'a5']);
  });

  test('a newcomer does not jump ahead of keys already waiting', async () => {
    const queue = new FairQueue(1);
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    const first = queue.run('x', async () => { await gate; order.push('x'); });
    const waiting = queue.run('a', async () => { order.push('a'); });
    release();
    // x is finishing; a waits; y arrives now and must queue behind a
    const late = queue.run('y', async () => { order.push('y'); });
    await Promise.all([first, waiting, late]);
    assert.deepEqual(order, ['x', 'a', 'y']);
  });
});
