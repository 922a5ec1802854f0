// The rules a draft's file tree keeps while it is edited: usable paths, no file shadowing a
// folder, manifest.json edited only through the manifest field, the type's content entry
// (prompt.md, SKILL.md) never removed, renamed or emptied, and the edit size limits.
import { createHash } from 'node:crypto';
import { MANIFEST_FILE, PROMPT_FILE, SKILL_FILE, type PackageType } from '../../../lib/afps/index.ts';
import { classifyEntryName } from '../../../lib/zip/index.ts';
import { problem } from '../../../lib/problem.ts';
import type { Config } from '../../../lib/config.ts';
import type { TreeEntry } from './store.ts';

/** The file a package type cannot live without. */
export function contentEntry(type: PackageType): string | undefined {
  if (type === 'agent') return PROMPT_FILE;
  if (type === 'skill') return SKILL_FILE;
  return undefined;
}

export function checkEditablePath(path: string, field = 'path'): void {
  if (classifyEntryName(path).kind !== 'file') {
    throw problem('invalid_path', { detail: `${JSON.stringify(path)} is not a usable file path.`, param: field });
  }
  if (path === MANIFEST_FILE) throw problem('reserved_entry', { detail: 'manifest.json is edited through the manifest field of the draft.' });
}

export function checkNotContentEntry(type: PackageType, path: string, what: 'removed' | 'renamed' | 'emptied'): void {
  if (contentEntry(type) === path) throw problem('content_entry_immovable', { detail: `${path} cannot be ${what}: a ${type} package needs it.` });
}

/** A new file at `path` must not sit where a folder is, nor under a path that is a file. */
export function checkNoShadowing(tree: Map<string, TreeEntry>, path: string): void {
  for (const other of tree.keys()) {
    if (other === path) continue;
    if (other.startsWith(`${path}/`)) throw problem('path_conflict', { detail: `${path} is a folder of the draft (it holds ${other}).` });
    if (path.startsWith(`${other}/`)) throw problem('path_conflict', { detail: `${other} is a file of the draft, so ${path} cannot be under it.` });
  }
}

export function treeSize(tree: Map<string, TreeEntry>): number {
  let total = 0;
  for (const e of tree.values()) total += e.size;
  return total;
}

export function checkFileSize(config: Config, path: string, size: number): void {
  const max = config.PACKAGE_EDIT_MAX_FILE_BYTES;
  if (size > max) throw problem('file_too_large', { status: 413, detail: `${path} is ${size} bytes; a draft file holds at most ${max}.` });
}

/** Only an edit that grows the tree past the limit is refused (an imported tree may be larger). */
export function checkTreeSize(config: Config, before: number, after: number): void {
  const max = config.PACKAGE_EDIT_MAX_TREE_BYTES;
  if (after > max && after > before) throw problem('tree_too_large', { detail: `The draft would hold ${after} bytes; at most ${max} are accepted.` });
}

export interface FileRecord {
  path: string;
  size: number;
  /** hex SHA-256 of the content */
  sha256: string;
  /** the same digest as an integrity string (sha256-<base64>) */
  integrity: string;
}

export function toFileRecord(e: TreeEntry): FileRecord {
  return { path: e.path, size: Number(e.size), sha256: Buffer.from(e.digest.slice('sha256-'.length), 'base64').toString('hex'), integrity: e.digest };
}

/** Decodes a file body: utf8 (default) or base64 text. */
export function decodeContent(content: string, encoding: 'utf8' | 'base64' | undefined, field = 'content'): Buffer {
  if (encoding !== 'base64') return Buffer.from(content, 'utf8');
  const compact = content.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) {
    throw problem('validation_failed', { detail: 'The content is not valid base64.', errors: [{ field, code: 'invalid_format', message: 'must be base64 text' }] });
  }
  return Buffer.from(compact, 'base64');
}

/** A strong ETag for a draft state. */
export function draftEtag(draftIntegrity: string): string {
  return `"${createHash('sha256').update(draftIntegrity).digest('base64url').slice(0, 32)}"`;
}

/**
 * If-Match against the draft's current ETag: missing when required is 428, a mismatch is 412
 * carrying the current ETag. `*` matches any existing draft.
 */
export function checkIfMatch(header: string | undefined, current: string, required: boolean): void {
  if (header === undefined || header.trim() === '') {
    if (required) throw problem('precondition_required', { param: 'If-Match', detail: 'Send If-Match with the ETag of the draft this write is based on.', headers: { ETag: current } });
    return;
  }
  const candidates = header.split(',').map((t) => t.trim());
  if (candidates.includes('*') || candidates.includes(current)) return;
  throw problem('precondition_failed', { param: 'If-Match', detail: 'The draft changed since that ETag; reload it and retry.', headers: { ETag: current } });
}
