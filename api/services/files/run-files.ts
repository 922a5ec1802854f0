// Files into and out of runs. A launch names files in its input: string fields whose schema says
// `format: "file"` (or arrays of them), valued `upload:<upload id>`, `file:<file id>` or a `data:`
// URI. Durable ones are linked to the run (run_files, role input) so they cannot be deleted while
// the run exists (it keeps them for its record and a rerun); data: URIs travel inside the input. At boot each lands in the workspace as
// input/<name>. A run's published files become durable files linked with role output.
import type pg from 'pg';
import type { Config } from '../../../lib/config.ts';
import type { Permission } from '../../../lib/permissions.ts';
import { problem, type FieldError } from '../../../lib/problem.ts';
import { newId } from '../../../lib/ids.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { getRunRow } from '../runs/records.ts';
import { checkQuota, FILE_COLUMNS, fileStorageOf, inTransaction, retentionEnd, toFileWire, type FileRow, type FileWire } from './files.ts';
import { Readable } from 'node:stream';

export interface FileRef {
  /** input.<field> or input.<field>[i] */
  field: string;
  /** its name under input/ in the workspace */
  name: string;
  value: string;
  kind: 'upload' | 'file' | 'data';
  /** the upload or file id (kind upload, file) */
  id?: string;
}

const SAFE_NAME = /^[^/\\\0]{1,255}$/;

function isFileSchema(s: unknown): boolean {
  return typeof s === 'object' && s !== null && (s as { format?: unknown }).format === 'file';
}

/** data:[<type>][;name=<name>][;base64],<data>: its parts, or null when not a data: URI. */
export function parseDataUri(value: string): { mimeType: string; name?: string; bytes: Buffer } | null {
  const m = /^data:([^,]*),(.*)$/s.exec(value);
  if (!m) return null;
  const params = m[1].split(';');
  const mimeType = params[0] || 'text/plain';
  const base64 = params.includes('base64');
  const nameParam = params.find((p) => p.startsWith('name='));
  let name: string | undefined;
  try {
    name = nameParam ? decodeURIComponent(nameParam.slice(5)) : undefined;
  } catch {
    name = undefined;
  }
  let bytes: Buffer;
  try {
    bytes = base64 ? Buffer.from(m[2], 'base64') : Buffer.from(decodeURIComponent(m[2]), 'utf8');
  } catch {
    return null;
  }
  return { mimeType, name, bytes };
}

function refOf(field: string, fallbackName: string, value: unknown): FileRef | FieldError {
  if (typeof value !== 'string') return { field, code: 'invalid_type', message: 'A file field takes a string: upload:<id>, file:<id> or a data: URI.' };
  if (value.startsWith('upload:')) return { field, name: '', value, kind: 'upload', id: value.slice(7) };
  if (value.startsWith('file:')) return { field, name: '', value, kind: 'file', id: value.slice(5) };
  if (value.startsWith('data:')) {
    const data = parseDataUri(value);
    if (!data) return { field, code: 'invalid_format', message: 'Not a readable data: URI.' };
    return { field, name: data.name ?? fallbackName, value, kind: 'data' };
  }
  return { field, code: 'invalid_format', message: 'A file field takes upload:<id>, file:<id> or a data: URI.' };
}

/** The file references of an input, by its schema's top-level `format: "file"` fields; malformed values are field errors. */
export function fileRefsOf(schema: unknown, input: Record<string, unknown>): { refs: FileRef[]; errors: FieldError[] } {
  const refs: FileRef[] = [];
  const errors: FieldError[] = [];
  const props = (schema as { properties?: Record<string, unknown> } | undefined)?.properties;
  if (!props || typeof props !== 'object') return { refs, errors };
  for (const [key, prop] of Object.entries(props)) {
    const value = input[key];
    if (value === undefined || value === null) continue;
    const items = (prop as { items?: unknown })?.items;
    const found: Array<FileRef | FieldError> = [];
    if (isFileSchema(prop)) found.push(refOf(`input.${key}`, key, value));
    else if (isFileSchema(items) && Array.isArray(value)) value.forEach((v, i) => found.push(refOf(`input.${key}[${i}]`, `${key}-${i + 1}`, v)));
    for (const f of found) ('code' in f ? errors : refs).push(f as never);
  }
  return { refs, errors };
}

export function hasInlineFiles(schema: unknown, input: Record<string, unknown>): boolean {
  return fileRefsOf(schema, input).refs.some((r) => r.kind === 'data');
}

export interface ResolvedInputFile {
  fileId: string;
  name: string;
}

/**
 * Checks a launch's input files: each named file exists in the space (file_unavailable), names
 * are distinct (duplicate_file_name), at most RUN_MAX_FILES (file_count_exceeded). Answers the
 * durable files to link once the run exists.
 */
