// Staged uploads and durable files. An upload reserves its declared size against the
// organization's quota and one of its actor's staging slots; its content streams to storage
// through a single-use signed URL and becomes a durable file. Durable files expire
// FILE_RETENTION_DAYS after creation unless kept; the sweep (sweepExpiredFiles) removes them and
// their content, except while a run that has not ended references them.
import type { Readable } from 'node:stream';
import type pg from 'pg';
import type { Config } from '../../../lib/config.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import { ContentTooLarge, createFileStorage, type ByteRange, type FileStorage } from '../../../lib/file-storage.ts';
import { newId } from '../../../lib/ids.ts';
import { problem } from '../../../lib/problem.ts';
import type { CursorPage } from '../../lists.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { openToken, sealToken } from './link-tokens.ts';

const storages = new WeakMap<Config, FileStorage>();

/** The storage the configuration names, built once per configuration. */
export function fileStorageOf(config: Config): FileStorage {
  let s = storages.get(config);
  if (!s) storages.set(config, (s = createFileStorage(config)));
  return s;
}

// ------------------------------------------------------------------ wire shapes

export interface FileWire {
  id: string;
  object: 'file';
  name: string;
  size: number;
  mime_type: string;
  sha256: string;
  source: 'upload' | 'run';
  run_id: string | null;
  kept: boolean;
  expiresAt: string | null;
  createdAt: string;
}

interface FileRow {
  id: string;
  org_id: string;
  space_id: string;
  name: string;
  size: string;
  mime_type: string;
  sha256: string;
  storage_key: string;
  source: 'upload' | 'run';
  run_id: string | null;
  kept: boolean;
  expires_at: Date | null;
  created_at: Date;
}

const FILE_COLUMNS = 'id, org_id, space_id, name, size, mime_type, sha256, storage_key, source, run_id, kept, expires_at, created_at';

export function toFileWire(r: FileRow): FileWire {
  return {
    id: r.id, object: 'file', name: r.name, size: Number(r.size), mime_type: r.mime_type, sha256: r.sha256,
    source: r.source, run_id: r.run_id, kept: r.kept,
    expiresAt: r.expires_at ? r.expires_at.toISOString() : null, createdAt: r.created_at.toISOString(),
  };
}

function actorKey(scope: SpaceScope): string {
  return scope.actor.apiKeyId ? `apikey:${scope.actor.apiKeyId}` : `user:${scope.actor.userId}`;
}

function retentionEnd(config: Config, from = new Date()): Date | null {
  return config.FILE_RETENTION_DAYS === 0 ? null : new Date(from.getTime() + config.FILE_RETENTION_DAYS * 86_400_000);
}

// ------------------------------------------------------------------ quota

/** Bytes the organization holds in files and in staged uploads that may still be written. */
async function orgStoredBytes(client: pg.PoolClient | pg.Pool, orgId: string): Promise<number> {
  const { rows } = await client.query<{ n: string }>(
    `SELECT (SELECT coalesce(sum(size), 0) FROM files WHERE org_id = $1)
          + (SELECT coalesce(sum(size), 0) FROM uploads WHERE org_id = $1 AND status IN ('pending', 'writing') AND expires_at > now()) AS n`,
    [orgId],
  );
  return Number(rows[0].n);
}

/** Refuses `adding` bytes past ORG_STORAGE_QUOTA_BYTES; call under the organization's storage lock. */
async function checkQuota(client: pg.PoolClient, config: Config, orgId: string, adding: number): Promise<void> {
  const quota = config.ORG_STORAGE_QUOTA_BYTES;
  if (quota === undefined) return;
  const held = await orgStoredBytes(client, orgId);
  if (held + adding > quota) {
    throw problem('storage_limit_exceeded', { detail: `The organization stores ${held} bytes; ${adding} more would exceed its quota of ${quota} bytes.` });
  }
}

