// The package catalog of a space: list, read one, delete.
import type { Request } from '../../http.ts';
import { PACKAGE_TYPES, type PackageType } from '../../../lib/afps/index.ts';
import { problem } from '../../../lib/problem.ts';
import { offsetList, offsetPage } from '../../lists.ts';
import { holds, packagePermission, permissionsIn, requireHomeAuthority, type PackageScope } from './access.ts';
import { dependentsOf } from './dependencies.ts';
import { draftEtag } from './draft-tree.ts';
import { headVersion, listVersions, readablePackage } from './rows.ts';

import { inTransaction } from '../../../db/transaction.ts';
import { toVersionRecord, type VersionRecord } from './versions.ts';
import { AGENT_DELETED_REASON, disableSchedulesOfAgent } from '../schedules/actor.ts';

export interface PackageSummary {
  packageId: string;
  type: PackageType;
  display_name: string | null;
  description: string | null;
  latest_version: string | null;
  dist_tags: Record<string, string>;
  home_space_id: string;
  /** in the space listed: home, or placed (active or switched off) */
  placement: 'home' | 'active' | 'inactive';
  created_by: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface PackageRecord extends Omit<PackageSummary, 'placement'> {
  placement: 'home' | 'active' | 'inactive' | 'none';
  versions: VersionRecord[];
  placements: Array<{ spaceId: string; active: boolean }>;
  draft: { base_version: string | null; has_unarchived_changes: boolean; etag: string; updatedAt: string };
  home_writable: boolean;
  home_deletable: boolean;
  /** the package this one was forked from */
  forked_from: string | null;
}

interface SummaryRow {
  id: string;
  type: PackageType;
  home_space_id: string;
  created_by: string | null;
  dist_tags: Record<string, string>;
  created_at: Date;
  updated_at: Date;
  active: boolean | null;
  display_name: string | null;
  description: string | null;
}

function summary(scope: PackageScope, r: SummaryRow): PackageSummary {
  return {
    packageId: r.id,
    type: r.type,
    display_name: r.display_name,
    description: r.description,
    latest_version: r.dist_tags.latest ?? null,
    dist_tags: r.dist_tags,
    home_space_id: r.home_space_id,
    placement: r.home_space_id === scope.spaceId ? 'home' : r.active ? 'active' : 'inactive',
    created_by: r.created_by,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

const SUMMARY_SQL = `
  SELECT p.id, p.type, p.home_space_id, p.created_by, p.dist_tags, p.created_at, p.updated_at, pl.active,
         v.manifest->>'display_name' AS display_name, v.manifest->>'description' AS description
    FROM packages p
    LEFT JOIN package_placements pl ON pl.org_id = p.org_id AND pl.package_id = p.id AND pl.space_id = $2
    LEFT JOIN package_versions v ON v.org_id = p.org_id AND v.package_id = p.id AND v.version = p.dist_tags->>'latest'
   WHERE p.org_id = $1 AND p.deleted_at IS NULL AND (p.home_space_id = $2 OR pl.space_id IS NOT NULL) AND p.type = ANY($3)`;

/** Packages living or placed in the space, of the types the caller may read there. */
export async function listPackages(scope: PackageScope, req: Request, query: { type?: string }) {
  const page = offsetPage(query as Record<string, unknown>);
  const perms = await permissionsIn(scope, scope.spaceId);
  const wanted = query.type ? [query.type as PackageType] : [...PACKAGE_TYPES];
  const types = wanted.filter((t) => perms.has(packagePermission(t, 'read')));
  const [{ rows }, counted] = await Promise.all([
    scope.pool.query(`${SUMMARY_SQL} ORDER BY p.id LIMIT $4 OFFSET $5`, [scope.orgId, scope.spaceId, types, page.limit + 1, page.offset]),
    scope.pool.query(`SELECT count(*)::int AS n FROM (${SUMMARY_SQL}) t`, [scope.orgId, scope.spaceId, types]),
  ]);
  return offsetList(req, page, (rows as SummaryRow[]).map((r) => summary(scope, r)), counted.rows[0].n);
}

export async function getPackage(scope: PackageScope, id: string): Promise<PackageRecord> {
  const pkg = await readablePackage(scope, id);
  const [versions, placements, head, writable, deletable] = await Promise.all([
    listVersions(scope.pool, scope.orgId, pkg.id),
    scope.pool.query('SELECT space_id, active FROM package_placements WHERE org_id = $1 AND package_id = $2 ORDER BY space_id', [scope.orgId, pkg.id]),
    scope.pool.query(
      `SELECT v.manifest->>'display_name' AS display_name, v.manifest->>'description' AS description
         FROM package_versions v WHERE v.org_id = $1 AND v.package_id = $2 AND v.version = $3`,
      [scope.orgId, pkg.id, pkg.distTags.latest ?? ''],
    ),
    holds(scope, pkg.homeSpaceId, packagePermission(pkg.type, 'write')),
    holds(scope, pkg.homeSpaceId, packagePermission(pkg.type, 'delete')),
  ]);
  const highest = headVersion(versions);
  return {
    packageId: pkg.id,
    type: pkg.type,
    display_name: head.rows[0]?.display_name ?? null,
    description: head.rows[0]?.description ?? null,
    latest_version: pkg.distTags.latest ?? null,
    dist_tags: pkg.distTags,
    home_space_id: pkg.homeSpaceId,
    placement: pkg.homeSpaceId === scope.spaceId ? 'home' : pkg.placedActive === null ? 'none' : pkg.placedActive ? 'active' : 'inactive',
    created_by: pkg.createdBy,
    createdAt: pkg.createdAt.toISOString(),
    updatedAt: pkg.updatedAt.toISOString(),
    versions: versions.map(toVersionRecord),
    placements: placements.rows.map((r) => ({ spaceId: r.space_id, active: r.active })),
    draft: {
      base_version: pkg.draftBaseVersion,
      has_unarchived_changes: highest !== undefined && highest.integrity !== pkg.draftIntegrity,
      etag: draftEtag(pkg.draftIntegrity),
      updatedAt: pkg.draftUpdatedAt.toISOString(),
    },
    home_writable: writable,
    home_deletable: deletable,
    forked_from: pkg.forkedFrom,
  };
}

/**
 * Deletes a package (kept as a tombstone, so an import may take the id again): 409 in_use while
 * another package's latest version depends on it, 409 agent_in_use while runs of it are pending
 * or running.
 */
export async function deletePackage(scope: PackageScope, id: string): Promise<void> {
  const readable = await readablePackage(scope, id);
  await requireHomeAuthority(scope, readable, 'delete');
  await inTransaction(scope.pool, async (tx) => {
    const pkg = await readablePackage(scope, id, tx, { lock: 'wait' });
    const dependents = await dependentsOf(tx, scope.orgId, pkg.id);
    if (dependents.length) throw problem('in_use', { detail: `${dependents.join(', ')} depend${dependents.length === 1 ? 's' : ''} on ${pkg.id}.` });
    if (pkg.type === 'agent') {
      const { rowCount } = await tx.query(
        `SELECT 1 FROM runs WHERE org_id = $1 AND agent_id = $2 AND status IN ('pending', 'running') LIMIT 1`,
        [scope.orgId, pkg.id],
      );
      if (rowCount) throw problem('agent_in_use', { detail: `${pkg.id} has runs in progress.` });
    }
    await tx.query('UPDATE packages SET deleted_at = now(), updated_at = now() WHERE org_id = $1 AND id = $2', [scope.orgId, pkg.id]);
    await tx.query('DELETE FROM package_placements WHERE org_id = $1 AND package_id = $2', [scope.orgId, pkg.id]);
    if (pkg.type === 'agent') await disableSchedulesOfAgent(tx, scope.orgId, pkg.id, null, AGENT_DELETED_REASON);
  });
}