export async function resolveInputFiles(scope: SpaceScope, config: Config, schema: unknown, input: Record<string, unknown>): Promise<ResolvedInputFile[]> {
  const { refs, errors } = fileRefsOf(schema, input);
  if (errors.length) throw problem('invalid_input', { detail: 'Some file fields of the input are not usable.', errors });
  if (refs.length === 0) return [];
  if (refs.length > config.RUN_MAX_FILES) {
    throw problem('file_count_exceeded', { detail: `A run may reference at most ${config.RUN_MAX_FILES} files; this input names ${refs.length}.` });
  }
  const uploadIds = refs.filter((r) => r.kind === 'upload').map((r) => r.id!);
  const fileIds = refs.filter((r) => r.kind === 'file').map((r) => r.id!);
  const { rows } = await scope.pool.query<{ ref: string; id: string; name: string }>(
    `SELECT 'upload:' || u.id AS ref, f.id, f.name FROM uploads u JOIN files f ON f.id = u.file_id
      WHERE u.org_id = $1 AND u.space_id = $2 AND u.id = ANY($3::text[]) AND u.status = 'written'
     UNION ALL
     SELECT 'file:' || f.id, f.id, f.name FROM files f WHERE f.org_id = $1 AND f.space_id = $2 AND f.id = ANY($4::text[])`,
    [scope.orgId, scope.spaceId, uploadIds, fileIds],
  );
  const byRef = new Map(rows.map((r) => [r.ref, r]));
  const missing = refs.filter((r) => r.kind !== 'data' && !byRef.has(r.value));
  if (missing.length) {
    throw problem('file_unavailable', { detail: `No such file in this space (deleted, expired or never written): ${missing.map((m) => m.value).join(', ')}.` });
  }
  for (const r of refs) if (r.kind !== 'data') r.name = byRef.get(r.value)!.name;
  const seen = new Set<string>();
  for (const r of refs) {
    if (!SAFE_NAME.test(r.name) || r.name === '.' || r.name === '..') throw problem('invalid_input', { detail: `${r.field} names an unusable file name.`, errors: [{ field: r.field, code: 'invalid_value', message: 'not a usable file name' }] });
    if (seen.has(r.name)) throw problem('duplicate_file_name', { detail: `Two input files would be input/${r.name} in the workspace.` });
    seen.add(r.name);
  }
  return refs.filter((r) => r.kind !== 'data').map((r) => ({ fileId: byRef.get(r.value)!.id, name: r.name }));
}

/** Links the launch's durable input files to the run (before the run is handed to the engine). */
export async function linkInputFiles(client: pg.Pool | pg.PoolClient, scope: SpaceScope, runId: string, files: ResolvedInputFile[]): Promise<void> {
  if (files.length === 0) return;
  await client.query(
    `INSERT INTO run_files (run_id, file_id, org_id, space_id, role, name)
     SELECT $1, f.file_id, $2, $3, 'input', f.name FROM unnest($4::text[], $5::text[]) AS f(file_id, name)`,
    [runId, scope.orgId, scope.spaceId, files.map((f) => f.fileId), files.map((f) => f.name)],
  );
}

/**
 * A file boot puts under input/: a data: URI's bytes (they came inside the input), or a durable
 * file opened from storage only when the workspace is written, so a run's input files are never
 * all in the worker's memory at once.
 */
export type InputWorkspaceFile = { path: string; content: Buffer } | { path: string; open(): Promise<Readable> };

/** What boot puts under input/: each file's workspace name and content, and the input as the agent sees it. */
export async function inputFilesForWorkspace(
  pool: pg.Pool, config: Config, runId: string, schema: unknown, input: Record<string, unknown>,
): Promise<{ files: InputWorkspaceFile[]; input: Record<string, unknown> }> {
  const { refs } = fileRefsOf(schema, input);
  if (refs.length === 0) return { files: [], input };
  const { rows } = await pool.query<{ name: string; storage_key: string; file_id: string }>(
    `SELECT rf.name, f.storage_key, f.id AS file_id FROM run_files rf JOIN files f ON f.id = rf.file_id WHERE rf.run_id = $1 AND rf.role = 'input'`,
    [runId],
  );
  const byId = new Map(rows.map((r) => [r.file_id, r]));
  const storage = fileStorageOf(config);
  const out: InputWorkspaceFile[] = [];
  const shown: Record<string, unknown> = structuredClone(input);
  for (const ref of refs) {
    let name = ref.name;
    if (ref.kind === 'data') {
      out.push({ path: `input/${name}`, content: parseDataUri(ref.value)!.bytes });
    } else {
      const { rows: resolved } = await pool.query<{ id: string }>(
        ref.kind === 'file' ? 'SELECT id FROM files WHERE id = $1' : 'SELECT file_id AS id FROM uploads WHERE id = $1',
        [ref.id],
      );
      const linked = resolved[0] && byId.get(resolved[0].id);
      if (!linked) throw Object.assign(new Error(`input file ${ref.value} is gone`), { code: 'file_unavailable' });
      name = linked.name;
      // the run links the file (run_files): it cannot be deleted before the workspace is written
      out.push({ path: `input/${name}`, open: () => storage.get(linked.storage_key) });
    }
    setField(shown, ref.field, `input/${name}`);
  }
  return { files: out, input: shown };
}

