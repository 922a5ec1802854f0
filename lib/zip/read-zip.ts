// A ZIP reader for untrusted uploads. Every limit is judged on the declared sizes, and every
// local header against its central one, before any entry is inflated; then each entry inflates
// in a worker thread (never on the event loop), stopped at the first chunk past its declared size
// because the declared sizes may lie, and counted against the archive's running totals.
//
// Error codes: a limit crossed, an archive that lies about its sizes, or one that cannot be
// parsed are all package_archive_unreadable (422): the archive as a whole is unusable. One file
// declared larger than the per-file limit is file_too_large (400), which the spec names for ZIP
// imports. A name that could escape the package folder, or two entries with one name, is
// invalid_path (400).
import { createHash, type Hash } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import zlib from 'node:zlib';
import { problem } from '../problem.ts';
import { locateCentralDirectory, parseCentralDirectory, unreadable, type CentralDirectoryEntry } from './central-directory.ts';
import { classifyEntryName, printableEntryName } from './entry-name.ts';
import {
  FLAG_ENCRYPTED, FLAG_STRONG_ENCRYPTION, LOCAL_HEADER_SIZE, METHOD_DEFLATE, METHOD_STORED,
  SIG_LOCAL_HEADER,
} from './format.ts';
import { inflateQueue } from './inflate-queue.ts';
import { inflateInWorker } from './inflate-workers.ts';

export interface ZipLimits {
  /** entries in the central directory, directories and skipped entries included */
  maxEntries: number;
  /** declared uncompressed size of one file */
  maxEntryBytes: number;
  /** uncompressed size of all files together, declared and actually inflated */
  maxTotalBytes: number;
  /** the setting maxTotalBytes comes from, named when it refuses */
  totalSetting?: string;
  /** a cap per group of entries sharing their first `depth` path segments (a bundle's packages) */
  group?: { depth: number; maxBytes: number; setting?: string };
}

export interface ReadZipOptions {
  /** whose turn this is in the inflation queue (the tenant); waiting keys are served in turn */
  queueKey?: string;
}

interface PlannedEntry {
  name: string;
  entry: CentralDirectoryEntry;
  group?: string;
  /** where the entry's stored bytes start */
  dataStart: number;
}

const INFLATE_CHUNK_BYTES = 1024 * 1024;
// A stored entry is checked on the event loop, this much per turn.
// Stryker disable next-line ArithmeticOperator: the slice size sets how often the loop yields, not what is read
const SLICE_BYTES = 512 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true });

let inflatedSoFar = 0;

// Each file read is hashed as it is read: hashing it later, whole, would stall the event loop
// for as long as inflating it did. Files read are never written to, so the digest stays true.
const digests = new WeakMap<Buffer, string>();

/** The `sha256-<base64>` integrity of a file this reader returned, computed while it was read. */
export function digestOfRead(file: Buffer): string | undefined {
  return digests.get(file);
}

/** Bytes inflated by this process so far: how much work a refused archive cost. */
export function inflatedBytesTotal(): number {
  return inflatedSoFar;
}

export async function readZip(bytes: Buffer, limits: ZipLimits, opts: ReadZipOptions = {}): Promise<Map<string, Buffer>> {
  const planned = planZip(bytes, limits);
  const budget = new InflateBudget(limits);
  const files = new Map<string, Buffer>();
  for (const item of planned) {
    // one entry per turn: a request holds at most one slot, and others' entries come between
    // Stryker disable next-line StringLiteral: the default key is any one key shared by callers that name none
    files.set(item.name, await inflateQueue.run(opts.queueKey ?? '', () => extractEntry(bytes, item, budget)));
  }
  return files;
}

/** Everything that can be judged without inflating: the directory, names, declared sizes, headers. */
export function planZip(bytes: Buffer, limits: ZipLimits): PlannedEntry[] {
  const where = locateCentralDirectory(bytes);
  if (where.entryCount > limits.maxEntries) {
    throw unreadable(`The archive holds ${where.entryCount} entries; at most ${limits.maxEntries} are accepted.`);
  }

  const kept: PlannedEntry[] = [];
  const seen = new Set<string>();
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
    kept.push({ name, entry, group: groupOf(name, limits), dataStart: 0 });
  }

  const declared = new InflateBudget(limits);
  for (const { name, entry, group } of kept) declared.take(name, group, entry.uncompressedSize, 'expands to');
  for (const item of kept) {
    const { name, entry } = item;
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
    if (entry.method === METHOD_STORED && entry.compressedSize !== entry.uncompressedSize) {
      throw unreadable(`Archive entry ${printableEntryName(name)} is stored but its sizes differ.`);
    }
    item.dataStart = locateData(bytes, name, entry);
  }
  return kept;
}

