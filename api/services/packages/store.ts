// Storage of package content: a content-addressed blob store per organization (sha256 integrity
// → bytes, in chunks of at most 1 MiB), and the file trees of versions and drafts that reference
// it. Small blobs go in one statement; a large one in a few chunk statements, so no single
// message to the database (or buffer building it) is much larger than a chunk batch.
import type pg from 'pg';
import { sha256Integrity } from '../../../lib/afps/index.ts';
import { compareEntryNames } from '../../../lib/zip/index.ts';
import { problem } from '../../../lib/problem.ts';

export type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

export const CHUNK_BYTES = 1024 * 1024;
const CHUNKS_PER_STATEMENT = 4;
const SMALL_BLOBS_PER_STATEMENT = 500;


export interface TreeEntry {
  path: string;
  digest: string;
  size: number;
}

/** The same value as treeIntegrity(files), computed from the files' digests alone. */
export function treeIntegrityOf(entries: Iterable<{ path: string; digest: string }>): string {
  const list = [...entries].sort((a, b) => compareEntryNames(a.path, b.path));
  return sha256Integrity(list.map((e) => `${e.digest} ${e.path}\n`).join(''));
}

export function entriesOf(files: Map<string, Buffer>): TreeEntry[] {
  return [...files].map(([path, bytes]) => ({ path, digest: sha256Integrity(bytes), size: bytes.length }));
}

export interface Blob {
  digest: string;
  bytes: Buffer;
}

export function blobOf(bytes: Buffer): Blob {
  return { digest: sha256Integrity(bytes), bytes };
}

/** Stores each blob once (content already stored under its digest is not sent again). */
export async function putBlobs(q: Queryable, orgId: string, blobs: Blob[]): Promise<void> {
  const small = new Map<string, Buffer>();
  const large = new Map<string, Buffer>();
  for (const { digest, bytes } of blobs) (bytes.length <= CHUNK_BYTES ? small : large).set(digest, bytes);

  // bytea travels as binary parameters (a bytea[] would go as hex text, twice the size)
  const list = [...small];
  for (let first = 0; first < list.length; first += SMALL_BLOBS_PER_STATEMENT) {
    const params: unknown[] = [orgId];
    const values: string[] = [];
    for (const [digest, bytes] of list.slice(first, first + SMALL_BLOBS_PER_STATEMENT)) {
      params.push(digest, bytes);
      values.push(`($1, $${params.length - 1}, 0, $${params.length})`);
    }
    await q.query(`INSERT INTO package_blobs (org_id, digest, seq, data) VALUES ${values.join(', ')} ON CONFLICT DO NOTHING`, params);
  }
  for (const [digest, bytes] of large) {
    const { rowCount } = await q.query('SELECT 1 FROM package_blobs WHERE org_id = $1 AND digest = $2 AND seq = 0', [orgId, digest]);
    if (rowCount) continue;
    const count = Math.ceil(bytes.length / CHUNK_BYTES);
    for (let first = 0; first < count; first += CHUNKS_PER_STATEMENT) {
      const values: string[] = [];
      const params: unknown[] = [orgId, digest];
      for (let seq = first; seq < Math.min(count, first + CHUNKS_PER_STATEMENT); seq++) {
        params.push(seq, bytes.subarray(seq * CHUNK_BYTES, (seq + 1) * CHUNK_BYTES));
        values.push(`($1, $2, $${params.length - 1}, $${params.length})`);
      }
      await q.query(`INSERT INTO package_blobs (org_id, digest, seq, data) VALUES ${values.join(', ')} ON CONFLICT DO NOTHING`, params);
    }
  }
}

function assemble(rows: Array<{ path: string; data: Buffer }>): Map<string, Buffer> {
  const parts = new Map<string, Buffer[]>();
  for (const row of rows) {
    const list = parts.get(row.path);
    if (list) list.push(row.data);
    else parts.set(row.path, [row.data]);
  }
  const files = new Map<string, Buffer>();
  for (const [path, list] of parts) files.set(path, list.length === 1 ? list[0] : Buffer.concat(list));
  return files;
}