/** Sets input.<key> or input.<key>[i] in the copy shown to the agent. */
function setField(input: Record<string, unknown>, field: string, value: string): void {
  const m = /^input\.([^[]+)(?:\[(\d+)\])?$/.exec(field);
  if (!m) return;
  if (m[2] === undefined) input[m[1]] = value;
  else (input[m[1]] as unknown[])[Number(m[2])] = value;
}

const PUBLISHED_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/**
 * Makes a published file durable and links it to the run (role output). The run must still be in
 * progress; quota, FILE_MAX_BYTES and RUN_MAX_FILES apply. Publishing a name again replaces it.
 */
export async function publishRunFile(
  pool: pg.Pool, config: Config, run: { id: string; org_id: string; space_id: string; status: string },
  file: { name: string; mimeType: string; content: Buffer },
): Promise<FileWire> {
  if (!['pending', 'running'].includes(run.status)) throw problem('run_sink_closed', { detail: 'The run has ended; it publishes nothing more.' });
  if (!PUBLISHED_NAME.test(file.name)) throw problem('invalid_path', { detail: 'A published file takes a plain name (letters, digits, ".", "_", "-").' });
  if (file.content.length > config.FILE_MAX_BYTES) throw problem('payload_too_large', { detail: `A file may hold at most ${config.FILE_MAX_BYTES} bytes.` });
  const fileId = newId('file');
  const key = `${run.org_id}/${fileId}`;
  const storage = fileStorageOf(config);
  const stored = await storage.put(key, Readable.from([file.content]), { maxBytes: config.FILE_MAX_BYTES });
  let replaced: string | null = null;
  try {
    const row = await inTransaction(pool, run.org_id, async (client) => {
      const { rows: prior } = await client.query<{ file_id: string; storage_key: string }>(
        `SELECT rf.file_id, f.storage_key FROM run_files rf JOIN files f ON f.id = rf.file_id WHERE rf.run_id = $1 AND rf.role = 'output' AND rf.name = $2`,
        [run.id, file.name],
      );
      if (prior[0]) {
        await client.query('DELETE FROM files WHERE id = $1', [prior[0].file_id]);
        replaced = prior[0].storage_key;
      } else {
        const { rows: counted } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM run_files WHERE run_id = $1', [run.id]);
        if (counted[0].n >= config.RUN_MAX_FILES) throw problem('file_count_exceeded', { detail: `A run may reference or publish at most ${config.RUN_MAX_FILES} files.` });
      }
      await checkQuota(client, config, run.org_id, stored.size);
      const { rows } = await client.query<FileRow>(
        `INSERT INTO files (id, org_id, space_id, name, size, mime_type, sha256, storage_key, source, run_id, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'run', $9, $10) RETURNING ${FILE_COLUMNS}`,
        [fileId, run.org_id, run.space_id, file.name, stored.size, file.mimeType, stored.sha256, key, run.id, retentionEnd(config)],
      );
      await client.query(`INSERT INTO run_files (run_id, file_id, org_id, space_id, role, name) VALUES ($1, $2, $3, $4, 'output', $5)`, [run.id, fileId, run.org_id, run.space_id, file.name]);
      return rows[0];
    });
    if (replaced) await storage.delete(replaced).catch(() => {});
    return toFileWire(row);
  } catch (err) {
    await storage.delete(key).catch(() => {});
    throw err;
  }
}

/** A run's files, input then output, each with its workspace name. */
export async function runFilesOf(scope: SpaceScope, permissions: ReadonlySet<Permission>, runId: string): Promise<Array<FileWire & { role: 'input' | 'output'; workspace_name: string }>> {
  await getRunRow(scope, permissions, runId);
  const { rows } = await scope.pool.query<FileRow & { role: 'input' | 'output'; workspace_name: string }>(
    `SELECT ${FILE_COLUMNS.split(', ').map((c) => `f.${c}`).join(', ')}, rf.role, rf.name AS workspace_name
       FROM run_files rf JOIN files f ON f.id = rf.file_id
      WHERE rf.run_id = $1 AND rf.org_id = $2 AND rf.space_id = $3
      ORDER BY rf.role, rf.created_at, rf.name`,
    [runId, scope.orgId, scope.spaceId],
  );
  return rows.map((r) => ({ ...toFileWire(r), role: r.role, workspace_name: r.workspace_name }));
}
