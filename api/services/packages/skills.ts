// Skills: the skill package record, and restoring a published version into the draft.
//
// Restore: the version is exact, a dist-tag or a range (an exact version is found even when
// yanked: restoring it only copies its files into the draft). No version is created. Authority
// is skills:write in the package's home space. If-Match is optional (a mismatch is 412 and
// changes nothing). A draft already holding that version is answered 200 with its record as it
// is, nothing written (the spec lists no 409 for restore: 400, 401, 403, 404, 412).
import { MANIFEST_FILE, SKILL_FILE, isExactVersion, parseSkillFrontmatter } from '../../../lib/afps/index.ts';
import { problem } from '../../../lib/problem.ts';
import { holds, packagePermission, requireHomeAuthority, type PackageScope } from './access.ts';
import { checkIfMatch, draftEtag } from './draft-tree.ts';
import { draftSource, findPackage, headVersion, listVersions, readablePackage, resolveStored, type PackageRow } from './rows.ts';
import { readTree, type Queryable } from './store.ts';
import { inTransaction } from '../../../db/transaction.ts';

export interface SkillPackageRecord {
  id: string;
  orgId: string;
  name: string;
  description: string | null;
  definition: string;
  content: string;
  source: 'local';
  created_by: string | null;
  auto_installed: boolean;
  version: string | null;
  manifest: Record<string, unknown>;
  manifest_name: string;
  version_count: number;
  has_unarchived_changes: boolean;
  forked_from: string | null;
  home_space_id: string;
  home_writable: boolean;
  home_deletable: boolean;
  home_shareable: boolean;
  agents: Array<{ id: string; display_name: string }>;
  createdAt: string;
  updatedAt: string;
}

/** Agents whose latest version declares this skill. */
async function dependentAgents(q: Queryable, orgId: string, skillId: string): Promise<Array<{ id: string; display_name: string }>> {
  const { rows } = await q.query(
    `SELECT p.id, v.manifest->>'display_name' AS display_name
       FROM packages p
       JOIN package_versions v ON v.org_id = p.org_id AND v.package_id = p.id AND v.version = p.dist_tags->>'latest'
      WHERE p.org_id = $1 AND p.type = 'agent' AND p.deleted_at IS NULL
        AND v.manifest->'dependencies'->'skills' ? $2
      ORDER BY p.id`,
    [orgId, skillId],
  );
  return rows.map((r) => ({ id: r.id, display_name: r.display_name ?? r.id }));
}

/** The record of a skill as its draft stands. */
export async function skillRecord(scope: PackageScope, pkg: PackageRow, q: Queryable = scope.pool): Promise<SkillPackageRecord> {
  const [files, versions, agents, writable, deletable] = await Promise.all([
    readTree(q, scope.orgId, pkg.id, draftSource(pkg)),
    listVersions(q, scope.orgId, pkg.id),
    dependentAgents(q, scope.orgId, pkg.id),
    holds(scope, pkg.homeSpaceId, packagePermission('skill', 'write')),
    holds(scope, pkg.homeSpaceId, packagePermission('skill', 'delete')),
  ]);
  let manifest: Record<string, unknown> = {};
  try {
    manifest = JSON.parse(files.get(MANIFEST_FILE)?.toString('utf8') ?? '{}');
  } catch {
    manifest = {};
  }
  const definition = files.get(SKILL_FILE)?.toString('utf8') ?? '';
  let front: { name?: string; description?: string; body: string } = { body: definition };
  try {
    front = parseSkillFrontmatter(definition);
  } catch {
    // a draft may hold a SKILL.md that does not parse yet
  }
  const head = headVersion(versions);
  const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  return {
    id: pkg.id,
    orgId: scope.orgId,
    name: text(manifest.display_name) ?? front.name ?? pkg.id,
    description: text(manifest.description) ?? front.description ?? null,
    definition,
    content: front.body,
    source: 'local',
    created_by: pkg.createdBy,
    auto_installed: false,
    version: text(manifest.version) ?? pkg.draftBaseVersion,
    manifest,
    manifest_name: text(manifest.name) ?? pkg.id,
    version_count: versions.length,
    has_unarchived_changes: head !== undefined && head.integrity !== pkg.draftIntegrity,
    forked_from: pkg.forkedFrom,
    home_space_id: pkg.homeSpaceId,
    home_writable: writable,
    home_deletable: deletable,
    home_shareable: writable,
    agents,
    createdAt: pkg.createdAt.toISOString(),
    updatedAt: pkg.updatedAt.toISOString(),
  };
}

export async function restoreSkillVersion(scope: PackageScope, id: string, spec: string, ifMatch: string | undefined): Promise<{ record: SkillPackageRecord; etag: string }> {
  const readable = await readablePackage(scope, id);
  if (readable.type !== 'skill') throw problem('package_not_found', { detail: `${id} is not a skill.` });
  await requireHomeAuthority(scope, readable, 'write');
  return inTransaction(scope.pool, async (tx) => {
    const pkg = await findPackage(tx, scope.orgId, scope.spaceId, id, { lock: 'nowait' });
    if (!pkg) throw problem('package_not_found', { detail: `No package ${id} is reachable.` });
    checkIfMatch(ifMatch, draftEtag(pkg.draftIntegrity), false);
    const versions = await listVersions(tx, scope.orgId, id);
    const exact = isExactVersion(spec.trim()) ? versions.find((v) => v.version === spec.trim()) : undefined;
    const target = exact ?? resolveStored(id, versions, pkg.distTags, spec);
    if (pkg.draftIntegrity === target.integrity && pkg.draftBaseVersion === target.version && !pkg.draftDetached) {
      return { record: await skillRecord(scope, pkg, tx), etag: draftEtag(pkg.draftIntegrity) };
    }
    const { rows } = await tx.query(
      `UPDATE packages SET draft_base_version = $3, draft_detached = false, draft_integrity = $4, draft_updated_at = now(), updated_at = now()
        WHERE org_id = $1 AND id = $2 RETURNING updated_at, draft_updated_at`,
      [scope.orgId, id, target.version, target.integrity],
    );
    await tx.query('DELETE FROM package_draft_files WHERE org_id = $1 AND package_id = $2', [scope.orgId, id]);
    const restored: PackageRow = {
      ...pkg, draftBaseVersion: target.version, draftDetached: false, draftIntegrity: target.integrity,
      updatedAt: rows[0].updated_at, draftUpdatedAt: rows[0].draft_updated_at,
    };
    return { record: await skillRecord(scope, restored, tx), etag: draftEtag(target.integrity) };
  });
}