/** Checks the local header against the central one and returns where the entry's data starts. */
function locateData(bytes: Buffer, name: string, entry: CentralDirectoryEntry): number {
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
  if (bytes.readUInt16LE(at + 6) & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION)) {
    throw unreadable(`Archive entry ${printableEntryName(name)} is encrypted.`);
  }
  const start = at + LOCAL_HEADER_SIZE + nameLength + extraLength;
  if (start + entry.compressedSize > bytes.length) throw unreadable(`Archive entry ${printableEntryName(name)} is truncated.`);
  return start;
}

function groupOf(name: string, limits: ZipLimits): string | undefined {
  if (!limits.group) return undefined;
  const segments = name.split('/');
  return segments.length > limits.group.depth ? segments.slice(0, limits.group.depth).join('/') : undefined;
}

/** Running totals of the archive and of each group; refuses at the first byte past a limit. */
class InflateBudget {
  private total = 0;
  private readonly groups = new Map<string, number>();

  constructor(private readonly limits: ZipLimits) {}

  // Stryker disable next-line StringLiteral: bytes inflated never pass the declared sizes, already judged against the same limits; this wording is a last guard
  take(name: string, group: string | undefined, bytes: number, verb = 'inflates past'): void {
    this.total += bytes;
    if (this.total > this.limits.maxTotalBytes) {
      const setting = this.limits.totalSetting ? ` (${this.limits.totalSetting})` : '';
      throw unreadable(`The archive ${verb} ${this.total} bytes at entry ${printableEntryName(name)}; at most ${this.limits.maxTotalBytes} are accepted${setting}.`);
    }
    const cap = this.limits.group;
    if (group === undefined || !cap) return;
    const used = (this.groups.get(group) ?? 0) + bytes;
    this.groups.set(group, used);
    if (used > cap.maxBytes) {
      const setting = cap.setting ? ` (${cap.setting})` : '';
      throw unreadable(`${printableEntryName(`${group}/`)} ${verb} ${used} bytes at entry ${printableEntryName(name)}; at most ${cap.maxBytes} are accepted per package${setting}.`);
    }
  }
}

function decodeName(nameBytes: Buffer): string {
  try {
    return utf8.decode(nameBytes);
  } catch {
    throw problem('invalid_path', { detail: 'An archive entry name is not valid UTF-8.' });
  }
}

async function extractEntry(bytes: Buffer, item: PlannedEntry, budget: InflateBudget): Promise<Buffer> {
  const { name, entry } = item;
  const stored = bytes.subarray(item.dataStart, item.dataStart + entry.compressedSize);
  let data: Buffer;
  let crc: number;
  let digest: string;
  if (entry.method === METHOD_STORED) {
    budget.take(name, item.group, stored.length);
    // A view, not a copy: a stored entry costs no memory of its own. Entries live as long as the
    // request that read them; anything kept longer (a cache) must copy.
    data = stored;
    const hash = createHash('sha256');
    crc = await checkInSlices(stored, hash);
    digest = hash.digest('base64');
  } else {
    ({ data, crc, digest } = await inflateOffThread(stored, item, budget));
  }

  if (data.length !== entry.uncompressedSize) {
    throw unreadable(`Archive entry ${printableEntryName(name)} is shorter than its declared size.`);
  }
  if (crc !== entry.crc32) {
    throw unreadable(`Archive entry ${printableEntryName(name)} fails its CRC-32 check.`);
  }
  digests.set(data, `sha256-${digest}`);
  return data;
}

/** CRC-32 and hash of a stored entry, a slice per turn of the event loop. */
async function checkInSlices(bytes: Buffer, hash: Hash): Promise<number> {
  let crc = 0;
  // Stryker disable next-line EqualityOperator: one more pass over an empty slice changes neither sum
  for (let at = 0; at < bytes.length; at += SLICE_BYTES) {
    const slice = bytes.subarray(at, at + SLICE_BYTES);
    crc = zlib.crc32(slice, crc);
    hash.update(slice);
    // Stryker disable next-line ConditionalExpression,EqualityOperator,ArithmeticOperator: how many turns the loop yields, not what it reads (that it yields is tested)
    if (at + SLICE_BYTES < bytes.length) await nextTurn();
  }
  return crc;
}

/** Inflates in a worker thread, capped at the declared size: one byte more proves it false. */
async function inflateOffThread(compressed: Buffer, item: PlannedEntry, budget: InflateBudget): Promise<{ data: Buffer; crc: number; digest: string }> {
  const { name, entry } = item;
  const outcome = await inflateInWorker(compressed, entry.uncompressedSize, INFLATE_CHUNK_BYTES);
  if ('corrupt' in outcome) throw unreadable(`Archive entry ${printableEntryName(name)} is corrupt: ${outcome.corrupt}.`);
  if ('past' in outcome) {
    inflatedSoFar += outcome.past;
    throw unreadable(`Archive entry ${printableEntryName(name)} expands past its declared size of ${entry.uncompressedSize} bytes.`);
  }
  inflatedSoFar += outcome.data.length;
  budget.take(name, item.group, outcome.data.length);
  return outcome;
}
