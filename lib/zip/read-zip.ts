// A ZIP reader for untrusted uploads. Every limit is judged on the declared sizes before any
// entry is inflated, and each inflate is capped at the entry's declared size because the
// declared size may lie.
//
// Error codes: a limit crossed, an archive that lies about its sizes, or one that cannot be
// parsed are all package_archive_unreadable (422): the archive as a whole is unusable. One file
// declared larger than the per-file limit is file_too_large (400), which the spec names for ZIP
// imports. A name that could escape the package folder, or two entries with one name, is
// invalid_path (400).
import zlib from 'node:zlib';
import { problem } from '../problem.ts';
import { locateCentralDirectory, parseCentralDirectory, unreadable, type CentralDirectoryEntry } from './central-directory.ts';
import { classifyEntryName, printableEntryName } from './entry-name.ts';
import {
  FLAG_ENCRYPTED, FLAG_STRONG_ENCRYPTION, LOCAL_HEADER_SIZE, METHOD_DEFLATE, METHOD_STORED,
  SIG_LOCAL_HEADER,
} from './format.ts';

export interface ZipLimits {
  /** entries in the central directory, directories and skipped entries included */
  maxEntries: number;
  /** declared uncompressed size of one file */
  maxEntryBytes: number;
  /** declared uncompressed size of all files together */
  maxTotalBytes: number;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function readZip(bytes: Buffer, limits: ZipLimits): Map<string, Buffer> {
  const where = locateCentralDirectory(bytes);
  if (where.entryCount > limits.maxEntries) {
    throw unreadable(`The archive holds ${where.entryCount} entries; at most ${limits.maxEntries} are accepted.`);
  }

  const kept: Array<{ name: string; entry: CentralDirectoryEntry }> = [];
  const seen = new Set<string>();
  let declaredTotal = 0;
  for (const entry of parseCentralDirectory(bytes, where)) {
    const name = decodeName(entry.nameBytes);
    const verdict = classifyEntryName(name);
    if (verdict.kind === 'refuse') {
      throw problem('invalid_path', { detail: `Archive entry ${printableEntryName(name)} is refused: ${verdict.reason}.` });
    }
    if (verdict.kind === 'skip') continue;
    if (seen.has(name)) {
      throw problem('invalid_path', { detail: `Archive entry ${printableEntryName(name)} appears more than once.` });
    }
    seen.add(name);
    declaredTotal += entry.uncompressedSize;
    kept.push({ name, entry });
  }

  // All declared sizes are judged before the first byte is inflated.
  if (declaredTotal > limits.maxTotalBytes) {
    throw unreadable(`The archive expands to ${declaredTotal} bytes; at most ${limits.maxTotalBytes} are accepted.`);
  }
  for (const { name, entry } of kept) {
    if (entry.uncompressedSize > limits.maxEntryBytes) {
      throw problem('file_too_large', {
        detail: `Archive entry ${printableEntryName(name)} is ${entry.uncompressedSize} bytes; at most ${limits.maxEntryBytes} are accepted per file.`,
      });
    }
    if (entry.flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION)) {
      throw unreadable(`Archive entry ${printableEntryName(name)} is encrypted.`);
    }
    if (entry.method !== METHOD_STORED && entry.method !== METHOD_DEFLATE) {
      throw unreadable(`Archive entry ${printableEntryName(name)} uses compression method ${entry.method}; only stored and deflate are supported.`);
    }
  }

  const files = new Map<string, Buffer>();
  for (const { name, entry } of kept) files.set(name, extractEntry(bytes, name, entry));
  return files;
}

function decodeName(nameBytes: Buffer): string {
  try {
    return utf8.decode(nameBytes);
  } catch {
    throw problem('invalid_path', { detail: 'An archive entry name is not valid UTF-8.' });
  }
}

function extractEntry(bytes: Buffer, name: string, entry: CentralDirectoryEntry): Buffer {
  const at = entry.localHeaderOffset;
  if (at + LOCAL_HEADER_SIZE > bytes.length || bytes.readUInt32LE(at) !== SIG_LOCAL_HEADER) {
    throw unreadable(`Archive entry ${printableEntryName(name)} has no local header.`);
  }
  const nameLength = bytes.readUInt16LE(at + 26);
  const extraLength = bytes.readUInt16LE(at + 28);
  const localName = bytes.subarray(at + LOCAL_HEADER_SIZE, at + LOCAL_HEADER_SIZE + nameLength);
  if (!localName.equals(entry.nameBytes)) {
    throw unreadable(`Archive entry ${printableEntryName(name)} has a local header for another name.`);
  }
  const start = at + LOCAL_HEADER_SIZE + nameLength + extraLength;
  const end = start + entry.compressedSize;
  if (end > bytes.length) throw unreadable(`Archive entry ${printableEntryName(name)} is truncated.`);
  const stored = bytes.subarray(start, end);

  let data: Buffer;
  if (entry.method === METHOD_STORED) {
    if (entry.compressedSize !== entry.uncompressedSize) {
      throw unreadable(`Archive entry ${printableEntryName(name)} is stored but its sizes differ.`);
    }
    // A view, not a copy: a stored entry costs no memory of its own. Entries live as long as the
    // request that read them; anything kept longer (a cache) must copy.
    data = stored;
  } else {
    data = inflateCapped(stored, name, entry.uncompressedSize);
  }

  if (data.length !== entry.uncompressedSize) {
    throw unreadable(`Archive entry ${printableEntryName(name)} is shorter than its declared size.`);
  }
  if (zlib.crc32(data) !== entry.crc32) {
    throw unreadable(`Archive entry ${printableEntryName(name)} fails its CRC-32 check.`);
  }
  return data;
}

/** Inflates at most declaredSize + 1 bytes: one byte more proves the declaration false. */
function inflateCapped(compressed: Buffer, name: string, declaredSize: number): Buffer {
  try {
    return zlib.inflateRawSync(compressed, { maxOutputLength: declaredSize + 1 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw unreadable(`Archive entry ${printableEntryName(name)} expands past its declared size of ${declaredSize} bytes.`);
    }
    throw unreadable(`Archive entry ${printableEntryName(name)} is corrupt: ${(err as Error).message}.`);
  }
}
