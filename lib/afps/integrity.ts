// Integrity strings in the Subresource Integrity form: `sha256-<standard base64 of the digest>`.
import { createHash } from 'node:crypto';
import { problem } from '../problem.ts';
import { classifyEntryName, compareEntryNames, printableEntryName } from '../zip/entry-name.ts';
import { digestOfRead } from '../zip/read-zip.ts';

export function sha256Integrity(bytes: Buffer | string): string {
  // a file read from an archive was hashed while it was read
  const known = typeof bytes === 'string' ? undefined : digestOfRead(bytes);
  if (known) return known;
  return `sha256-${createHash('sha256').update(bytes).digest('base64')}`;
}

/**
 * The canonical listing of a file tree: one line per file, in UTF-8 byte order of the paths,
 * `<integrity of the file> <path>\n`. Paths hold no control characters, so lines cannot be forged.
 */
export function treeListing(files: Map<string, Buffer>): string {
  for (const path of files.keys()) {
    if (classifyEntryName(path).kind !== 'file') throw problem('invalid_path', { detail: `File path ${printableEntryName(path)} is not usable.` });
  }
  return [...files.keys()]
    .sort(compareEntryNames)
    .map((path) => `${sha256Integrity(files.get(path)!)} ${path}\n`)
    .join('');
}

/** The integrity of a whole file tree: independent of archive layout, compression and order. */
export function treeIntegrity(files: Map<string, Buffer>): string {
  return sha256Integrity(treeListing(files));
}

export function isSha256Integrity(text: string): boolean {
  return /^sha256-[A-Za-z0-9+/]{43}=$/.test(text);
}
