// Packages (spec: Packages): import, catalog, files and downloads, versions. Space-scoped: the
// X-Space-Id space is where the caller acts. Permissions depend on the package type, so routes
// declare none and the services judge (see api/services/packages/access.ts).
import { PACKAGE_READ, PACKAGE_WRITE, PACKAGE_DELETE } from '../../lib/permissions.ts';
import { once } from 'node:events';
import { z } from 'zod';
import { MANIFEST_FILE } from '../../lib/afps/index.ts';
import { isMultipart, readMultipartFile } from '../../lib/multipart.ts';
import { problem } from '../../lib/problem.ts';
import { readJsonBody } from '../middleware/body.ts';
import { OffsetQuery } from '../lists.ts';
import { handled, noContent, ok, route, type Reply } from '../route.ts';
import { parseBody } from '../validation.ts';
import { deletePackage, getPackage, listPackages } from '../services/packages/catalog.ts';
import { checkEditablePath, decodeContent } from '../services/packages/draft-tree.ts';
import { fileContent, listFiles, openDownload } from '../services/packages/files.ts';
import { importArchive, importFiles, type ImportOutcome } from '../services/packages/import.ts';
import type { PackageScope } from '../services/packages/access.ts';
import { importFromRepository } from '../services/packages/repository-import.ts';
import { versionsOf, yankVersion } from '../services/packages/versions.ts';
import {
  ArchiveUpload, FileBody, FileRecord, PackageParams, PackageRecord, PackageSummary, PublishedRef, VersionRecord, packageIdOf, scopeOf,
} from './package-wire.ts';

const TAG = 'Packages';
const IMPORT_LIMIT = { perMinute: 10 };
const FILES_LIMIT = { perMinute: 50 };

const JsonImport = z.object({
  manifest: z.record(z.string(), z.unknown()),
  files: z.record(z.string(), FileBody).optional(),
}).strict();

const VersionParams = PackageParams.extend({ version: z.string() });

/** A JSON import: manifest plus files; an MCP server must come as an archive. */
async function importJson(scope: PackageScope, raw: unknown): Promise<ImportOutcome> {
  const body = parseBody(JsonImport, raw ?? {});
  if (body.manifest.type === 'mcp-server') throw problem('archive_required', { detail: 'An MCP-server package is imported as a multipart .afps or .zip archive.' });
  const files = new Map<string, Buffer>([[MANIFEST_FILE, Buffer.from(`${JSON.stringify(body.manifest, null, 2)}\n`)]]);
  for (const [path, value] of Object.entries(body.files ?? {})) {
    checkEditablePath(path, `files.${path}`);
    files.set(path, typeof value === 'string' ? Buffer.from(value, 'utf8') : decodeContent(value.content, value.encoding, `files.${path}.content`));
  }
  return importFiles(scope, files);
}

