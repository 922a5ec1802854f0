// The rules every ZIP entry name must pass before anything is extracted or written.
// A name that could escape the target folder (zip-slip) is refused, never rewritten.

export type EntryNameVerdict =
  | { kind: 'file' }
  /** directory entries and macOS resource forks carry no package content */
  | { kind: 'skip' }
  | { kind: 'refuse'; reason: string };

export const MAX_ENTRY_NAME_LENGTH = 1024;

const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;
const DRIVE_LETTER = /^[A-Za-z]:/;

export function classifyEntryName(name: string): EntryNameVerdict {
  if (name.length === 0) return { kind: 'refuse', reason: 'the name is empty' };
  if (name.length > MAX_ENTRY_NAME_LENGTH) {
    return { kind: 'refuse', reason: `the name is longer than ${MAX_ENTRY_NAME_LENGTH} characters` };
  }
  if (name.includes('\u0000')) return { kind: 'refuse', reason: 'the name contains a NUL byte' };
  if (name.includes('\\')) return { kind: 'refuse', reason: 'the name contains a backslash' };
  if (CONTROL_CHARACTER.test(name)) return { kind: 'refuse', reason: 'the name contains a control character' };
  if (name.startsWith('/')) return { kind: 'refuse', reason: 'the name is an absolute path' };
  if (DRIVE_LETTER.test(name)) return { kind: 'refuse', reason: 'the name starts with a drive letter' };

  const isDirectory = name.endsWith('/');
  const segments = (isDirectory ? name.slice(0, -1) : name).split('/');
  for (const segment of segments) {
    if (segment === '..') return { kind: 'refuse', reason: 'the name has a ".." segment' };
    if (segment === '.') return { kind: 'refuse', reason: 'the name has a "." segment' };
    if (segment === '') return { kind: 'refuse', reason: 'the name has an empty segment' };
  }

  if (isDirectory) return { kind: 'skip' };
  if (segments[0] === '__MACOSX') return { kind: 'skip' };
  return { kind: 'file' };
}

/** Byte order of the UTF-8 encodings: the one order used for archives, tree hashes and bundles. */
export function compareEntryNames(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** A name shown in an error detail: quoted, with control characters escaped. */
export function printableEntryName(name: string): string {
  return JSON.stringify(name.length > 200 ? `${name.slice(0, 200)}...` : name);
}
