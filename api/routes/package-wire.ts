// Wire shapes shared by the package route families (they validate nothing: they document).
import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import type { AppDeps } from '../deps.ts';
import { packageScopeOf, type PackageScope } from '../services/packages/access.ts';

export const PackageParams = z.object({
  scope: z.string().describe('package scope, with its @ (for example @acme)'),
  name: z.string().describe('package name'),
});

export function packageIdOf(params: { scope: string; name: string }): string {
  return `${params.scope}/${params.name}`;
}

export function scopeOf(ctx: RequestContext, deps: AppDeps, spaceId?: string): PackageScope {
  return packageScopeOf(ctx, deps, spaceId);
}

/** A multipart upload: the archive in the field "file". */
export const ArchiveUpload = z.object({ file: z.string().meta({ format: 'binary', description: 'the archive (.afps, .zip, .afps-bundle)' }) });

export const PublishedRef = z.object({
  packageId: z.string(),
  type: z.enum(['agent', 'skill', 'mcp-server', 'integration']),
  version: z.string(),
  integrity: z.string().describe('sha256-<base64> over the package file tree'),
}).meta({ id: 'PublishedPackageVersion' });

export const FileRecord = z.object({
  path: z.string(),
  size: z.number().int(),
  sha256: z.string().describe('hex SHA-256 of the content'),
  integrity: z.string(),
}).meta({ id: 'PackageFile' });

export const VersionRecord = z.object({
  version: z.string(),
  integrity: z.string(),
  yanked: z.boolean(),
  published_at: z.string(),
  published_by: z.string().nullable(),
  archive_size: z.number().int(),
}).meta({ id: 'PackageVersion' });

export const PackageSummary = z.object({
  packageId: z.string(),
  type: z.string(),
  display_name: z.string().nullable(),
  description: z.string().nullable(),
  latest_version: z.string().nullable(),
  dist_tags: z.record(z.string(), z.string()),
  home_space_id: z.string(),
  placement: z.enum(['home', 'active', 'inactive', 'none']),
  created_by: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
}).meta({ id: 'PackageSummary' });

export const PackageRecord = PackageSummary.extend({
  versions: z.array(VersionRecord),
  placements: z.array(z.object({ spaceId: z.string(), active: z.boolean() })),
  draft: z.object({ base_version: z.string().nullable(), has_unarchived_changes: z.boolean(), etag: z.string(), updatedAt: z.string() }),
  home_writable: z.boolean(),
  home_deletable: z.boolean(),
  forked_from: z.string().nullable().describe('the package this one was forked from (POST /api/packages/{scope}/{name}/fork), null otherwise'),
}).meta({ id: 'Package' });

export const DraftRecord = z.object({
  packageId: z.string(),
  type: z.string(),
  base_version: z.string().nullable(),
  has_unarchived_changes: z.boolean(),
  manifest: z.record(z.string(), z.unknown()).nullable(),
  files: z.array(FileRecord),
  etag: z.string(),
  updatedAt: z.string(),
}).meta({ id: 'PackageDraft' });

export const SkillPackageRecord = z.object({
  id: z.string(),
  orgId: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  definition: z.string(),
  content: z.string(),
  source: z.literal('local'),
  created_by: z.string().nullable(),
  auto_installed: z.boolean(),
  version: z.string().nullable(),
  manifest: z.record(z.string(), z.unknown()),
  manifest_name: z.string(),
  version_count: z.number().int(),
  has_unarchived_changes: z.boolean(),
  forked_from: z.string().nullable(),
  home_space_id: z.string(),
  home_writable: z.boolean(),
  home_deletable: z.boolean(),
  home_shareable: z.boolean(),
  agents: z.array(z.object({ id: z.string(), display_name: z.string() })),
  createdAt: z.string(),
  updatedAt: z.string(),
}).meta({ id: 'SkillPackage' });

export const FileBody = z.union([
  z.string(),
  z.object({ content: z.string(), encoding: z.enum(['utf8', 'base64']).optional() }).strict(),
]);

export const IF_MATCH_HEADER = { name: 'If-Match', description: 'ETag of the draft this write is based on (412 precondition_failed when stale).' };
