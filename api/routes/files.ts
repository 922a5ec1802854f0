// Staged uploads and durable files (spec: Files, uploads, others). Space-scoped except the two
// links usable without headers: the upload URL and the preview link, each carrying a sealed token
// and rate limited by client IP.
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { spaceScopeOf } from '../../db/tenant.ts';
import { lifecycleGates } from '../middleware/gates.ts';
import type { Request, Response } from '../http.ts';
import { CursorQuery, cursorList, cursorPage } from '../lists.ts';
import { created, handled, noContent, ok, route, type Reply } from '../route.ts';
import * as files from '../services/files/files.ts';
import { publishRunFile, runFilesOf } from '../services/files/run-files.ts';
import { readRawBody } from '../middleware/body.ts';
import { openSink } from '../services/runs/events.ts';
import { problem } from '../../lib/problem.ts';
import { parseBody } from '../validation.ts';
import type { AppDeps } from '../deps.ts';
import { allowLongBody } from '../server.ts';

const TAG = 'Files';
const SHA256 = /^[0-9a-fA-F]{64}$/;

export const FileRecord = z.object({
  id: z.string(),
  object: z.literal('file'),
  name: z.string(),
  size: z.number().int(),
  mime_type: z.string(),
  sha256: z.string(),
  source: z.enum(['upload', 'run']),
  run_id: z.string().nullable(),
  kept: z.boolean(),
  expiresAt: z.string().nullable(),
  createdAt: z.string(),
}).meta({ id: 'File' });

const FileWithPreview = FileRecord.extend({ preview_url: z.string(), preview_expires_at: z.string() }).meta({ id: 'FileWithPreview' });
const FileList = z.object({ object: z.literal('list'), data: z.array(FileRecord), hasMore: z.boolean() });
const Upload = z.object({
  id: z.string(),
  object: z.literal('upload'),
  name: z.string(),
  size: z.number().int(),
  mime_type: z.string(),
  upload_url: z.string(),
  expiresAt: z.string(),
}).meta({ id: 'Upload' });
const RunFile = FileRecord.extend({ role: z.enum(['input', 'output']), workspace_name: z.string() }).meta({ id: 'RunFile' });
const RunFileList = z.object({ object: z.literal('list'), data: z.array(RunFile), hasMore: z.boolean() });

const IdParams = z.object({ id: z.string() });
const TokenQuery = z.object({ token: z.string().min(1).max(2000) });
// no flags: the document carries the pattern's source, which clients compile as ECMA-262 without flags
const MIME = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}$/;

const UPLOAD_LIMIT = { perMinute: 20 };
const CONTENT_LIMIT = { perMinute: 60, by: 'ip' as const };
const READ_LIMIT = { perMinute: 120 };
const WRITE_LIMIT = { perMinute: 60 };
const PREVIEW_LIMIT = { perMinute: 120, by: 'ip' as const };
const PER_RUN = { perMinute: 200, by: 'run' as const };
/** a published file travels base64 in a signed JSON body: room for the sidecar's 10 MiB */
const PUBLISH_MAX_BODY = 16 * 1024 * 1024;
const Published = z.object({
  name: z.string().min(1).max(200),
  mimeType: z.string().regex(MIME).default('application/octet-stream'),
  content: z.string().max(PUBLISH_MAX_BODY).regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64').meta({ examples: ['aGVsbG8='] }),
}).strict();
const SIGNATURE_HEADERS = [
  { name: 'webhook-id', required: true, description: 'Unique message id.' },
  { name: 'webhook-timestamp', required: true, description: 'Unix seconds; must be within 5 minutes of the server clock.' },
  { name: 'webhook-signature', required: true, description: 'v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>"> with the run secret.' },
];

/** Types a browser may render from the API's origin: none of them runs script. */
const PREVIEWABLE = new Set(['text/plain', 'text/csv', 'image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf', 'application/json']);

