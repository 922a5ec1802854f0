// The central directory read from hostile bytes: every record is written here by hand, field by
// field, so each malformed form (a lying comment length, a ZIP64 locator pointing anywhere, a
// directory running past its end, a truncated extra field) reaches the parser as an attacker
// would send it. Each refusal is told apart by its detail.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { locateCentralDirectory, parseCentralDirectory } from '../../lib/zip/central-directory.ts';

const TOO_BIG = 2n ** 53n; // one past Number.MAX_SAFE_INTEGER

interface EndRecord {
  disk?: number; directoryDisk?: number; entriesOnDisk?: number; entryCount?: number;
  size?: number; offset?: number; comment?: Buffer; commentLength?: number;
}

function endRecord(r: EndRecord = {}): Buffer {
  const comment = r.comment ?? Buffer.alloc(0);
  const b = Buffer.alloc(22);
  b.writeUInt32LE(0x06054b50, 0);
  b.writeUInt16LE(r.disk ?? 0, 4);
  b.writeUInt16LE(r.directoryDisk ?? 0, 6);
  b.writeUInt16LE(r.entriesOnDisk ?? r.entryCount ?? 0, 8);
  b.writeUInt16LE(r.entryCount ?? 0, 10);
  b.writeUInt32LE(r.size ?? 0, 12);
  b.writeUInt32LE(r.offset ?? 0, 16);
  b.writeUInt16LE(r.commentLength ?? comment.length, 20);
  return Buffer.concat([b, comment]);
}

interface Zip64Record {
  signature?: number; disk?: number; directoryDisk?: number;
  entriesOnDisk?: bigint; entryCount?: bigint; size?: bigint; offset?: bigint;
}

function zip64Record(r: Zip64Record = {}): Buffer {
  const b = Buffer.alloc(56);
  b.writeUInt32LE(r.signature ?? 0x06064b50, 0);
  b.writeBigUInt64LE(44n, 4);
  b.writeUInt16LE(45, 12);
  b.writeUInt16LE(45, 14);
  b.writeUInt32LE(r.disk ?? 0, 16);
  b.writeUInt32LE(r.directoryDisk ?? 0, 20);
  b.writeBigUInt64LE(r.entriesOnDisk ?? r.entryCount ?? 0n, 24);
  b.writeBigUInt64LE(r.entryCount ?? 0n, 32);
  b.writeBigUInt64LE(r.size ?? 0n, 40);
  b.writeBigUInt64LE(r.offset ?? 0n, 48);
  return b;
}

function zip64Locator(recordAt: bigint, diskCount = 1): Buffer {
  const b = Buffer.alloc(20);
  b.writeUInt32LE(0x07064b50, 0);
  b.writeUInt32LE(0, 4);
  b.writeBigUInt64LE(recordAt, 8);
  b.writeUInt32LE(diskCount, 16);
  return b;
}

interface CentralHeader {
  name?: string; signature?: number; flags?: number; method?: number; crc32?: number;
  compressedSize?: number; uncompressedSize?: number; diskStart?: number; localHeaderOffset?: number;
  extra?: Buffer; comment?: Buffer; nameLength?: number;
}

function centralHeader(h: CentralHeader = {}): Buffer {
  const name = Buffer.from(h.name ?? 'a.txt');
  const extra = h.extra ?? Buffer.alloc(0);
  const comment = h.comment ?? Buffer.alloc(0);
  const b = Buffer.alloc(46);
  b.writeUInt32LE(h.signature ?? 0x02014b50, 0);
  b.writeUInt16LE(20, 4);
  b.writeUInt16LE(20, 6);
  b.writeUInt16LE(h.flags ?? 0, 8);
  b.writeUInt16LE(h.method ?? 0, 10);
  b.writeUInt32LE(h.crc32 ?? 0, 16);
  b.writeUInt32LE(h.compressedSize ?? 0, 20);
  b.writeUInt32LE(h.uncompressedSize ?? 0, 24);
  b.writeUInt16LE(h.nameLength ?? name.length, 28);
  b.writeUInt16LE(extra.length, 30);
  b.writeUInt16LE(comment.length, 32);
  b.writeUInt16LE(h.diskStart ?? 0, 34);
  b.writeUInt32LE(h.localHeaderOffset ?? 0, 42);
  return Buffer.concat([b, name, extra, comment]);
}

