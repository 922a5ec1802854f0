// Reading a package's files (of the draft, or of a version) and downloading a version's archive
// exactly as it was imported.
import path from 'node:path';
import { sha256Integrity } from '../../../lib/afps/index.ts';
import { problem } from '../../../lib/problem.ts';
import type { PackageScope } from './access.ts';
import { toFileRecord, type FileRecord } from './draft-tree.ts';
import { draftSource, listVersions, readablePackage, resolveStored, type PackageRow, type VersionRow } from './rows.ts';
import { blobChunks, listTree, readTree } from './store.ts';

async function treeSourceOf(scope: PackageScope, pkg: PackageRow, versionSpec: string | undefined): Promise<{ version: string | null; source: string | null }> {
  if (versionSpec === undefined || versionSpec === '') return { version: null, source: draftSource(pkg) };
  const chosen = resolveStored(pkg.id, await listVersions(scope.pool, scope.orgId, pkg.id), pkg.distTags, versionSpec);
  return { version: chosen.version, source: chosen.version };
}

export async function listFiles(scope: PackageScope, id: string, versionSpec?: string): Promise<{ object: 'list'; data: FileRecord[]; hasMore: false; version: string | null }> {
  const pkg = await readablePackage(scope, id);
  const { version, source } = await treeSourceOf(scope, pkg, versionSpec);
  const entries = await listTree(scope.pool, scope.orgId, pkg.id, source);
  return { object: 'list', data: entries.map(toFileRecord), hasMore: false, version };
}

const TEXT_TYPES: Record<string, string> = {
  '.md': 'text/markdown; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
  '.py': 'text/plain; charset=utf-8',
  '.sh': 'text/plain; charset=utf-8',
  '.yaml': 'text/plain; charset=utf-8',
  '.yml': 'text/plain; charset=utf-8',
};

export async function fileContent(scope: PackageScope, id: string, filePath: string, versionSpec?: string): Promise<{ bytes: Buffer; contentType: string; digest: string }> {
  const pkg = await readablePackage(scope, id);
  const { source } = await treeSourceOf(scope, pkg, versionSpec);
  const files = await readTree(scope.pool, scope.orgId, pkg.id, source, filePath);
  const bytes = files.get(filePath);
  if (!bytes) throw problem('not_found', { param: 'path', detail: `${id} has no file ${filePath}.` });
  return { bytes, contentType: TEXT_TYPES[path.extname(filePath).toLowerCase()] ?? 'application/octet-stream', digest: sha256Integrity(bytes) };
}

export interface Download {
  packageId: string;
  version: VersionRow;
  filename: string;
  chunks: AsyncGenerator<Buffer>;
}

/** The stored archive of a version (exact, dist-tag or range); 410 version_yanked for an exact yanked version. */
export async function openDownload(scope: PackageScope, id: string, versionSpec: string): Promise<Download> {
  const pkg = await readablePackage(scope, id);
  const version = resolveStored(pkg.id, await listVersions(scope.pool, scope.orgId, pkg.id), pkg.distTags, versionSpec);
  const filename = `${pkg.id.slice(1).replace('/', '-')}-${version.version}.afps`;
  return { packageId: pkg.id, version, filename, chunks: blobChunks(scope.pool, scope.orgId, version.archiveDigest) };
}
