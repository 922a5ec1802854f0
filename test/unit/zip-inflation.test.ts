import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import zlib from 'node:zlib';
import { FairQueue } from '../../lib/zip/inflate-queue.ts';
import { createHash } from 'node:crypto';
import { sha256Integrity } from '../../lib/afps/integrity.ts';
import { digestOfRead, inflatedBytesTotal, readZip, type ZipLimits } from '../../lib/zip/read-zip.ts';
import { encodeZip, writeZip, type RawZipEntry } from '../../lib/zip/write-zip.ts';

const MIB = 1024 * 1024;
const LIMITS: ZipLimits = { maxEntries: 2000, maxEntryBytes: 50 * MIB, maxTotalBytes: 200 * MIB };

/** A raw deflate stream of `mebibytes` MiB of zeros, built from one repeated 1 MiB block. */
function deflatedZeros(mebibytes: number): Buffer {
  const block = zlib.deflateRawSync(Buffer.alloc(MIB), { level: 9, finishFlush: zlib.constants.Z_SYNC_FLUSH });
  return Buffer.concat([...Array.from({ length: mebibytes }, () => block), Buffer.from([0x03, 0x00])]);
}

function zerosEntry(name: string, mebibytes: number, declared = mebibytes * MIB): RawZipEntry {
  return { name, method: 8, data: deflatedZeros(mebibytes), crc32: zlib.crc32(Buffer.alloc(mebibytes * MIB)), uncompressedSize: declared };
}

/** Where the n-th local header, and the n-th central header, of an encodeZip archive start. */
function headerOffsets(archive: Buffer): { local: number[]; central: number[] } {
  const local: number[] = [];
  const central: number[] = [];
  for (let at = 0; at + 4 <= archive.length; at++) {
    const sig = archive.readUInt32LE(at);
    if (sig === 0x04034b50) local.push(at);
    if (sig === 0x02014b50) central.push(at);
  }
  return { local, central };
}