export const packageRoutes = [
  route({
    method: 'post', path: '/api/packages/import', summary: 'Import a package archive (.afps or .zip) as a new package or a new version', tag: TAG,
    location: (b) => `/api/packages/${b.packageId}`,
    authority: 'resource', permission: PACKAGE_WRITE, rateLimit: IMPORT_LIMIT, rawBody: true,
    bodyContent: { 'multipart/form-data': ArchiveUpload, 'application/json': JsonImport },
    responses: {
      201: { description: 'Imported', schema: PublishedRef },
      200: { description: 'This content is already published as that version (nothing changed)', schema: PublishedRef },
      413: { description: 'payload_too_large' },
      415: { description: 'archive_required' },
      422: { description: 'package_archive_unreadable' },
    },
    handler: async ({ ctx, req, deps }): Promise<Reply> => {
      const scope = scopeOf(ctx, deps);
      let outcome;
      if (isMultipart(req)) {
        const upload = await readMultipartFile(req, { field: 'file', maxBytes: deps.config.API_BODY_LIMIT_BYTES });
        outcome = await importArchive(scope, upload.file.bytes);
      } else if (/^application\/([a-z.+-]*\+)?json\b/i.test(req.headers['content-type'] ?? '')) {
        outcome = await importJson(scope, await readJsonBody(req, deps.config.API_BODY_LIMIT_BYTES));
      } else {
        throw problem('archive_required', { detail: 'Send the package as multipart/form-data with the archive in the field "file".' });
      }
      return { status: outcome.status, body: outcome.body };
    },
  }),
  route({
    method: 'post', path: '/api/packages/import-github', summary: 'Import a package from a GitHub repository folder', tag: TAG,
    location: (b) => `/api/packages/${b.packageId}`,
    authority: 'resource', permission: PACKAGE_WRITE, rateLimit: IMPORT_LIMIT,
    body: z.object({
      url: z.string().min(1).describe('https://github.com/<owner>/<repo>[/tree/<ref>/<path>]'),
      ref: z.string().min(1).max(255).optional(),
      path: z.string().max(1024).optional(),
    }).strict(),
    responses: { 201: { description: 'Imported', schema: PublishedRef }, 200: { description: 'Already published with this content', schema: PublishedRef } },
    handler: async ({ ctx, body, deps }): Promise<Reply> => {
      const outcome = await importFromRepository(scopeOf(ctx, deps), body, deps.platformEndpoints);
      return { status: outcome.status, body: { ...outcome.body, source: outcome.source } };
    },
  }),
  route({
    method: 'get', path: '/api/packages', summary: 'Packages living or placed in this space (offset-paged)', tag: TAG,
    authority: 'resource', permission: PACKAGE_READ,
    query: OffsetQuery.extend({ type: z.enum(['agent', 'skill', 'mcp-server', 'integration']).optional() }),
    responses: { 200: { description: 'A page of packages', schema: z.object({ object: z.literal('list'), data: z.array(PackageSummary), hasMore: z.boolean(), total: z.number().int(), limit: z.number().int() }) } },
    handler: async ({ ctx, query, req, deps }) => {
      const { body, headers } = await listPackages(scopeOf(ctx, deps), req, query);
      return ok(body, headers);
    },
  }),
  route({
    method: 'get', path: '/api/packages/{scope}/{name}', summary: 'Read a package: versions, dist-tags, home and placements', tag: TAG,
    authority: 'resource', permission: PACKAGE_READ, params: PackageParams,
    responses: { 200: { description: 'The package', schema: PackageRecord } },
    handler: async ({ ctx, params, deps }) => ok(await getPackage(scopeOf(ctx, deps), packageIdOf(params))),
  }),
  route({
    method: 'delete', path: '/api/packages/{scope}/{name}', summary: 'Delete a package', tag: TAG,
    authority: 'resource', permission: PACKAGE_DELETE, params: PackageParams,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ ctx, params, deps }) => {
      await deletePackage(scopeOf(ctx, deps), packageIdOf(params));
      return noContent();
    },
  }),
  route({
    method: 'get', path: '/api/packages/{scope}/{name}/files', summary: 'Files of the draft, or of a version (?version=)', tag: TAG,
    authority: 'resource', permission: PACKAGE_READ, rateLimit: FILES_LIMIT, params: PackageParams,
    query: z.object({ version: z.string().optional().describe('exact version, dist-tag or range; the draft when omitted') }),
    responses: { 200: { description: 'The files', schema: z.object({ object: z.literal('list'), data: z.array(FileRecord), hasMore: z.boolean(), version: z.string().nullable() }) } },
    handler: async ({ ctx, params, query, deps }) => ok(await listFiles(scopeOf(ctx, deps), packageIdOf(params), query.version)),
  }),
  route({
    method: 'get', path: '/api/packages/{scope}/{name}/files/content', summary: 'The raw bytes of one file of the draft or of a version', tag: TAG,
    authority: 'resource', permission: PACKAGE_READ, rateLimit: FILES_LIMIT, params: PackageParams,
    query: z.object({ path: z.string().min(1), version: z.string().optional() }),
    responses: { 200: { description: "The file, in its own media type", contentType: '*/*', headers: ['ETag'] } },
    handler: async ({ ctx, params, query, deps }): Promise<Reply> => {
      const file = await fileContent(scopeOf(ctx, deps), packageIdOf(params), query.path, query.version);
      return { status: 200, body: file.bytes, headers: { 'Content-Type': file.contentType, ETag: `"${file.digest}"`, 'X-Content-Type-Options': 'nosniff' } };
    },
  }),
  route({
    method: 'get', path: '/api/packages/{scope}/{name}/{version}/download', summary: 'Download a version\'s archive, byte for byte as imported', tag: TAG,
    authority: 'resource', permission: PACKAGE_READ, rateLimit: FILES_LIMIT, params: VersionParams,
    responses: { 200: { description: 'The archive', contentType: 'application/zip', headers: ['ETag'] }, 410: { description: 'version_yanked' } },
    handler: async ({ ctx, params, res, deps }): Promise<Reply> => {
      const download = await openDownload(scopeOf(ctx, deps), packageIdOf(params), params.version);
      const chunks = download.chunks[Symbol.asyncIterator]();
      let next = await chunks.next(); // an unreadable artifact still answers a problem document
      res.statusCode = 200;
      res.setHeader('Content-Type', 'application/zip');
      res.setHeader('Content-Length', String(download.version.archiveSize));
      res.setHeader('Content-Disposition', `attachment; filename="${download.filename}"`);
      res.setHeader('ETag', `"${download.version.archiveDigest}"`);
      res.setHeader('X-Package-Version', download.version.version);
      res.setHeader('X-Package-Integrity', download.version.integrity);
      while (!next.done) {
        if (!res.write(next.value)) await once(res, 'drain');
        next = await chunks.next();
      }
      res.end();
      return handled();
    },
  }),
  route({
    method: 'get', path: '/api/packages/{scope}/{name}/versions', summary: 'Published versions and dist-tags', tag: TAG,
    authority: 'resource', permission: PACKAGE_READ, params: PackageParams,
    responses: { 200: { description: 'Versions, highest first', schema: z.object({ object: z.literal('list'), data: z.array(VersionRecord), hasMore: z.boolean(), dist_tags: z.record(z.string(), z.string()) }) } },
    handler: async ({ ctx, params, deps }) => {
      const { versions, dist_tags } = await versionsOf(scopeOf(ctx, deps), packageIdOf(params));
      return ok({ object: 'list', data: versions, hasMore: false, dist_tags });
    },
  }),
  route({
    method: 'post', path: '/api/packages/{scope}/{name}/versions/{version}/yank', summary: 'Yank a version: exact requests answer 410, ranges skip it', tag: TAG,
    authority: 'resource', permission: PACKAGE_WRITE, params: VersionParams,
    responses: { 200: { description: 'The yanked version', schema: VersionRecord } },
    handler: async ({ ctx, params, deps }) => ok(await yankVersion(scopeOf(ctx, deps), packageIdOf(params), params.version)),
  }),
];
