// Package drafts (spec: Packages, Conditional requests): read with a strong ETag, edit files,
// save whole (If-Match required: 428 when missing, 412 when stale), publish; restore a skill
// version into the draft.
import { PACKAGE_READ, PACKAGE_WRITE } from '../../lib/permissions.ts';
import type { Request } from '../http.ts';
import { z } from 'zod';
import { created, ok, route, type Reply } from '../route.ts';
import { deleteDraftFile, getDraft, moveDraftFile, publishDraft, putDraftFile, saveDraft, type DraftReply } from '../services/packages/drafts.ts';
import { restoreSkillVersion } from '../services/packages/skills.ts';
import { DraftRecord, FileBody, IF_MATCH_HEADER, PackageParams, PublishedRef, SkillPackageRecord, packageIdOf, scopeOf } from './package-wire.ts';

const TAG = 'Package drafts';

function ifMatch(req: Request): string | undefined {
  const value = req.headers['if-match'];
  return typeof value === 'string' ? value : undefined;
}

function draftReply(reply: DraftReply): Reply {
  return ok(reply.draft, { ETag: reply.etag });
}

/** 304 when If-None-Match names the draft's current ETag (weak comparison, RFC 9110), or is *. */
function notModified(req: Request, etag: string): boolean {
  const value = req.headers['if-none-match'];
  if (typeof value !== 'string') return false;
  const bare = (t: string) => t.trim().replace(/^W\//, '');
  return value.split(',').some((t) => t.trim() === '*' || bare(t) === bare(etag));
}

const DraftResponses = { 200: { description: 'The draft; ETag header', schema: DraftRecord, headers: ['ETag'] } };

export const packageDraftRoutes = [
  route({
    method: 'get', path: '/api/packages/{scope}/{name}/draft', summary: 'Read the draft (strong ETag)', tag: TAG,
    authority: 'resource', permission: PACKAGE_READ, params: PackageParams,
    headers: [{ name: 'If-None-Match', description: 'ETag of a draft the caller holds: 304 with no body while it is still current.' }],
    responses: { ...DraftResponses, 304: { description: 'Not modified; ETag header', headers: ['ETag'] } },
    handler: async ({ ctx, params, req, deps }) => {
      const reply = await getDraft(scopeOf(ctx, deps), packageIdOf(params));
      return notModified(req, reply.etag) ? { status: 304, headers: { ETag: reply.etag } } : draftReply(reply);
    },
  }),
  route({
    method: 'put', path: '/api/packages/{scope}/{name}/draft', summary: 'Save the draft whole: manifest and, optionally, every other file', tag: TAG,
    authority: 'resource', permission: PACKAGE_WRITE, params: PackageParams, headers: [{ ...IF_MATCH_HEADER, required: true }],
    body: z.object({
      manifest: z.record(z.string(), z.unknown()),
      files: z.record(z.string(), FileBody).optional().describe('path → content (text, or {content, encoding: base64}); replaces every file but manifest.json'),
    }).strict(),
    responses: { ...DraftResponses, 412: { description: 'precondition_failed', headers: ['ETag'] }, 428: { description: 'precondition_required', headers: ['ETag'] } },
    handler: async ({ ctx, params, body, req, deps }) => draftReply(await saveDraft(scopeOf(ctx, deps), packageIdOf(params), body, ifMatch(req))),
  }),
  route({
    method: 'put', path: '/api/packages/{scope}/{name}/draft/files', summary: 'Create or replace one file of the draft', tag: TAG,
    authority: 'resource', permission: PACKAGE_WRITE, params: PackageParams, headers: [IF_MATCH_HEADER],
    body: z.object({ path: z.string().min(1), content: z.string(), encoding: z.enum(['utf8', 'base64']).optional() }).strict(),
    responses: { ...DraftResponses, 413: { description: 'file_too_large or tree_too_large' } },
    handler: async ({ ctx, params, body, req, deps }) => draftReply(await putDraftFile(scopeOf(ctx, deps), packageIdOf(params), body, ifMatch(req))),
  }),
  route({
    method: 'delete', path: '/api/packages/{scope}/{name}/draft/files', summary: 'Remove one file of the draft', tag: TAG,
    authority: 'resource', permission: PACKAGE_WRITE, params: PackageParams, headers: [IF_MATCH_HEADER],
    query: z.object({ path: z.string().min(1) }),
    responses: DraftResponses,
    handler: async ({ ctx, params, query, req, deps }) => draftReply(await deleteDraftFile(scopeOf(ctx, deps), packageIdOf(params), query.path, ifMatch(req))),
  }),
  route({
    method: 'post', path: '/api/packages/{scope}/{name}/draft/move', summary: 'Move or rename a file (or a folder) of the draft', tag: TAG,
    authority: 'resource', permission: PACKAGE_WRITE, params: PackageParams, headers: [IF_MATCH_HEADER],
    body: z.object({ from: z.string().min(1), to: z.string().min(1) }).strict(),
    responses: DraftResponses,
    handler: async ({ ctx, params, body, req, deps }) => draftReply(await moveDraftFile(scopeOf(ctx, deps), packageIdOf(params), body, ifMatch(req))),
  }),
  route({
    method: 'post', path: '/api/packages/{scope}/{name}/publish', summary: 'Publish the draft as a new version', tag: TAG,
    location: (b) => `/api/packages/${b.packageId}/versions`,
    authority: 'resource', permission: PACKAGE_WRITE, params: PackageParams,
    body: z.object({
      version: z.string().min(1).optional().describe('default: the draft manifest\'s version when still unpublished, else the next patch'),
    }).strict(),
    responses: { 201: { description: 'Published', schema: PublishedRef } },
    handler: async ({ ctx, params, body, deps }) => created(await publishDraft(scopeOf(ctx, deps), packageIdOf(params), body)),
  }),
  route({
    method: 'post', path: '/api/packages/skills/{scope}/{name}/versions/{version}/restore', summary: 'Restore a skill version into its draft (creates no version)', tag: TAG,
    authority: 'resource', permission: 'skills:write', params: PackageParams.extend({ version: z.string().describe('exact version, dist-tag or semver range') }),
    headers: [{ name: 'If-Match', description: 'ETag of the draft this restore is based on; a mismatch is 412 and changes nothing; omitted: last write wins.' }],
    responses: {
      200: { description: 'The skill package record; ETag header of the new draft', schema: SkillPackageRecord, headers: ['ETag'] },
      412: { description: 'precondition_failed', headers: ['ETag'] },
    },
    handler: async ({ ctx, params, req, deps }) => {
      const { record, etag } = await restoreSkillVersion(scopeOf(ctx, deps), packageIdOf(params), params.version, ifMatch(req));
      return ok(record, { ETag: etag });
    },
  }),
];
