// Locates and parses the central directory: the archive's own table of contents. Nothing is
// inflated here, so the caller can judge the declared sizes before spending memory on them.
import { problem } from '../problem.ts';
import {
  CENTRAL_HEADER_SIZE, END_OF_CENTRAL_DIRECTORY_SIZE, MAX_COMMENT_LENGTH, SIG_CENTRAL_HEADER,
  SIG_END_OF_CENTRAL_DIRECTORY, SIG_ZIP64_END_OF_CENTRAL_DIRECTORY, SIG_ZIP64_LOCATOR,
  ZIP64_END_OF_CENTRAL_DIRECTORY_SIZE, ZIP64_EXTRA_ID, ZIP64_LOCATOR_SIZE, ZIP64_MARKER_16,
  ZIP64_MARKER_32,
} from './format.ts';

export interface CentralDirectoryEntry {
  nameBytes: Buffer;
  flags: number;
  method: number;
  crc32: number;
  compressedSize: number;
  uncompressedSize: number;
  localHeaderOffset: number;
}

export interface CentralDirectoryLocation {
  entryCount: number;
  offset: number;
  size: number;
}

export function unreadable(detail: string) {
  return problem('package_archive_unreadable', { detail });
}

function readUint64(buf: Buffer, at: number, what: string): number {
  const value = buf.readBigUInt64LE(at);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw unreadable(`The archive's ${what} is out of range.`);
  return Number(value);
}

/** Finds the end record (and its ZIP64 twin where present) and returns where the directory lies. */
export function locateCentralDirectory(buf: Buffer): CentralDirectoryLocation {
  if (buf.length < END_OF_CENTRAL_DIRECTORY_SIZE) throw unreadable('The file is too short to be a ZIP archive.');

  // The end record is followed only by its comment, so scan backwards over at most 64 KiB.
  let eocd = -1;
  const lowest = Math.max(0, buf.length - END_OF_CENTRAL_DIRECTORY_SIZE - MAX_COMMENT_LENGTH);
  for (let at = buf.length - END_OF_CENTRAL_DIRECTORY_SIZE; at >= lowest; at--) {
    if (buf.readUInt32LE(at) !== SIG_END_OF_CENTRAL_DIRECTORY) continue;
    if (at + END_OF_CENTRAL_DIRECTORY_SIZE + buf.readUInt16LE(at + 20) === buf.length) {
      eocd = at;
      break;
    }
  }
  if (eocd < 0) throw unreadable('The file is not a ZIP archive (no end of central directory record).');

  const disk = buf.readUInt16LE(eocd + 4);
  const directoryDisk = buf.readUInt16LE(eocd + 6);
  let entriesOnDisk = buf.readUInt16LE(eocd + 8);
  let entryCount = buf.readUInt16LE(eocd + 10);
  let size = buf.readUInt32LE(eocd + 12);
  let offset = buf.readUInt32LE(eocd + 16);
  let directoryEnd = eocd;

  const locatorAt = eocd - ZIP64_LOCATOR_SIZE;
  if (locatorAt >= 0 && buf.readUInt32LE(locatorAt) === SIG_ZIP64_LOCATOR) {
    const recordAt = readUint64(buf, locatorAt + 8, 'ZIP64 end record offset');
    if (buf.readUInt32LE(locatorAt + 16) > 1) throw unreadable('Multi-disk archives are not supported.');
    if (recordAt + ZIP64_END_OF_CENTRAL_DIRECTORY_SIZE > locatorAt
      || buf.readUInt32LE(recordAt) !== SIG_ZIP64_END_OF_CENTRAL_DIRECTORY) {
      throw unreadable('The ZIP64 end of central directory record is missing or corrupt.');
    }
    if (buf.readUInt32LE(recordAt + 16) !== 0 || buf.readUInt32LE(recordAt + 20) !== 0) {
      throw unreadable('Multi-disk archives are not supported.');
    }
    entriesOnDisk = readUint64(buf, recordAt + 24, 'entry count');
    entryCount = readUint64(buf, recordAt + 32, 'entry count');
    size = readUint64(buf, recordAt + 40, 'central directory size');
    offset = readUint64(buf, recordAt + 48, 'central directory offset');
    directoryEnd = recordAt;
  } else if (disk !== 0 || directoryDisk !== 0) {
    throw unreadable('Multi-disk archives are not supported.');
  } else if (entryCount === ZIP64_MARKER_16 || size === ZIP64_MARKER_32 || offset === ZIP64_MARKER_32) {
    throw unreadable('The archive needs a ZIP64 end record but has none.');
  }

  if (entriesOnDisk !== entryCount) throw unreadable('Multi-disk archives are not supported.');
  if (offset + size > directoryEnd) throw unreadable('The central directory lies outside the archive.');
  return { entryCount, offset, size };
}