/** An extra field block: id, length, then the body (the declared length may lie). */
function extraField(id: number, body: Buffer, declaredLength = body.length): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt16LE(id, 0);
  head.writeUInt16LE(declaredLength, 2);
  return Buffer.concat([head, body]);
}

function uint64s(...values: bigint[]): Buffer {
  const b = Buffer.alloc(8 * values.length);
  values.forEach((v, i) => b.writeBigUInt64LE(v, 8 * i));
  return b;
}

/** A directory of these headers after `prefix` bytes of entry data, closed by a plain end record. */
function archive(headers: Buffer[], prefix = Buffer.alloc(0), end: EndRecord = {}): Buffer {
  const directory = Buffer.concat(headers);
  return Buffer.concat([prefix, directory, endRecord({
    entryCount: headers.length, size: directory.length, offset: prefix.length, ...end,
  })]);
}

function refusal(pattern: RegExp) {
  return (err: any) => {
    assert.equal(err.code, 'package_archive_unreadable');
    assert.match(err.detail, pattern);
    return true;
  };
}

function parse(buf: Buffer) {
  return parseCentralDirectory(buf, locateCentralDirectory(buf));
}

describe('ZIP end record: finding it', () => {
  test('21 bytes are too short; 22 bytes of an empty archive are an archive', () => {
    assert.throws(() => locateCentralDirectory(endRecord().subarray(0, 21)), refusal(/too short to be a ZIP archive/));
    assert.deepEqual(locateCentralDirectory(endRecord()), { entryCount: 0, offset: 0, size: 0 });
  });

  test('bytes without an end record are not a ZIP archive', () => {
    assert.throws(() => locateCentralDirectory(Buffer.alloc(200, 0x50)), refusal(/not a ZIP archive \(no end of central directory record\)/));
  });

  test('an end record whose comment length does not reach the end of the file is not taken', () => {
    const lying = endRecord({ comment: Buffer.from('tail'), commentLength: 3 });
    assert.throws(() => locateCentralDirectory(lying), refusal(/no end of central directory record/));
    const short = endRecord({ comment: Buffer.from('tail'), commentLength: 5 });
    assert.throws(() => locateCentralDirectory(short), refusal(/no end of central directory record/));
  });

  test('a fake end signature inside the comment is passed over for the real record', () => {
    const fake = endRecord({ entryCount: 9, size: 1, offset: 1, commentLength: 200 });
    const buf = archive([centralHeader({ name: 'x.txt' })], Buffer.alloc(7), { comment: Buffer.concat([Buffer.from('note '), fake]) });
    assert.deepEqual(locateCentralDirectory(buf), { entryCount: 1, offset: 7, size: 46 + 5 });
  });

  test('the end record is found with the longest comment there is, after a directory', () => {
    const buf = archive([centralHeader({ name: 'y.md' })], Buffer.alloc(3), { comment: Buffer.alloc(0xffff, 0x20) });
    assert.deepEqual(locateCentralDirectory(buf), { entryCount: 1, offset: 3, size: 46 + 4 });
    assert.equal(parse(buf)[0].nameBytes.toString(), 'y.md');
  });

  test('the end record is found with the longest comment at the very start of the file', () => {
    assert.deepEqual(locateCentralDirectory(endRecord({ comment: Buffer.alloc(0xffff, 0x21) })), { entryCount: 0, offset: 0, size: 0 });
  });

  test('of two end records that both end the file by their comment lengths, the one nearest the end is read', () => {
    // the outer record's comment is itself a whole end record (comment length 0)
    const buf = archive([centralHeader({ name: 'x.txt' })], Buffer.alloc(7), { comment: endRecord() });
    assert.deepEqual(locateCentralDirectory(buf), { entryCount: 0, offset: 0, size: 0 });
  });
});

