// A deterministic ZIP writer: the same files always give the same bytes (names in UTF-8 byte
// order, one fixed timestamp, fixed attributes), so archives and bundles can be compared and hashed.
import zlib from 'node:zlib';
import { problem } from '../problem.ts';
import { classifyEntryName, compareEntryNames, printableEntryName } from './entry-name.ts';
import {
  CENTRAL_HEADER_SIZE, END_OF_CENTRAL_DIRECTORY_SIZE, FLAG_UTF8_NAME, LOCAL_HEADER_SIZE,
  METHOD_DEFLATE, SIG_CENTRAL_HEADER, SIG_END_OF_CENTRAL_DIRECTORY, SIG_LOCAL_HEADER,
  SIG_ZIP64_END_OF_CENTRAL_DIRECTORY, SIG_ZIP64_LOCATOR, ZIP64_END_OF_CENTRAL_DIRECTORY_SIZE,
  ZIP64_EXTRA_ID, ZIP64_LOCATOR_SIZE, ZIP64_MARKER_16, ZIP64_MARKER_32,
} from './format.ts';

/** One entry exactly as it goes on disk: the writer trusts every field. */
export interface RawZipEntry {
  name: string;
  method: number;
  /** the bytes as stored (already deflated for method 8) */
  data: Buffer;
  crc32: number;
  /** the size written in the headers; a test may make it lie */
  uncompressedSize: number;
}

export interface EncodeZipOptions {
  /** write ZIP64 end records even when the archive is small */
  zip64?: boolean;
}

// 1980-01-01 00:00:00, the earliest DOS date: archives carry no build time.
const DOS_TIME = 0;
const DOS_DATE = (0 << 9) | (1 << 5) | 1;
const VERSION_NEEDED = 20;
const VERSION_NEEDED_ZIP64 = 45;
const VERSION_MADE_BY_UNIX = (3 << 8) | VERSION_NEEDED_ZIP64;
const REGULAR_FILE_MODE = 0o100644;

export function writeZip(files: Map<string, Buffer> | Array<[string, Buffer]>): Buffer {
  const list = [...files];
  const names = new Set<string>();
  for (const [name] of list) {
    const verdict = classifyEntryName(name);
    if (verdict.kind !== 'file') {
      const reason = verdict.kind === 'refuse' ? verdict.reason : 'directories and __MACOSX entries are not written';
      throw problem('invalid_path', { detail: `File name ${printableEntryName(name)} is refused: ${reason}.` });
    }
    if (names.has(name)) throw problem('invalid_path', { detail: `File name ${printableEntryName(name)} appears more than once.` });
    names.add(name);
  }
  list.sort(([a], [b]) => compareEntryNames(a, b));
  return encodeZip(list.map(([name, content]) => ({
    name,
    method: METHOD_DEFLATE,
    data: zlib.deflateRawSync(content, { level: 9 }),
    crc32: zlib.crc32(content),
    uncompressedSize: content.length,
  })));
}