async function inTransaction<T>(pool: pg.Pool, orgId: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // one writer of an organization's storage at a time: quota checks cannot interleave
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('storage:' || $1))`, [orgId]);
    const out = await work(client);
    await client.query('COMMIT');
    return out;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

// ------------------------------------------------------------------ uploads

export interface NewUpload {
  name: string;
  size: number;
  mime_type: string;
  sha256?: string;
}

export interface UploadWire {
  id: string;
  object: 'upload';
  name: string;
  size: number;
  mime_type: string;
  upload_url: string;
  expiresAt: string;
}

export async function createUpload(scope: SpaceScope, config: Config, secrets: SecretBox, baseUrl: string, body: NewUpload): Promise<UploadWire> {
  if (body.size > config.FILE_MAX_BYTES) {
    throw problem('payload_too_large', { detail: `A file may hold at most ${config.FILE_MAX_BYTES} bytes.` });
  }
  const actor = actorKey(scope);
  const id = newId('upl');
  const expiresAt = new Date(Date.now() + config.UPLOAD_TTL_SECONDS * 1000);
  await inTransaction(scope.pool, scope.orgId, async (client) => {
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM uploads WHERE actor = $1 AND org_id = $2 AND status IN ('pending', 'writing') AND expires_at > now()`,
      [actor, scope.orgId],
    );
    if (rows[0].n >= config.UPLOAD_MAX_ACTIVE_PER_ACTOR) {
      throw problem('upload_staging_limit_exceeded', { detail: `At most ${config.UPLOAD_MAX_ACTIVE_PER_ACTOR} staged uploads may wait for content at once.` });
    }
    await checkQuota(client, config, scope.orgId, body.size);
    await client.query(
      `INSERT INTO uploads (id, org_id, space_id, actor, name, size, mime_type, sha256, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [id, scope.orgId, scope.spaceId, actor, body.name, body.size, body.mime_type, body.sha256?.toLowerCase() ?? null, expiresAt],
    );
  });
  const token = sealToken(secrets, 'upload', id, expiresAt);
  return {
    id, object: 'upload', name: body.name, size: body.size, mime_type: body.mime_type,
    upload_url: `${baseUrl}/api/uploads/_content?token=${encodeURIComponent(token)}`,
    expiresAt: expiresAt.toISOString(),
  };
}

interface UploadRow {
  id: string;
  org_id: string;
  space_id: string;
  name: string;
  size: string;
  mime_type: string;
  sha256: string | null;
  status: string;
  expires_at: Date;
}

/**
 * Streams an upload's content to storage and makes it a durable file. The URL is single use: a
 * write that succeeded cannot be repeated; one that failed (a wrong checksum, a cut connection)
 * may be retried with the same URL until the upload expires.
 */
export async function writeUploadContent(
  deps: { pool: pg.Pool; config: Config; secrets: SecretBox },
  token: unknown, declaredLength: number | undefined, content: Readable,
): Promise<FileWire> {
  const { pool, config } = deps;
  const opened = openToken(deps.secrets, 'upload', token);
  const { rows } = await pool.query<UploadRow>(
    `UPDATE uploads SET status = 'writing' WHERE id = $1 AND status = 'pending' AND expires_at > now()
     RETURNING id, org_id, space_id, name, size, mime_type, sha256, status, expires_at`,
    [opened.id],
  );
  const upload = rows[0];
  if (!upload) {
    const { rows: found } = await pool.query<{ status: string; expired: boolean }>(
      `SELECT status, expires_at <= now() AS expired FROM uploads WHERE id = $1`, [opened.id]);
    const f = found[0];
    if (!f) throw problem('not_found', { detail: 'No such upload.' });
    if (f.status !== 'pending') throw problem('upload_already_written', { detail: 'This upload already has its content; stage a new upload.' });
    throw problem('upload_expired', { detail: 'This upload expired before its content arrived; stage a new upload.' });
  }
  const size = Number(upload.size);
  const release = () => pool.query(`UPDATE uploads SET status = 'pending' WHERE id = $1 AND status = 'writing'`, [upload.id]);
  if (declaredLength !== undefined && declaredLength > size) {
    await release();
    throw problem('payload_too_large', { detail: `The upload was staged for ${size} bytes.` });
  }
  const storage = fileStorageOf(config);
  const fileId = newId('file');
  const key = `${upload.org_id}/${fileId}`;
  let stored;
  try {
    stored = await storage.put(key, content, { maxBytes: size });
  } catch (err) {
    await release();
    if (err instanceof ContentTooLarge) throw problem('payload_too_large', { detail: `The upload was staged for ${size} bytes.` });
    // a client that went away mid-body sent a bad request; a storage that failed is our fault
    const cut = content.readableAborted || ['ECONNRESET', 'ERR_STREAM_PREMATURE_CLOSE', 'ABORT_ERR'].includes((err as { code?: string }).code ?? '');
    if (cut) throw problem('invalid_request', { detail: 'The upload content was not received in full.' });
    throw err;
  }
  const refuse = async (code: 'checksum_mismatch' | 'invalid_request', detail: string) => {
    await storage.delete(key).catch(() => {});
    await release();
    return problem(code, { detail });
  };
  if (stored.size !== size) throw await refuse('invalid_request', `Received ${stored.size} bytes; the upload was staged for ${size}.`);
  if (upload.sha256 && upload.sha256 !== stored.sha256) throw await refuse('checksum_mismatch', `The content's SHA-256 is ${stored.sha256}; the upload declared ${upload.sha256}.`);
  const row = await inTransaction(pool, upload.org_id, async (client) => {
    const { rows: inserted } = await client.query<FileRow>(
      `INSERT INTO files (id, org_id, space_id, name, size, mime_type, sha256, storage_key, source, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'upload', $9) RETURNING ${FILE_COLUMNS}`,
      [fileId, upload.org_id, upload.space_id, upload.name, size, upload.mime_type, stored.sha256, key, retentionEnd(config)],
    );
    await client.query(`UPDATE uploads SET status = 'written', file_id = $2 WHERE id = $1`, [upload.id, fileId]);
    return inserted[0];
  });
  return toFileWire(row);
}