describe('ZIP end record: what it declares', () => {
  test('another disk, another directory disk or a count on this disk that differs are multi-disk', () => {
    const one = [centralHeader()];
    assert.throws(() => locateCentralDirectory(archive(one, undefined, { disk: 1 })), refusal(/^Multi-disk archives are not supported\.$/));
    assert.throws(() => locateCentralDirectory(archive(one, undefined, { directoryDisk: 1 })), refusal(/^Multi-disk/));
    assert.throws(() => locateCentralDirectory(archive(one, undefined, { entriesOnDisk: 0 })), refusal(/^Multi-disk/));
    assert.throws(() => locateCentralDirectory(archive(one, undefined, { entriesOnDisk: 2 })), refusal(/^Multi-disk/));
  });

  test('a ZIP64 marker in any field without a ZIP64 record is refused', () => {
    for (const end of [{ entryCount: 0xffff }, { size: 0xffffffff }, { offset: 0xffffffff }]) {
      const buf = Buffer.concat([Buffer.alloc(30), endRecord({ entriesOnDisk: end.entryCount, ...end })]);
      assert.throws(() => locateCentralDirectory(buf), refusal(/^The archive needs a ZIP64 end record but has none\.$/), JSON.stringify(end));
    }
    // one below each marker is an ordinary value (and here lies outside the file)
    for (const end of [{ size: 0xfffffffe }, { offset: 0xfffffffe }]) {
      assert.throws(() => locateCentralDirectory(endRecord(end)), refusal(/lies outside the archive/), JSON.stringify(end));
    }
  });

  test('a directory ending exactly at the end record is read; one byte further lies outside', () => {
    const headers = [centralHeader({ name: 'p.txt' })];
    const directorySize = 46 + 5;
    assert.deepEqual(locateCentralDirectory(archive(headers, Buffer.alloc(4))), { entryCount: 1, offset: 4, size: directorySize });
    assert.throws(() => locateCentralDirectory(archive(headers, Buffer.alloc(4), { size: directorySize + 1 })),
      refusal(/^The central directory lies outside the archive\.$/));
    assert.throws(() => locateCentralDirectory(archive(headers, Buffer.alloc(4), { offset: 5 })), refusal(/lies outside the archive/));
  });
});