/** Lays entries out in the given order. No name checks: writeZip is the safe entry point. */
export function encodeZip(entries: RawZipEntry[], options: EncodeZipOptions = {}): Buffer {
  const chunks: Buffer[] = [];
  const centralHeaders: Buffer[] = [];
  let offset = 0;

  for (const entry of entries) {
    const nameBytes = Buffer.from(entry.name, 'utf8');
    const needsZip64 = entry.uncompressedSize >= ZIP64_MARKER_32 || entry.data.length >= ZIP64_MARKER_32
      || offset >= ZIP64_MARKER_32;
    const sizesExtra = needsZip64 ? zip64Extra([entry.uncompressedSize, entry.data.length]) : Buffer.alloc(0);
    const versionNeeded = needsZip64 ? VERSION_NEEDED_ZIP64 : VERSION_NEEDED;

    const local = Buffer.alloc(LOCAL_HEADER_SIZE);
    local.writeUInt32LE(SIG_LOCAL_HEADER, 0);
    local.writeUInt16LE(versionNeeded, 4);
    local.writeUInt16LE(FLAG_UTF8_NAME, 6);
    local.writeUInt16LE(entry.method, 8);
    local.writeUInt16LE(DOS_TIME, 10);
    local.writeUInt16LE(DOS_DATE, 12);
    local.writeUInt32LE(entry.crc32 >>> 0, 14);
    local.writeUInt32LE(needsZip64 ? ZIP64_MARKER_32 : entry.data.length, 18);
    local.writeUInt32LE(needsZip64 ? ZIP64_MARKER_32 : entry.uncompressedSize, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    local.writeUInt16LE(sizesExtra.length, 28);
    chunks.push(local, nameBytes, sizesExtra, entry.data);

    const centralExtra = needsZip64 ? zip64Extra([entry.uncompressedSize, entry.data.length, offset]) : Buffer.alloc(0);
    const central = Buffer.alloc(CENTRAL_HEADER_SIZE);
    central.writeUInt32LE(SIG_CENTRAL_HEADER, 0);
    central.writeUInt16LE(VERSION_MADE_BY_UNIX, 4);
    central.writeUInt16LE(versionNeeded, 6);
    central.writeUInt16LE(FLAG_UTF8_NAME, 8);
    central.writeUInt16LE(entry.method, 10);
    central.writeUInt16LE(DOS_TIME, 12);
    central.writeUInt16LE(DOS_DATE, 14);
    central.writeUInt32LE(entry.crc32 >>> 0, 16);
    central.writeUInt32LE(needsZip64 ? ZIP64_MARKER_32 : entry.data.length, 20);
    central.writeUInt32LE(needsZip64 ? ZIP64_MARKER_32 : entry.uncompressedSize, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt16LE(centralExtra.length, 30);
    central.writeUInt32LE((REGULAR_FILE_MODE << 16) >>> 0, 38);
    central.writeUInt32LE(needsZip64 ? ZIP64_MARKER_32 : offset, 42);
    centralHeaders.push(central, nameBytes, centralExtra);

    offset += LOCAL_HEADER_SIZE + nameBytes.length + sizesExtra.length + entry.data.length;
  }

  const directoryOffset = offset;
  const directorySize = centralHeaders.reduce((sum, b) => sum + b.length, 0);
  chunks.push(...centralHeaders);

  const zip64 = options.zip64 === true || entries.length >= ZIP64_MARKER_16
    || directoryOffset >= ZIP64_MARKER_32 || directorySize >= ZIP64_MARKER_32;
  if (zip64) chunks.push(...zip64EndRecords(entries.length, directorySize, directoryOffset));

  const end = Buffer.alloc(END_OF_CENTRAL_DIRECTORY_SIZE);
  end.writeUInt32LE(SIG_END_OF_CENTRAL_DIRECTORY, 0);
  end.writeUInt16LE(zip64 ? ZIP64_MARKER_16 : entries.length, 8);
  end.writeUInt16LE(zip64 ? ZIP64_MARKER_16 : entries.length, 10);
  end.writeUInt32LE(zip64 ? ZIP64_MARKER_32 : directorySize, 12);
  end.writeUInt32LE(zip64 ? ZIP64_MARKER_32 : directoryOffset, 16);
  chunks.push(end);
  return Buffer.concat(chunks);
}

function zip64Extra(values: number[]): Buffer {
  const extra = Buffer.alloc(4 + 8 * values.length);
  extra.writeUInt16LE(ZIP64_EXTRA_ID, 0);
  extra.writeUInt16LE(8 * values.length, 2);
  values.forEach((value, i) => extra.writeBigUInt64LE(BigInt(value), 4 + 8 * i));
  return extra;
}

function zip64EndRecords(entryCount: number, directorySize: number, directoryOffset: number): Buffer[] {
  const record = Buffer.alloc(ZIP64_END_OF_CENTRAL_DIRECTORY_SIZE);
  record.writeUInt32LE(SIG_ZIP64_END_OF_CENTRAL_DIRECTORY, 0);
  record.writeBigUInt64LE(BigInt(ZIP64_END_OF_CENTRAL_DIRECTORY_SIZE - 12), 4);
  record.writeUInt16LE(VERSION_MADE_BY_UNIX, 12);
  record.writeUInt16LE(VERSION_NEEDED_ZIP64, 14);
  record.writeBigUInt64LE(BigInt(entryCount), 24);
  record.writeBigUInt64LE(BigInt(entryCount), 32);
  record.writeBigUInt64LE(BigInt(directorySize), 40);
  record.writeBigUInt64LE(BigInt(directoryOffset), 48);

  const locator = Buffer.alloc(ZIP64_LOCATOR_SIZE);
  locator.writeUInt32LE(SIG_ZIP64_LOCATOR, 0);
  locator.writeBigUInt64LE(BigInt(directoryOffset + directorySize), 8);
  locator.writeUInt32LE(1, 16);
  return [record, locator];
}