// ------------------------------------------------------------------ durable files

/**
 * An end-user (an end-user token, or a key acting for one with Service-User) reaches only the files
 * of their own runs (those a run of theirs took as input or published); appended to `params`.
 */
function endUserFilter(scope: SpaceScope, params: unknown[]): string {
  if (!scope.actor.endUserId) return '';
  params.push(scope.actor.endUserId);
  return ` AND EXISTS (SELECT 1 FROM run_files rf JOIN runs r ON r.id = rf.run_id
                        WHERE rf.file_id = files.id AND r.org_id = files.org_id AND r.space_id = files.space_id AND r.end_user_id = $${params.length})`;
}

export async function listFiles(scope: SpaceScope, page: CursorPage): Promise<FileWire[]> {
  const params: unknown[] = [scope.orgId, scope.spaceId, page.limit + 1];
  let where = 'org_id = $1 AND space_id = $2';
  let order = 'ASC';
  if (page.startingAfter) {
    params.push(page.startingAfter);
    where += ` AND id COLLATE "C" > $4`;
  } else if (page.endingBefore) {
    params.push(page.endingBefore);
    where += ` AND id COLLATE "C" < $4`;
    order = 'DESC';
  }
  where += endUserFilter(scope, params);
  const { rows } = await scope.pool.query<FileRow>(`SELECT ${FILE_COLUMNS} FROM files WHERE ${where} ORDER BY id COLLATE "C" ${order} LIMIT $3`, params);
  return rows.map(toFileWire);
}

async function fileRow(scope: SpaceScope, id: string): Promise<FileRow> {
  const params: unknown[] = [scope.orgId, scope.spaceId, id];
  const filter = endUserFilter(scope, params);
  const { rows } = await scope.pool.query<FileRow>(`SELECT ${FILE_COLUMNS} FROM files WHERE org_id = $1 AND space_id = $2 AND id = $3${filter}`, params);
  if (!rows[0]) throw problem('not_found', { detail: 'No such file.' });
  return rows[0];
}

export async function getFile(scope: SpaceScope, id: string): Promise<FileWire> {
  return toFileWire(await fileRow(scope, id));
}

/** The file with a preview link valid FILE_PREVIEW_TTL_SECONDS, usable without headers. */
export async function getFileWithPreview(scope: SpaceScope, config: Config, secrets: SecretBox, baseUrl: string, id: string) {
  const file = await getFile(scope, id);
  const expiresAt = new Date(Date.now() + config.FILE_PREVIEW_TTL_SECONDS * 1000);
  const token = sealToken(secrets, 'preview', id, expiresAt);
  return { ...file, preview_url: `${baseUrl}/preview/files/${id}?token=${encodeURIComponent(token)}`, preview_expires_at: expiresAt.toISOString() };
}

/**
 * Runs that reference the file, in progress or ended (as an input or an output): an ended run keeps
 * its files for its record and for a rerun, so the file goes only once those runs are deleted.
 */
async function runsReferencing(client: pg.Pool | pg.PoolClient, fileId: string): Promise<string[]> {
  const { rows } = await client.query<{ run_id: string }>(
    'SELECT DISTINCT run_id FROM run_files WHERE file_id = $1 ORDER BY run_id LIMIT 5',
    [fileId],
  );
  return rows.map((r) => r.run_id);
}