/** The file tree of a published version, or of a detached draft (version null), with contents. */
export async function readTree(q: Queryable, orgId: string, packageId: string, version: string | null, onlyPath?: string): Promise<Map<string, Buffer>> {
  const table = version === null ? 'package_draft_files' : 'package_version_files';
  const params: unknown[] = [orgId, packageId];
  const where = ['f.org_id = $1', 'f.package_id = $2'];
  if (version !== null) where.push(`f.version = $${params.push(version)}`);
  if (onlyPath !== undefined) where.push(`f.path = $${params.push(onlyPath)}`);
  const { rows } = await q.query(
    `SELECT f.path, b.data FROM ${table} f
       JOIN package_blobs b ON b.org_id = f.org_id AND b.digest = f.digest
      WHERE ${where.join(' AND ')}
      ORDER BY f.path, b.seq`,
    params,
  );
  const files = assemble(rows);
  if (onlyPath === undefined) checkComplete(files, await listTree(q, orgId, packageId, version));
  // one file not read: missing from the tree (the caller's not_found), or listed with its content gone
  else if (!files.has(onlyPath)) checkComplete(files, (await listTree(q, orgId, packageId, version)).filter((e) => e.path === onlyPath));
  return files;
}

function checkComplete(files: Map<string, Buffer>, entries: TreeEntry[]): void {
  for (const e of entries) {
    const bytes = files.get(e.path);
    if (!bytes || bytes.length !== e.size) throw problem('version_artifact_unavailable', { detail: `The stored content of ${e.path} is unreadable.` });
  }
}

/** Paths, digests and sizes of a version's tree (or a detached draft's: version null). */
export async function listTree(q: Queryable, orgId: string, packageId: string, version: string | null): Promise<TreeEntry[]> {
  const { rows } = version === null
    ? await q.query('SELECT path, digest, size FROM package_draft_files WHERE org_id = $1 AND package_id = $2', [orgId, packageId])
    : await q.query('SELECT path, digest, size FROM package_version_files WHERE org_id = $1 AND package_id = $2 AND version = $3', [orgId, packageId, version]);
  return (rows as TreeEntry[]).sort((a, b) => compareEntryNames(a.path, b.path));
}

/** One blob, whole. */
export async function readBlob(q: Queryable, orgId: string, digest: string): Promise<Buffer> {
  const { rows } = await q.query('SELECT data FROM package_blobs WHERE org_id = $1 AND digest = $2 ORDER BY seq', [orgId, digest]);
  if (rows.length === 0) throw problem('version_artifact_unavailable', { detail: 'The stored artifact is unreadable.' });
  return rows.length === 1 ? rows[0].data : Buffer.concat(rows.map((r) => r.data as Buffer));
}

/** A blob chunk by chunk (a few chunks per query), for streaming a download. */
export async function* blobChunks(q: Queryable, orgId: string, digest: string): AsyncGenerator<Buffer> {
  let next = 0;
  for (;;) {
    const { rows } = await q.query(
      'SELECT seq, data FROM package_blobs WHERE org_id = $1 AND digest = $2 AND seq >= $3 ORDER BY seq LIMIT $4',
      [orgId, digest, next, CHUNKS_PER_STATEMENT],
    );
    if (rows.length === 0 && next === 0) throw problem('version_artifact_unavailable', { detail: 'The stored artifact is unreadable.' });
    for (const row of rows) yield row.data as Buffer;
    if (rows.length < CHUNKS_PER_STATEMENT) return;
    next = rows[rows.length - 1].seq + 1;
  }
}

/** The files of a tree listing, read by digest (each blob once), checked whole against the listing. */
export async function readEntries(q: Queryable, orgId: string, entries: TreeEntry[]): Promise<Map<string, Buffer>> {
  const digests = [...new Set(entries.map((e) => e.digest))];
  const { rows } = await q.query(
    'SELECT digest AS path, data FROM package_blobs WHERE org_id = $1 AND digest = ANY($2::text[]) ORDER BY digest, seq',
    [orgId, digests],
  );
  const blobs = assemble(rows);
  const files = new Map<string, Buffer>();
  for (const e of entries) {
    const bytes = blobs.get(e.digest);
    if (!bytes || bytes.length !== Number(e.size)) throw problem('version_artifact_unavailable', { detail: `The stored content of ${e.path} is unreadable.` });
    files.set(e.path, bytes);
  }
  return files;
}