describe('ZIP inflation', () => {
  test('four 50 MiB entries of zeros inflate while the event loop keeps turning', async () => {
    const archive = encodeZip([0, 1, 2, 3].map((i) => zerosEntry(`zeros-${i}.bin`, 50)));
    // what one entry costs the thread that inflates it: reading on the event loop stalls it this long per entry
    const started = performance.now();
    zlib.inflateRawSync(deflatedZeros(50));
    const blockMs = performance.now() - started;

    const gaps: number[] = [];
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      gaps.push(now - last);
      last = now;
    }, 2);
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    const files = await readZip(archive, LIMITS);
    delay.disable();
    clearInterval(ticker);
    assert.equal(files.size, 4);
    assert.equal(files.get('zeros-3.bin')!.length, 50 * MIB);
    const stalls = gaps.filter((gap) => gap > blockMs / 2);
    const summary = `one entry inflates in ${blockMs.toFixed(0)} ms; ${gaps.length} ticks, max gap ${Math.max(...gaps).toFixed(1)} ms, `
      + `event-loop delay p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms, max ${(delay.max / 1e6).toFixed(1)} ms`;
    // inflating on the event loop stalls it once per entry; one stall is allowed for a busy machine
    assert.ok(stalls.length <= 1, `${stalls.length} stalls over ${(blockMs / 2).toFixed(0)} ms: ${summary}`);
    assert.ok(gaps.length >= 8, summary);
  });

  test('each file read carries the SHA-256 of its content, stored or deflated, so it is not hashed again', async () => {
    const content = Buffer.from('x'.repeat(3 * MIB) + 'tail');
    const archive = encodeZip([
      { name: 'stored.txt', method: 0, data: content, crc32: zlib.crc32(content), uncompressedSize: content.length },
      { name: 'deflated.txt', method: 8, data: zlib.deflateRawSync(content), crc32: zlib.crc32(content), uncompressedSize: content.length },
    ]);
    const expected = `sha256-${createHash('sha256').update(content).digest('base64')}`;
    const files = await readZip(archive, LIMITS);
    for (const name of ['stored.txt', 'deflated.txt']) {
      assert.equal(digestOfRead(files.get(name)!), expected, name);
      assert.equal(sha256Integrity(files.get(name)!), expected, name);
    }
    assert.equal(digestOfRead(Buffer.from(content)), undefined, 'a buffer not read from an archive has none');
  });

  test('an entry lying about its size stops inflating at the first chunk past the declaration', async () => {
    const archive = encodeZip([zerosEntry('liar.bin', 40, 1024)]);
    const before = inflatedBytesTotal();
    await assert.rejects(() => readZip(archive, LIMITS), (err: any) => {
      assert.equal(err.code, 'package_archive_unreadable');
      assert.match(err.detail, /expands past its declared size of 1024 bytes/);
      return true;
    });
    const inflated = inflatedBytesTotal() - before;
    assert.ok(inflated <= 2 * MIB, `${inflated} bytes were inflated for a 1 KiB declaration`);
  });

  test('a total over the limit is refused before a byte is inflated, naming the setting', async () => {
    const archive = encodeZip([zerosEntry('a.bin', 3), zerosEntry('b.bin', 3)]);
    const before = inflatedBytesTotal();
    await assert.rejects(() => readZip(archive, { ...LIMITS, maxTotalBytes: 5 * MIB, totalSetting: 'PACKAGE_MAX_INFLATED_BYTES' }), (err: any) => {
      assert.equal(err.code, 'package_archive_unreadable');
      assert.match(err.detail, /at most 5242880 are accepted \(PACKAGE_MAX_INFLATED_BYTES\)/);
      return true;
    });
    assert.equal(inflatedBytesTotal() - before, 0);
  });

  test('each group of entries (a bundle package) has its own cap; other groups are unaffected', async () => {
    const group = { depth: 4, maxBytes: 4 * MIB, setting: 'PACKAGE_MAX_INFLATED_BYTES' };
    const fits = encodeZip([zerosEntry('packages/@a/one/1.0.0/x.bin', 3), zerosEntry('packages/@a/two/1.0.0/x.bin', 3)]);
    assert.equal((await readZip(fits, { ...LIMITS, group })).size, 2);

    const over = encodeZip([zerosEntry('packages/@a/one/1.0.0/x.bin', 3), zerosEntry('packages/@a/one/1.0.0/y.bin', 3)]);
    const before = inflatedBytesTotal();
    await assert.rejects(() => readZip(over, { ...LIMITS, group }), (err: any) => {
      assert.equal(err.code, 'package_archive_unreadable');
      assert.match(err.detail, /"packages\/@a\/one\/1\.0\.0\/".*per package \(PACKAGE_MAX_INFLATED_BYTES\)/);
      return true;
    });
    assert.equal(inflatedBytesTotal() - before, 0, 'refused on the declared sizes');
  });

  test('a local header naming another file than its central header is refused before inflating', async () => {
    const archive = writeZip([['a.txt', Buffer.from('first')], ['b.txt', Buffer.from('second')]]);
    const { local } = headerOffsets(archive);
    archive[local[1] + 30] = 'c'.charCodeAt(0); // b.txt's local name becomes c.txt
    await assert.rejects(() => readZip(archive, LIMITS), (err: any) => {
      assert.equal(err.code, 'package_archive_unreadable');
      assert.match(err.detail, /"b\.txt" has a local header for another name/);
      return true;
    });
  });

  test('an entry flagged encrypted (general purpose bit 0) is refused, whichever header says so', async () => {
    for (const where of ['central', 'local'] as const) {
      const archive = writeZip([['a.txt', Buffer.from('plain')], ['secret.txt', Buffer.from('hidden')]]);
      const at = headerOffsets(archive)[where][1] + (where === 'central' ? 8 : 6);
      archive.writeUInt16LE(archive.readUInt16LE(at) | 0x0001, at);
      await assert.rejects(() => readZip(archive, LIMITS), (err: any) => {
        assert.equal(err.code, 'package_archive_unreadable', where);
        assert.match(err.detail, /"secret\.txt" is encrypted/, where);
        return true;
      });
    }
  });
});

describe('inflation queue', () => {
  test('waiting keys are served in turn: a late tenant does not wait behind a busy one', async () => {
    const queue = new FairQueue(1);
    const order: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    const busy = queue.run('a', async () => { order.push('a0'); await gate; });
    const tasks = [1, 2, 3].map((i) => queue.run('a', async () => { order.push(`a${i}`); }));
    tasks.push(queue.run('b', async () => { order.push('b0'); }));
    assert.equal(queue.queued, 4);
    release();
    await Promise.all([busy, ...tasks]);
    assert.deepEqual(order, ['a0', 'a1', 'b0', 'a2', 'a3']);
  });
});