/** Deletes a file no run references (spec: 409 file_in_use when referenced by runs). */
export async function deleteFile(scope: SpaceScope, config: Config, id: string): Promise<void> {
  const row = await fileRow(scope, id);
  await inTransaction(scope.pool, scope.orgId, async (client) => {
    // locked first: a launch linking it meanwhile holds the row until it commits, and its link is then seen here
    await client.query('SELECT 1 FROM files WHERE id = $1 FOR UPDATE', [id]);
    const using = await runsReferencing(client, id);
    if (using.length) {
      throw problem('file_in_use', { detail: `Runs reference this file (${using.join(', ')}${using.length === 5 ? ', ...' : ''}); delete them first, or let the file expire.` });
    }
    await client.query(`DELETE FROM files WHERE org_id = $1 AND space_id = $2 AND id = $3`, [scope.orgId, scope.spaceId, id]);
  });
  await fileStorageOf(config).delete(row.storage_key);
}

/** Keeps the file past the retention period, until it is deleted. */
export async function keepFile(scope: SpaceScope, id: string): Promise<FileWire> {
  const { rows } = await scope.pool.query<FileRow>(
    `UPDATE files SET kept = true, expires_at = NULL WHERE org_id = $1 AND space_id = $2 AND id = $3 RETURNING ${FILE_COLUMNS}`,
    [scope.orgId, scope.spaceId, id],
  );
  if (!rows[0]) throw problem('not_found', { detail: 'No such file.' });
  return toFileWire(rows[0]);
}

export interface FileContent {
  file: FileWire;
  status: 200 | 206 | 304 | 416;
  range?: ByteRange;
  body?: Readable;
}

/** One `bytes=` range of a file of `size` bytes; null: serve it whole; 'unsatisfiable': 416. */
export function parseRange(header: string | undefined, size: number): ByteRange | null | 'unsatisfiable' {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  // several ranges, or another unit: the whole content is a valid answer (RFC 9110 14.2)
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}

export function fileEtag(file: FileWire): string {
  return `"${file.sha256}"`;
}

export async function openFileContent(file: FileWire, storageKey: string, config: Config, headers: { range?: string; ifNoneMatch?: string }): Promise<FileContent> {
  const etag = fileEtag(file);
  if (headers.ifNoneMatch && headers.ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === etag || t.trim() === '*')) {
    return { file, status: 304 };
  }
  const range = parseRange(headers.range, file.size);
  if (range === 'unsatisfiable') return { file, status: 416 };
  const body = await fileStorageOf(config).get(storageKey, range ?? undefined);
  return range ? { file, status: 206, range, body } : { file, status: 200, body };
}

export async function fileContent(scope: SpaceScope, config: Config, id: string, headers: { range?: string; ifNoneMatch?: string }): Promise<FileContent> {
  const row = await fileRow(scope, id);
  return openFileContent(toFileWire(row), row.storage_key, config, headers);
}

/** The file a preview token opens, in whichever space it lives. */
export async function previewContent(pool: pg.Pool, config: Config, secrets: SecretBox, id: string, token: unknown, headers: { range?: string; ifNoneMatch?: string }): Promise<FileContent> {
  const opened = openToken(secrets, 'preview', token);
  if (opened.id !== id) throw problem('unauthorized', { detail: 'The link is not valid.' });
  if (opened.expired) throw problem('unauthorized', { detail: 'The preview link expired; ask the API for a new one.' });
  const { rows } = await pool.query<FileRow>(`SELECT ${FILE_COLUMNS} FROM files WHERE id = $1`, [id]);
  if (!rows[0]) throw problem('not_found', { detail: 'No such file.' });
  return openFileContent(toFileWire(rows[0]), rows[0].storage_key, config, headers);
}

// ------------------------------------------------------------------ retention

/**
 * Removes files past their expiry that no run still in progress references, and uploads that
 * expired without content. Answers how many files went.
 */
export async function sweepExpiredFiles(pool: pg.Pool, config: Config, batch = 500): Promise<number> {
  await pool.query(`DELETE FROM uploads WHERE expires_at <= now() - interval '1 day' OR (status = 'written' AND NOT EXISTS (SELECT 1 FROM files WHERE files.id = uploads.file_id))`);
  const { rows } = await pool.query<{ storage_key: string }>(
    `DELETE FROM files f WHERE f.id IN (
       SELECT id FROM files WHERE expires_at IS NOT NULL AND expires_at <= now()
          AND NOT EXISTS (SELECT 1 FROM run_files rf JOIN runs r ON r.id = rf.run_id WHERE rf.file_id = files.id AND r.status IN ('pending', 'running'))
        LIMIT $1)
     RETURNING f.storage_key`,
    [batch],
  );
  const storage = fileStorageOf(config);
  for (const r of rows) await storage.delete(r.storage_key).catch(() => {});
  return rows.length;
}

export { FILE_COLUMNS, type FileRow, inTransaction, checkQuota, retentionEnd };