/**
 * The base of signed upload and preview links, which carry a bearer token: PUBLIC_URL, else the
 * address this server accepted the connection on (the socket's, which no caller writes), else the
 * configured HOST:PORT. Never the request's Host or X-Forwarded-* headers: a forged one would send
 * the token to the forger's host.
 */
export function linkBaseOf(req: Pick<Request, 'socket'>, deps: Pick<AppDeps, 'config'>): string {
  if (deps.config.PUBLIC_URL) return deps.config.PUBLIC_URL.replace(/\/+$/, '');
  const address = req.socket.localAddress?.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
  const port = req.socket.localPort;
  if (address && port) return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
  const host = deps.config.HOST;
  return `http://${host.includes(':') ? `[${host}]` : host}:${deps.config.PORT}`;
}

function dispositionName(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  return `filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/** Streams a file's content (or its range) as the answer. */
async function sendContent(res: Response, content: files.FileContent, extra: Record<string, string>): Promise<Reply> {
  const etag = files.fileEtag(content.file);
  if (content.status === 304) return { status: 304, headers: { ETag: etag } };
  if (content.status === 416) {
    return { status: 416, headers: { 'Content-Range': `bytes */${content.file.size}`, ETag: etag } };
  }
  res.statusCode = content.status;
  res.setHeader('ETag', etag);
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('Cache-Control', 'private, no-cache');
  for (const [k, v] of Object.entries(extra)) res.setHeader(k, v);
  if (content.range) {
    res.setHeader('Content-Range', `bytes ${content.range.start}-${content.range.end}/${content.file.size}`);
    res.setHeader('Content-Length', String(content.range.end - content.range.start + 1));
  } else {
    res.setHeader('Content-Length', String(content.file.size));
  }
  await pipeline(content.body!, res).catch(() => res.destroy());
  return handled();
}

function conditionalHeaders(req: Request) {
  const pick = (k: string) => (typeof req.headers[k] === 'string' ? (req.headers[k] as string) : undefined);
  return { range: pick('range'), ifNoneMatch: pick('if-none-match') };
}

export const fileRoutes = [
  route({
    method: 'post', path: '/api/uploads', summary: 'Stage an upload: answers a single-use URL for its content', tag: TAG,
    // where the content goes
    location: (b) => b.upload_url,
    permission: 'agents:run', rateLimit: UPLOAD_LIMIT,
    body: z.object({
      name: z.string().min(1).max(255).refine((n) => !/[/\\\0]/.test(n) && n !== '.' && n !== '..', 'must be a file name without folders'),
      // a coerced numeric field: absent is invalid_type (spec, Validation)
      size: z.coerce.number().int().nonnegative(),
      mime_type: z.string().regex(MIME, 'must be a media type such as text/plain').meta({ examples: ['text/plain', 'image/png', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'] }),
      sha256: z.string().regex(SHA256, 'must be 64 hexadecimal characters').optional(),
    }).strict(),
    responses: {
      201: { description: 'Staged', schema: Upload },
      403: { description: 'storage_limit_exceeded' },
      413: { description: 'payload_too_large: over FILE_MAX_BYTES' },
      429: { description: 'upload_staging_limit_exceeded or rate_limited' },
    },
    handler: async ({ ctx, body, req, deps }) =>
      created(await files.createUpload(spaceScopeOf(ctx, deps.database), deps.config, deps.secrets, linkBaseOf(req, deps), body)),
  }),
  route({
    method: 'put', path: '/api/uploads/_content', summary: 'Send the content of a staged upload (the URL is the credential)', tag: TAG,
    stage: 'public', rateLimit: CONTENT_LIMIT, query: TokenQuery, rawBody: true,
    // the content streams to storage: the route's own limit is FILE_MAX_BYTES, not the API body limit
    bodyLimit: (config) => config.FILE_MAX_BYTES,
    bodyContent: { 'application/octet-stream': z.string().describe("the file's bytes") },
    responses: {
      201: { description: 'Written: the durable file', schema: FileRecord },
      400: { description: 'checksum_mismatch, or fewer bytes than staged' },
      401: { description: 'the link is not valid' },
      409: { description: 'upload_already_written' },
      410: { description: 'upload_expired' },
      413: { description: 'payload_too_large: more bytes than staged' },
    },
    location: (b) => `/api/files/${b.id}`,
    handler: async ({ query, req, res, deps }) => {
      lifecycleGates(deps.lifecycle)(req, res);
      allowLongBody(req, res);
      const length = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
      try {
        return created(await files.writeUploadContent({ pool: deps.database.pool, config: deps.config, secrets: deps.secrets }, query.token, length, req));
      } catch (err) {
        // an unread rest of the body is not worth draining after a refusal
        if (!req.readableEnded) res.shouldKeepAlive = false;
        throw err;
      }
    },
  }),
  route({
    method: 'get', path: '/api/files', summary: 'List durable files (cursor-paged)', tag: TAG,
    permission: 'files:read', rateLimit: READ_LIMIT, query: CursorQuery,
    responses: { 200: { description: 'A page of files', schema: FileList } },
    handler: async ({ ctx, query, req, deps }) => {
      const page = cursorPage(query);
      const rows = await files.listFiles(spaceScopeOf(ctx, deps.database), page);
      const { body, headers } = cursorList(req, page, rows);
      return ok(body, headers);
    },
  }),
  route({
    method: 'get', path: '/api/files/{id}', summary: 'Read a durable file, with a short-lived preview link', tag: TAG,
    permission: 'files:read', rateLimit: READ_LIMIT, params: IdParams,
    responses: { 200: { description: 'The file', schema: FileWithPreview } },
    handler: async ({ ctx, params, req, deps }) =>
      ok(await files.getFileWithPreview(spaceScopeOf(ctx, deps.database), deps.config, deps.secrets, linkBaseOf(req, deps), params.id)),
  }),
  route({
    method: 'get', path: '/api/files/{id}/content', summary: "A durable file's bytes (Range requests, ETag)", tag: TAG,
    permission: 'files:read', rateLimit: READ_LIMIT, params: IdParams,
    headers: [
      { name: 'Range', description: 'one range, bytes=<first>-<last> (either may be omitted)' },
      { name: 'If-None-Match', description: 'the ETag of a copy held: 304 when it is current' },
    ],
    responses: {
      200: { description: 'The content, in its media type, as an attachment', contentType: '*/*', headers: ['ETag'] },
      206: { description: 'The requested range', contentType: '*/*', headers: ['ETag'] },
      304: { description: 'Not modified', headers: ['ETag'] },
      416: { description: 'Range not satisfiable', headers: ['ETag'] },
    },
    handler: async ({ ctx, params, req, res, deps }) => {
      const content = await files.fileContent(spaceScopeOf(ctx, deps.database), deps.config, params.id, conditionalHeaders(req));
      return sendContent(res, content, {
        'Content-Type': content.file.mime_type,
        'Content-Disposition': `attachment; ${dispositionName(content.file.name)}`,
        'X-Content-Type-Options': 'nosniff',
        'Content-Security-Policy': "sandbox; default-src 'none'",
      });
    },
  }),
  route({
    method: 'delete', path: '/api/files/{id}', summary: 'Delete a durable file', tag: TAG,
    permission: 'files:delete', rateLimit: WRITE_LIMIT, params: IdParams,
    responses: { 204: { description: 'Deleted' }, 409: { description: 'file_in_use: runs reference it (in progress or ended: a run keeps its input and output files for its record and a rerun); delete those runs first' } },
    handler: async ({ ctx, params, deps }) => {
      await files.deleteFile(spaceScopeOf(ctx, deps.database), deps.config, params.id);
      return noContent();
    },
  }),
  route({
    method: 'post', path: '/api/files/{id}/keep', summary: 'Keep a durable file past the retention period', tag: TAG,
    permission: 'files:delete', rateLimit: WRITE_LIMIT, params: IdParams,
    responses: { 200: { description: 'The file, kept', schema: FileRecord } },
    handler: async ({ ctx, params, deps }) => ok(await files.keepFile(spaceScopeOf(ctx, deps.database), params.id)),
  }),
  route({
    method: 'get', path: '/preview/files/{id}', summary: 'Preview a file through a short-lived signed link (no headers needed)', tag: TAG,
    stage: 'public', rateLimit: PREVIEW_LIMIT, params: IdParams, query: TokenQuery,
    responses: {
      200: { description: 'The content; types outside a safe list come as an application/octet-stream attachment', contentType: '*/*', headers: ['ETag'] },
      206: { description: 'The requested range', contentType: '*/*', headers: ['ETag'] },
      304: { description: 'Not modified', headers: ['ETag'] },
      401: { description: 'the link is not valid or expired' },
      416: { description: 'Range not satisfiable', headers: ['ETag'] },
    },
    handler: async ({ params, query, req, res, deps }) => {
      const content = await files.previewContent(deps.database.pool, deps.config, deps.secrets, params.id, query.token, conditionalHeaders(req));
      const type = content.file.mime_type.toLowerCase();
      const safe = PREVIEWABLE.has(type);
      return sendContent(res, content, {
        'Content-Type': safe ? (type.startsWith('text/') ? `${type}; charset=utf-8` : type) : 'application/octet-stream',
        'Content-Disposition': `${safe ? 'inline' : 'attachment'}; ${dispositionName(content.file.name)}`,
        'X-Content-Type-Options': 'nosniff',
        'Content-Security-Policy': "sandbox; default-src 'none'",
        'Cross-Origin-Resource-Policy': 'same-origin',
      });
    },
  }),
  route({
    method: 'post', path: '/internal/runs/{id}/files', summary: 'Publish a file of the run (publish_file; runner to platform)', tag: 'Run sink',
    stage: 'internal', rateLimit: PER_RUN, params: IdParams, rawBody: true, headers: SIGNATURE_HEADERS,
    bodyLimit: () => PUBLISH_MAX_BODY,
    location: (b) => `/api/files/${b.id}`,
    responses: { 201: { description: 'The durable file', schema: FileRecord }, 401: { description: 'Signature missing or wrong' } },
    handler: async ({ params, req, deps }) => {
      const raw = await readRawBody(req, PUBLISH_MAX_BODY);
      const headers = Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((k) => [k, typeof req.headers[k] === 'string' ? (req.headers[k] as string) : undefined]));
      await openSink({ pool: deps.database.pool, secrets: deps.secrets }, params.id, headers, raw);
      let json: unknown;
      try {
        json = JSON.parse(raw.toString('utf8'));
      } catch {
        throw problem('invalid_request', { detail: 'The request body is not valid JSON.' });
      }
      const body = parseBody(Published, json);
      const { rows } = await deps.database.pool.query<{ id: string; org_id: string; space_id: string; status: string }>(
        'SELECT id, org_id, space_id, status FROM runs WHERE id = $1', [params.id]);
      const file = await publishRunFile(deps.database.pool, deps.config, rows[0], { name: body.name, mimeType: body.mimeType, content: Buffer.from(body.content, 'base64') });
      return created(file);
    },
  }),
  route({
    method: 'get', path: '/api/runs/{id}/files', summary: "A run's files: those its launch named (input) and those it published (output)", tag: TAG,
    permission: 'files:read', rateLimit: READ_LIMIT, params: IdParams,
    responses: { 200: { description: "The run's files", schema: RunFileList } },
    handler: async ({ ctx, params, deps }) => ok({ object: 'list', data: await runFilesOf(spaceScopeOf(ctx, deps.database), ctx.permissions, params.id), hasMore: false }),
  }),
];
