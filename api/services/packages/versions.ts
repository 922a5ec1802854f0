// Publishing and yanking versions. Published versions are immutable and forward-only; the
// latest dist-tag follows the highest non-yanked release.
import type pg from 'pg';
import { checkPublishable, type Manifest, type PackageType } from '../../../lib/afps/index.ts';
import { problem } from '../../../lib/problem.ts';
import { requireHomeAuthority, type PackageScope } from './access.ts';
import { headVersion, latestVersion, listVersions, readablePackage, type PackageRow, type VersionRow } from './rows.ts';
import { blobOf, entriesOf, putBlobs, treeIntegrityOf, type Queryable } from './store.ts';
import { inTransaction } from '../../../db/transaction.ts';

/** Ids under this scope belong to the platform. */
export const SYSTEM_SCOPE = '@system';

export function isSystemPackage(id: string): boolean {
  return id.startsWith(`${SYSTEM_SCOPE}/`);
}

export interface NewVersion {
  version: string;
  manifest: Manifest;
  files: Map<string, Buffer>;
  /** the archive to keep and serve on download, byte for byte */
  archive: Buffer;
}

export interface PublishedRef {
  packageId: string;
  type: PackageType;
  version: string;
  integrity: string;
}

/** 409 version_exists / version_not_higher when `version` cannot follow the published ones. */
export function assertPublishable(packageId: string, version: string, existing: VersionRow[]): void {
  const verdict = checkPublishable(version, existing.map((v) => v.version));
  if (verdict === 'version_exists') throw problem('version_exists', { detail: `${packageId}@${version} is already published; bump the version.` });
  if (verdict === 'version_not_higher') {
    throw problem('version_not_higher', { detail: `${version} is lower than ${headVersion(existing)!.version}, the highest published version of ${packageId}.` });
  }
}

export interface StoreOptions {
  /** the draft becomes the new version's tree */
  resetDraft: boolean;
  /** create the package row too, homed in this space (its draft starts as this version) */
  createIn?: string;
}

/**
 * Stores a version of a package whose row the transaction locked (or creates it), and moves the
 * latest dist-tag: the blobs, then one statement for the package row, the version and its tree.
 */
export async function insertVersion(tx: Queryable, scope: PackageScope, pkg: { id: string; type: PackageType }, nv: NewVersion, existing: VersionRow[], opts: StoreOptions): Promise<PublishedRef> {
  const entries = entriesOf(nv.files);
  const integrity = treeIntegrityOf(entries);
  const archive = blobOf(nv.archive);
  await putBlobs(tx, scope.orgId, [...entries.map((e) => ({ digest: e.digest, bytes: nv.files.get(e.path)! })), archive]);
  const latest = latestVersion([...existing, { version: nv.version, yanked: false }]) ?? null;
  const params: unknown[] = [
    scope.orgId, pkg.id, nv.version, JSON.stringify(nv.manifest), integrity, archive.digest, nv.archive.length, scope.actor.userId, latest,
    entries.map((e) => e.path), entries.map((e) => e.digest), entries.map((e) => e.size),
  ];
  let packageRow: string;
  if (opts.createIn !== undefined) {
    params.push(pkg.type, opts.createIn);
    packageRow = `INSERT INTO packages (org_id, id, type, home_space_id, created_by, dist_tags, draft_base_version, draft_detached, draft_integrity)
      VALUES ($1, $2, $13, $14, $8, jsonb_build_object('latest', $9::text), $3, false, $5)`;
  } else {
    const draft = opts.resetDraft ? ', draft_base_version = $3, draft_detached = false, draft_integrity = $5, draft_updated_at = now()' : '';
    packageRow = `UPDATE packages SET updated_at = now()${draft},
      dist_tags = CASE WHEN $9::text IS NULL THEN dist_tags - 'latest' ELSE dist_tags || jsonb_build_object('latest', $9::text) END
      WHERE org_id = $1 AND id = $2`;
  }
  // one statement: the foreign keys are checked at its end, after the package row exists
  await tx.query(
    `WITH package_row AS (${packageRow}),
          version_row AS (
            INSERT INTO package_versions (org_id, package_id, version, manifest, integrity, archive_digest, archive_size, published_by)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8))${opts.resetDraft && opts.createIn === undefined ? `,
          draft_rows AS (DELETE FROM package_draft_files WHERE org_id = $1 AND package_id = $2)` : ''}
     INSERT INTO package_version_files (org_id, package_id, version, path, digest, size)
     SELECT $1, $2, $3, p, d, s FROM unnest($10::text[], $11::text[], $12::bigint[]) AS t(p, d, s)`,
    params,
  );
  return { packageId: pkg.id, type: pkg.type, version: nv.version, integrity };
}

/** Whether the draft holds changes the highest published version does not. */
export function draftIsDirty(pkg: PackageRow, versions: VersionRow[]): boolean {
  const head = headVersion(versions);
  return head !== undefined && pkg.draftIntegrity !== head.integrity;
}

export interface VersionRecord {
  version: string;
  integrity: string;
  yanked: boolean;
  published_at: string;
  published_by: string | null;
  archive_size: number;
}

export function toVersionRecord(v: VersionRow): VersionRecord {
  return {
    version: v.version,
    integrity: v.integrity,
    yanked: v.yanked,
    published_at: v.publishedAt.toISOString(),
    published_by: v.publishedBy,
    archive_size: v.archiveSize,
  };
}

export async function versionsOf(scope: PackageScope, id: string): Promise<{ versions: VersionRecord[]; dist_tags: Record<string, string> }> {
  const pkg = await readablePackage(scope, id);
  const versions = await listVersions(scope.pool, scope.orgId, pkg.id);
  return { versions: versions.map(toVersionRecord), dist_tags: pkg.distTags };
}

/** Yanks an exact version: asking for it exactly answers 410, no range or tag resolves to it, latest moves. */
export async function yankVersion(scope: PackageScope, id: string, version: string): Promise<VersionRecord> {
  const pkg = await readablePackage(scope, id);
  await requireHomeAuthority(scope, pkg, 'write');
  return inTransaction(scope.pool, async (tx: pg.PoolClient) => {
    await readablePackage(scope, id, tx, { lock: 'wait' });
    const versions = await listVersions(tx, scope.orgId, id);
    const target = versions.find((v) => v.version === version);
    if (!target) throw problem('version_not_found', { detail: `${id}@${version} does not exist.` });
    if (!target.yanked) {
      await tx.query('UPDATE package_versions SET yanked = true WHERE org_id = $1 AND package_id = $2 AND version = $3', [scope.orgId, id, version]);
      target.yanked = true;
      const latest = latestVersion(versions);
      await tx.query(
        `UPDATE packages SET dist_tags = CASE WHEN $3::text IS NULL THEN dist_tags - 'latest' ELSE dist_tags || jsonb_build_object('latest', $3::text) END, updated_at = now()
          WHERE org_id = $1 AND id = $2`,
        [scope.orgId, id, latest ?? null],
      );
    }
    return toVersionRecord(target);
  });
}
