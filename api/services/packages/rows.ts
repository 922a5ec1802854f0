// Reading package rows and their versions, always within one organization.
import semver from 'semver';
import { isPackageId, resolveVersionSpec, type Manifest, type PackageType } from '../../../lib/afps/index.ts';
import { problem } from '../../../lib/problem.ts';
import { canRead, notFound, type PackageScope } from './access.ts';
import type { Queryable } from './store.ts';

export interface PackageRow {
  orgId: string;
  id: string;
  type: PackageType;
  homeSpaceId: string;
  createdBy: string | null;
  distTags: Record<string, string>;
  draftBaseVersion: string | null;
  draftDetached: boolean;
  draftIntegrity: string;
  draftUpdatedAt: Date;
  forkedFrom: string | null;
  createdAt: Date;
  updatedAt: Date;
  deletedAt: Date | null;
  /** placement in the space the lookup named: null when not placed there */
  placedActive: boolean | null;
}

export interface VersionRow {
  version: string;
  integrity: string;
  yanked: boolean;
  publishedAt: Date;
  publishedBy: string | null;
  archiveDigest: string;
  archiveSize: number;
}

const PACKAGE_COLUMNS = `p.org_id AS "orgId", p.id, p.type, p.home_space_id AS "homeSpaceId", p.created_by AS "createdBy",
  p.dist_tags AS "distTags", p.draft_base_version AS "draftBaseVersion", p.draft_detached AS "draftDetached",
  p.draft_integrity AS "draftIntegrity", p.draft_updated_at AS "draftUpdatedAt", p.forked_from AS "forkedFrom",
  p.created_at AS "createdAt", p.updated_at AS "updatedAt", p.deleted_at AS "deletedAt"`;

export interface FindOptions {
  /** lock the row for this transaction; nowait answers 409 conflict when another writer holds it */
  lock?: 'wait' | 'nowait';
  includeDeleted?: boolean;
}

/** A package of the organization, with its placement in `spaceId`. */
export async function findPackage(q: Queryable, orgId: string, spaceId: string, id: string, opts: FindOptions = {}): Promise<PackageRow | null> {
  if (!isPackageId(id)) return null;
  const lock = opts.lock === 'wait' ? ' FOR UPDATE OF p' : opts.lock === 'nowait' ? ' FOR UPDATE OF p NOWAIT' : '';
  try {
    const { rows } = await q.query(
      `SELECT ${PACKAGE_COLUMNS}, pl.active AS "placedActive"
         FROM packages p
         LEFT JOIN package_placements pl ON pl.org_id = p.org_id AND pl.package_id = p.id AND pl.space_id = $3
        WHERE p.org_id = $1 AND p.id = $2${opts.includeDeleted ? '' : ' AND p.deleted_at IS NULL'}${lock}`,
      [orgId, id, spaceId],
    );
    return (rows[0] as PackageRow | undefined) ?? null;
  } catch (err) {
    if ((err as { code?: string }).code === '55P03') throw problem('conflict', { detail: `${id} is being modified by another request; retry.` });
    throw err;
  }
}

/** The package if the caller can read it; 404 package_not_found otherwise. */
export async function readablePackage(scope: PackageScope, id: string, q: Queryable = scope.pool, opts: FindOptions = {}): Promise<PackageRow> {
  const row = await findPackage(q, scope.orgId, scope.spaceId, id, opts);
  if (!row || !(await canRead(scope, row))) throw notFound(id);
  return row;
}

const VERSION_COLUMNS = `version, integrity, yanked, published_at AS "publishedAt", published_by AS "publishedBy",
  archive_digest AS "archiveDigest", archive_size AS "archiveSize"`;

/** Every published version, highest first. */
export async function listVersions(q: Queryable, orgId: string, packageId: string): Promise<VersionRow[]> {
  const { rows } = await q.query(`SELECT ${VERSION_COLUMNS} FROM package_versions WHERE org_id = $1 AND package_id = $2`, [orgId, packageId]);
  return (rows as VersionRow[]).sort((a, b) => semver.rcompare(a.version, b.version));
}

export async function versionManifest(q: Queryable, orgId: string, packageId: string, version: string): Promise<Manifest> {
  const { rows } = await q.query('SELECT manifest FROM package_versions WHERE org_id = $1 AND package_id = $2 AND version = $3', [orgId, packageId, version]);
  if (!rows[0]) throw problem('version_not_found', { detail: `${packageId}@${version} does not exist.` });
  const manifest = rows[0].manifest as unknown;
  // Every stored manifest was read and checked at import or publish: one that no longer names its
  // package and version is damage in the catalog, not a client error.
  const m = manifest as Record<string, unknown> | null;
  if (!m || typeof m !== 'object' || Array.isArray(m) || m.name !== packageId || m.version !== version || typeof m.type !== 'string') {
    throw problem('invalid_stored_manifest', { detail: `The stored manifest of ${packageId}@${version} is malformed.` });
  }
  return manifest as Manifest;
}

/** The highest published version, yanked or not: the one the draft is compared with. */
export function headVersion(versions: VersionRow[]): VersionRow | undefined {
  return versions[0];
}

/** What the latest dist-tag points at: the highest non-yanked stable release, else the highest non-yanked prerelease. */
export function latestVersion(versions: Array<{ version: string; yanked: boolean }>): string | undefined {
  const live = versions.filter((v) => !v.yanked).map((v) => v.version);
  const stable = live.filter((v) => semver.prerelease(v) === null);
  return semver.rsort(stable.length ? stable : live)[0];
}

/**
 * Resolves an exact version, dist-tag or range among the stored versions: 404 version_not_found,
 * 410 version_yanked for an exact yanked version.
 */
export function resolveStored(packageId: string, versions: VersionRow[], distTags: Record<string, string>, spec: string): VersionRow {
  const resolution = resolveVersionSpec(spec, versions, distTags);
  if ('error' in resolution) {
    if (resolution.error === 'version_yanked') throw problem('version_yanked', { detail: `${packageId}@${spec} was yanked.` });
    throw problem('version_not_found', { detail: `No version of ${packageId} matches ${JSON.stringify(spec)}.` });
  }
  return versions.find((v) => v.version === resolution.version)!;
}

/** The draft's file tree source: its own rows when detached, else its base version's. */
export function draftSource(row: PackageRow): string | null {
  return row.draftDetached ? null : row.draftBaseVersion;
}