/** Parses every central header. Call only after the entry count was judged against the limits. */
export function parseCentralDirectory(buf: Buffer, where: CentralDirectoryLocation): CentralDirectoryEntry[] {
  const entries: CentralDirectoryEntry[] = [];
  const end = where.offset + where.size;
  let at = where.offset;
  for (let i = 0; i < where.entryCount; i++) {
    if (at + CENTRAL_HEADER_SIZE > end || buf.readUInt32LE(at) !== SIG_CENTRAL_HEADER) {
      throw unreadable('The central directory is corrupt.');
    }
    const nameLength = buf.readUInt16LE(at + 28);
    const extraLength = buf.readUInt16LE(at + 30);
    const commentLength = buf.readUInt16LE(at + 32);
    const next = at + CENTRAL_HEADER_SIZE + nameLength + extraLength + commentLength;
    if (next > end) throw unreadable('The central directory is corrupt.');

    const entry: CentralDirectoryEntry = {
      nameBytes: buf.subarray(at + CENTRAL_HEADER_SIZE, at + CENTRAL_HEADER_SIZE + nameLength),
      flags: buf.readUInt16LE(at + 8),
      method: buf.readUInt16LE(at + 10),
      crc32: buf.readUInt32LE(at + 16),
      compressedSize: buf.readUInt32LE(at + 20),
      uncompressedSize: buf.readUInt32LE(at + 24),
      localHeaderOffset: buf.readUInt32LE(at + 42),
    };
    const diskStart = buf.readUInt16LE(at + 34);
    const extra = buf.subarray(at + CENTRAL_HEADER_SIZE + nameLength, at + CENTRAL_HEADER_SIZE + nameLength + extraLength);
    if (diskStart !== 0) throw unreadable('Multi-disk archives are not supported.');
    applyZip64Extra(entry, extra);
    entries.push(entry);
    at = next;
  }
  return entries;
}

/** Replaces the 32-bit fields marked 0xFFFFFFFF with their 64-bit values, in the order APPNOTE fixes. */
function applyZip64Extra(entry: CentralDirectoryEntry, extra: Buffer): void {
  const wantsUncompressed = entry.uncompressedSize === ZIP64_MARKER_32;
  const wantsCompressed = entry.compressedSize === ZIP64_MARKER_32;
  const wantsOffset = entry.localHeaderOffset === ZIP64_MARKER_32;
  if (!wantsUncompressed && !wantsCompressed && !wantsOffset) return;

  let at = 0;
  while (at + 4 <= extra.length) {
    const id = extra.readUInt16LE(at);
    const length = extra.readUInt16LE(at + 2);
    const body = extra.subarray(at + 4, at + 4 + length);
    if (body.length !== length) break;
    if (id === ZIP64_EXTRA_ID) {
      let field = 0;
      const take = (what: string): number => {
        if (field + 8 > body.length) throw unreadable('A ZIP64 extra field is too short.');
        const value = readUint64(body, field, what);
        field += 8;
        return value;
      };
      if (wantsUncompressed) entry.uncompressedSize = take('declared size');
      if (wantsCompressed) entry.compressedSize = take('compressed size');
      if (wantsOffset) entry.localHeaderOffset = take('entry offset');
      return;
    }
    at += 4 + length;
  }
  throw unreadable('An entry needs a ZIP64 extra field but has none.');
}