describe('ZIP64 end record', () => {
  /** prefix, directory, ZIP64 record, locator, end record with markers */
  function zip64Archive(record: Zip64Record, opts: { directory?: Buffer; prefix?: number; diskCount?: number; recordAt?: bigint } = {}): Buffer {
    const prefix = Buffer.alloc(opts.prefix ?? 0);
    const directory = opts.directory ?? Buffer.alloc(0);
    const recordAt = prefix.length + directory.length;
    return Buffer.concat([
      prefix, directory, zip64Record(record), zip64Locator(opts.recordAt ?? BigInt(recordAt), opts.diskCount),
      endRecord({ entryCount: 0xffff, size: 0xffffffff, offset: 0xffffffff }),
    ]);
  }

  test('counts, size and offset come from the ZIP64 record, not the 16- and 32-bit markers', () => {
    const directory = Buffer.concat([centralHeader({ name: 'big.bin' }), centralHeader({ name: 'b.txt' })]);
    const buf = zip64Archive({ entryCount: 2n, size: BigInt(directory.length), offset: 10n }, { prefix: 10, directory });
    assert.deepEqual(locateCentralDirectory(buf), { entryCount: 2, offset: 10, size: directory.length });
    assert.deepEqual(parse(buf).map((e) => e.nameBytes.toString()), ['big.bin', 'b.txt']);
  });

  test('entry counts past 16 bits are read in full', () => {
    const buf = zip64Archive({ entryCount: 70000n, size: 0n, offset: 0n });
    assert.equal(locateCentralDirectory(buf).entryCount, 70000);
  });

  test('a locator that names more than one disk is refused; one disk is fine', () => {
    assert.throws(() => locateCentralDirectory(zip64Archive({}, { diskCount: 2 })), refusal(/^Multi-disk archives are not supported\.$/));
    assert.deepEqual(locateCentralDirectory(zip64Archive({}, { diskCount: 1 })), { entryCount: 0, offset: 0, size: 0 });
    assert.deepEqual(locateCentralDirectory(zip64Archive({}, { diskCount: 0 })), { entryCount: 0, offset: 0, size: 0 });
  });

  test('a locator pointing past itself, into itself, or at something else is a corrupt record', () => {
    const corrupt = refusal(/^The ZIP64 end of central directory record is missing or corrupt\.$/);
    assert.throws(() => locateCentralDirectory(zip64Archive({}, { recordAt: 1n })), corrupt);
    assert.throws(() => locateCentralDirectory(zip64Archive({}, { prefix: 8, recordAt: 4n })), corrupt);
    assert.throws(() => locateCentralDirectory(zip64Archive({ signature: 0x06054b50 })), corrupt);
    // the record 1 byte earlier than written: the signature is not there
    assert.throws(() => locateCentralDirectory(zip64Archive({}, { prefix: 1, recordAt: 0n })), corrupt);
  });

  test('a ZIP64 signature so near the locator that the record would overlap it is corrupt', () => {
    // the record's disk fields would be read from the locator's own bytes (its disk count, 1)
    const buf = Buffer.concat([Buffer.from([0x50, 0x4b, 0x06, 0x06]), zip64Locator(0n), endRecord()]);
    assert.throws(() => locateCentralDirectory(buf), refusal(/^The ZIP64 end of central directory record is missing or corrupt\.$/));
  });

  test('a locator at the very start of the file (no room for the record) is corrupt, not ignored', () => {
    const buf = Buffer.concat([zip64Locator(0n), endRecord()]);
    assert.throws(() => locateCentralDirectory(buf), refusal(/ZIP64 end of central directory record is missing or corrupt/));
  });

  test('an end record too near the start for a locator is read without one', () => {
    assert.deepEqual(locateCentralDirectory(Buffer.concat([Buffer.alloc(19), endRecord({ offset: 19 })])), { entryCount: 0, offset: 19, size: 0 });
  });

  test('a ZIP64 record on another disk, or naming another directory disk, is multi-disk', () => {
    assert.throws(() => locateCentralDirectory(zip64Archive({ disk: 1 })), refusal(/^Multi-disk archives are not supported\.$/));
    assert.throws(() => locateCentralDirectory(zip64Archive({ directoryDisk: 1 })), refusal(/^Multi-disk/));
    assert.throws(() => locateCentralDirectory(zip64Archive({ entriesOnDisk: 1n, entryCount: 2n })), refusal(/^Multi-disk/));
  });

  test('64-bit values past the safe integer range are refused by name', () => {
    assert.throws(() => locateCentralDirectory(zip64Archive({}, { recordAt: TOO_BIG })), refusal(/^The archive's ZIP64 end record offset is out of range\.$/));
    assert.throws(() => locateCentralDirectory(zip64Archive({ entriesOnDisk: TOO_BIG, entryCount: 1n })), refusal(/^The archive's entry count is out of range\.$/));
    assert.throws(() => locateCentralDirectory(zip64Archive({ entriesOnDisk: 1n, entryCount: TOO_BIG })), refusal(/^The archive's entry count is out of range\.$/));
    assert.throws(() => locateCentralDirectory(zip64Archive({ size: TOO_BIG })), refusal(/^The archive's central directory size is out of range\.$/));
    assert.throws(() => locateCentralDirectory(zip64Archive({ offset: TOO_BIG })), refusal(/^The archive's central directory offset is out of range\.$/));
    // the largest safe value is a value (here one that lies outside the file)
    assert.throws(() => locateCentralDirectory(zip64Archive({ size: TOO_BIG - 1n })), refusal(/lies outside the archive/));
  });

  test('the directory must end before the ZIP64 record, not before the plain end record', () => {
    const directory = centralHeader({ name: 'q.txt' });
    const fits = zip64Archive({ entryCount: 1n, size: BigInt(directory.length), offset: 0n }, { directory });
    assert.equal(locateCentralDirectory(fits).size, directory.length);
    const over = zip64Archive({ entryCount: 1n, size: BigInt(directory.length + 1), offset: 0n }, { directory });
    assert.throws(() => locateCentralDirectory(over), refusal(/lies outside the archive/));
  });
});

describe('ZIP central headers', () => {
  test('each field is read from its own place', () => {
    const buf = archive([
      centralHeader({
        name: 'dir/file.bin', flags: 0x0808, method: 8, crc32: 0xdeadbeef,
        compressedSize: 1234, uncompressedSize: 56789, localHeaderOffset: 0, comment: Buffer.from('hello'),
      }),
      centralHeader({ name: 'b', flags: 1, method: 0, crc32: 7, compressedSize: 3, uncompressedSize: 3, localHeaderOffset: 99 }),
    ]);
    const [first, second] = parse(buf);
    assert.equal(first.nameBytes.toString(), 'dir/file.bin');
    assert.deepEqual({ ...first, nameBytes: undefined }, {
      nameBytes: undefined, flags: 0x0808, method: 8, crc32: 0xdeadbeef, compressedSize: 1234, uncompressedSize: 56789, localHeaderOffset: 0,
    });
    assert.deepEqual({ ...second, nameBytes: second.nameBytes.toString() }, {
      nameBytes: 'b', flags: 1, method: 0, crc32: 7, compressedSize: 3, uncompressedSize: 3, localHeaderOffset: 99,
    });
  });

  test('a header after one with an extra field and a comment is found past both', () => {
    const buf = archive([
      centralHeader({ name: 'one', extra: extraField(0x5455, Buffer.alloc(5, 1)), comment: Buffer.from('c') }),
      centralHeader({ name: 'two' }),
    ]);
    assert.deepEqual(parse(buf).map((e) => e.nameBytes.toString()), ['one', 'two']);
  });

  test('more entries declared than the directory holds is corrupt', () => {
    const headers = [centralHeader({ name: 'only' })];
    const buf = archive(headers, Buffer.alloc(0), { entryCount: 2 });
    assert.throws(() => parse(buf), refusal(/^The central directory is corrupt\.$/));
  });

  test('a header that would be read past the directory size is corrupt even when bytes follow', () => {
    const header = centralHeader({ name: 'n' });
    // the declared size cuts the header short by one byte; the end record's bytes follow it
    const buf = archive([header], Buffer.alloc(0), { size: header.length - 1 });
    assert.throws(() => parse(buf), refusal(/^The central directory is corrupt\.$/));
    const fixed = Buffer.concat([centralHeader({ name: '' }).subarray(0, 46), endRecord({ entryCount: 1, size: 45 })]);
    assert.throws(() => parse(fixed), refusal(/^The central directory is corrupt\.$/));
    const exact = Buffer.concat([centralHeader({ name: '' }), endRecord({ entryCount: 1, size: 46 })]);
    assert.equal(parse(exact)[0].nameBytes.length, 0);
  });

  test('a directory too small for one header is corrupt, not read past the end of the file', () => {
    // a header's signature alone, then the end record: the fixed fields would lie past the file's end
    const buf = Buffer.concat([Buffer.from([0x50, 0x4b, 0x01, 0x02]), endRecord({ entryCount: 1, size: 4 })]);
    assert.throws(() => parse(buf), refusal(/^The central directory is corrupt\.$/));
  });

  test('a header without its signature is corrupt', () => {
    assert.throws(() => parse(archive([centralHeader({ signature: 0x04034b50 })])), refusal(/^The central directory is corrupt\.$/));
  });

  test('a name, extra field or comment running past the directory is corrupt; ending on it is fine', () => {
    const longName = centralHeader({ name: 'abc', nameLength: 4 });
    assert.throws(() => parse(archive([longName])), refusal(/^The central directory is corrupt\.$/));
    const withComment = centralHeader({ name: 'abc', comment: Buffer.from('zz') });
    assert.throws(() => parse(archive([withComment], Buffer.alloc(0), { size: withComment.length - 1 })), refusal(/corrupt/));
    assert.equal(parse(archive([withComment])).length, 1);
  });

  test('an entry that starts on another disk is multi-disk', () => {
    assert.throws(() => parse(archive([centralHeader({ diskStart: 1 })])), refusal(/^Multi-disk archives are not supported\.$/));
  });
});

describe('ZIP64 extra fields of a central header', () => {
  const M = 0xffffffff;
  function only(h: CentralHeader) {
    return parse(archive([centralHeader(h)]))[0];
  }

  test('the size, compressed size and offset are taken in that order, each only when marked', () => {
    const all = only({ uncompressedSize: M, compressedSize: M, localHeaderOffset: M, extra: extraField(1, uint64s(5000000000n, 4000000000n, 3000000000n)) });
    assert.deepEqual([all.uncompressedSize, all.compressedSize, all.localHeaderOffset], [5000000000, 4000000000, 3000000000]);

    const sizeOnly = only({ uncompressedSize: M, compressedSize: 10, localHeaderOffset: 20, extra: extraField(1, uint64s(6000000000n)) });
    assert.deepEqual([sizeOnly.uncompressedSize, sizeOnly.compressedSize, sizeOnly.localHeaderOffset], [6000000000, 10, 20]);

    const compressedOnly = only({ uncompressedSize: 11, compressedSize: M, localHeaderOffset: 21, extra: extraField(1, uint64s(7000000000n)) });
    assert.deepEqual([compressedOnly.uncompressedSize, compressedOnly.compressedSize, compressedOnly.localHeaderOffset], [11, 7000000000, 21]);

    const offsetOnly = only({ uncompressedSize: 12, compressedSize: 13, localHeaderOffset: M, extra: extraField(1, uint64s(8000000000n)) });
    assert.deepEqual([offsetOnly.uncompressedSize, offsetOnly.compressedSize, offsetOnly.localHeaderOffset], [12, 13, 8000000000]);

    const twoOfThree = only({ uncompressedSize: 14, compressedSize: M, localHeaderOffset: M, extra: extraField(1, uint64s(9n, 10n)) });
    assert.deepEqual([twoOfThree.uncompressedSize, twoOfThree.compressedSize, twoOfThree.localHeaderOffset], [14, 9, 10]);
  });

  test('without markers the extra field is not read, however malformed', () => {
    const e = only({ uncompressedSize: 1, compressedSize: 2, localHeaderOffset: 3, extra: extraField(1, Buffer.alloc(2), 40) });
    assert.deepEqual([e.uncompressedSize, e.compressedSize, e.localHeaderOffset], [1, 2, 3]);
  });

  test('other extra fields before the ZIP64 one are stepped over', () => {
    const extra = Buffer.concat([extraField(0x5455, Buffer.alloc(5, 9)), extraField(0x7875, Buffer.alloc(11, 8)), extraField(1, uint64s(123456789012n))]);
    assert.equal(only({ uncompressedSize: M, extra }).uncompressedSize, 123456789012);
  });

  test('a marked entry without a ZIP64 field, or with no extra at all, is refused', () => {
    const none = refusal(/^An entry needs a ZIP64 extra field but has none\.$/);
    assert.throws(() => only({ uncompressedSize: M }), none);
    assert.throws(() => only({ compressedSize: M, extra: extraField(0x5455, Buffer.alloc(5)) }), none);
    // three bytes are no extra field header at all
    assert.throws(() => only({ localHeaderOffset: M, extra: Buffer.from([1, 0, 8]) }), none);
  });

  test('a ZIP64 field whose declared length runs past the extra block is not read', () => {
    // it declares 16 bytes and holds 8: reading those 8 would accept a truncated record
    assert.throws(() => only({ uncompressedSize: M, extra: extraField(1, uint64s(77n), 16) }), refusal(/^An entry needs a ZIP64 extra field but has none\.$/));
  });

  test('a ZIP64 field too short for the values marked is refused', () => {
    const short = refusal(/^A ZIP64 extra field is too short\.$/);
    assert.throws(() => only({ uncompressedSize: M, compressedSize: M, extra: extraField(1, uint64s(1n)) }), short);
    assert.throws(() => only({ uncompressedSize: M, extra: extraField(1, Buffer.alloc(7)) }), short);
    // an empty ZIP64 field, the only thing in the block
    assert.throws(() => only({ uncompressedSize: M, extra: extraField(1, Buffer.alloc(0)) }), short);
  });

  test('64-bit values past the safe integer range are refused by name', () => {
    assert.throws(() => only({ uncompressedSize: M, extra: extraField(1, uint64s(TOO_BIG)) }), refusal(/^The archive's declared size is out of range\.$/));
    assert.throws(() => only({ compressedSize: M, extra: extraField(1, uint64s(TOO_BIG)) }), refusal(/^The archive's compressed size is out of range\.$/));
    assert.throws(() => only({ localHeaderOffset: M, extra: extraField(1, uint64s(TOO_BIG)) }), refusal(/^The archive's entry offset is out of range\.$/));
    assert.equal(only({ uncompressedSize: M, extra: extraField(1, uint64s(TOO_BIG - 1n)) }).uncompressedSize, Number.MAX_SAFE_INTEGER);
  });
});
