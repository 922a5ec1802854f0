// Where a package lives and where it is offered. A package has one home space (its authority)
// and may be placed in other spaces; a placement can be switched off (active false). Placing
// needs <type>:write in the target space (integrations: integrations:install, and removing one
// integrations:uninstall) and a published
// version; moving the home needs <type>:write in both spaces and keeps the old home as a placement.
import type { Permission } from '../../../lib/permissions.ts';
import { problem } from '../../../lib/problem.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { holds, packagePermission, requireHomeAuthority, type PackageScope } from './access.ts';
import { findPackage, listVersions, readablePackage, type PackageRow } from './rows.ts';
import { type Queryable } from './store.ts';
import { inTransaction } from '../../../db/transaction.ts';
import { AGENT_UNPLACED_REASON, disableSchedulesOfAgent } from '../schedules/actor.ts';

export interface PlacementRecord {
  packageId: string;
  spaceId: string;
  active: boolean;
  createdAt: string;
  updatedAt: string;
}

function placePermission(pkg: PackageRow, removing = false): Permission {
  if (pkg.type === 'integration') return removing ? 'integrations:uninstall' : 'integrations:install';
  return packagePermission(pkg.type, 'write');
}

async function spaceKind(q: Queryable, orgId: string, spaceId: string): Promise<'team' | 'personal' | null> {
  const { rows } = await q.query('SELECT kind FROM spaces WHERE org_id = $1 AND id = $2', [orgId, spaceId]);
  return rows[0]?.kind ?? null;
}

function noSuchSpace(spaceId: string) {
  return problem('not_found', { detail: `No space ${spaceId} in this organization.` });
}

function toRecord(r: { package_id: string; space_id: string; active: boolean; created_at: Date; updated_at: Date }): PlacementRecord {
  return { packageId: r.package_id, spaceId: r.space_id, active: r.active, createdAt: r.created_at.toISOString(), updatedAt: r.updated_at.toISOString() };
}

/** scope.spaceId is the target space. 201 for a new placement, 200 when it existed (active updated). */
export async function placePackage(scope: PackageScope, id: string, active: boolean): Promise<{ created: boolean; placement: PlacementRecord }> {
  if (!(await spaceKind(scope.pool, scope.orgId, scope.spaceId))) throw noSuchSpace(scope.spaceId);
  const pkg = await readablePackage(scope, id);
  if (pkg.homeSpaceId === scope.spaceId) throw problem('share_target_is_home', { detail: `${id} already lives in this space.` });
  const permission = placePermission(pkg);
  if (!(await holds(scope, scope.spaceId, permission))) throw problem('forbidden', { detail: `Placing ${id} here needs ${permission} in this space.` });
  const versions = await listVersions(scope.pool, scope.orgId, pkg.id);
  if (!versions.some((v) => !v.yanked)) throw problem('package_has_no_version', { detail: `${id} has no published version to offer elsewhere.` });
  const { rows } = await scope.pool.query(
    `INSERT INTO package_placements (org_id, package_id, space_id, active, created_by) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (org_id, package_id, space_id) DO UPDATE SET active = EXCLUDED.active, updated_at = now()
     RETURNING package_id, space_id, active, created_at, updated_at, (xmax = 0) AS inserted`,
    [scope.orgId, pkg.id, scope.spaceId, active, scope.actor.userId],
  );
  return { created: rows[0].inserted, placement: toRecord(rows[0]) };
}

async function placedPackage(scope: PackageScope, id: string, removing = false): Promise<PackageRow> {
  if (!(await spaceKind(scope.pool, scope.orgId, scope.spaceId))) throw noSuchSpace(scope.spaceId);
  const pkg = await readablePackage(scope, id);
  if (pkg.homeSpaceId === scope.spaceId) throw problem('share_target_is_home', { detail: `${id} lives in this space; its home is not a placement.` });
  if (pkg.placedActive === null) throw problem('package_not_placed', { detail: `${id} is not placed in this space.` });
  const permission = placePermission(pkg, removing);
  if (!(await holds(scope, scope.spaceId, permission))) throw problem('forbidden', { detail: `Changing ${id} here needs ${permission} in this space.` });
  return pkg;
}

export async function setPlacementActive(scope: PackageScope, id: string, active: boolean): Promise<PlacementRecord> {
  const pkg = await placedPackage(scope, id);
  const { rows } = await scope.pool.query(
    `UPDATE package_placements SET active = $4, updated_at = now() WHERE org_id = $1 AND package_id = $2 AND space_id = $3
     RETURNING package_id, space_id, active, created_at, updated_at`,
    [scope.orgId, pkg.id, scope.spaceId, active],
  );
  if (!rows[0]) throw problem('package_not_placed', { detail: `${id} is not placed in this space.` });
  return toRecord(rows[0]);
}

export async function removePlacement(scope: PackageScope, id: string): Promise<void> {
  const pkg = await placedPackage(scope, id, true);
  await scope.pool.query('DELETE FROM package_placements WHERE org_id = $1 AND package_id = $2 AND space_id = $3', [scope.orgId, pkg.id, scope.spaceId]);
  if (pkg.type === 'agent') await disableSchedulesOfAgent(scope.pool, scope.orgId, pkg.id, scope.spaceId, AGENT_UNPLACED_REASON);
}

/**
 * Moves the home space. Without a target, the organization's default space. The old home keeps
 * the package as an active placement.
 */
export async function moveHome(scope: PackageScope, id: string, target: string | null | undefined): Promise<{ packageId: string; home_space_id: string; previous_home_space_id: string }> {
  const pkg = await readablePackage(scope, id);
  await requireHomeAuthority(scope, pkg, 'write');
  let spaceId = target ?? null;
  if (spaceId === null) {
    const { rows } = await scope.pool.query('SELECT id FROM spaces WHERE org_id = $1 AND is_default ORDER BY created_at LIMIT 1', [scope.orgId]);
    if (!rows[0]) throw problem('organization_has_no_default_space', { detail: 'The organization has no default space to move the package to.' });
    spaceId = rows[0].id as string;
  }
  const kind = await spaceKind(scope.pool, scope.orgId, spaceId);
  if (!kind) throw noSuchSpace(spaceId);
  if (kind === 'personal') throw problem('home_move_into_personal_space', { detail: 'A package cannot make a personal space its home; fork it there instead.' });
  if (spaceId === pkg.homeSpaceId) throw problem('share_target_is_home', { detail: `${id} already lives in that space.` });
  const permission = packagePermission(pkg.type, 'write');
  if (!(await holds(scope, spaceId, permission))) throw problem('forbidden', { detail: `Moving ${id} there needs ${permission} in that space.` });
  return inTransaction(scope.pool, async (tx) => {
    const locked = await findPackage(tx, scope.orgId, scope.spaceId, id, { lock: 'wait' });
    if (!locked) throw problem('package_not_found', { detail: `No package ${id} is reachable.` });
    await tx.query('UPDATE packages SET home_space_id = $3, updated_at = now() WHERE org_id = $1 AND id = $2', [scope.orgId, id, spaceId]);
    await tx.query('DELETE FROM package_placements WHERE org_id = $1 AND package_id = $2 AND space_id = $3', [scope.orgId, id, spaceId]);
    await tx.query(
      `INSERT INTO package_placements (org_id, package_id, space_id, active, created_by) VALUES ($1, $2, $3, true, $4)
       ON CONFLICT (org_id, package_id, space_id) DO UPDATE SET active = true, updated_at = now()`,
      [scope.orgId, id, locked.homeSpaceId, scope.actor.userId],
    );
    return { packageId: id, home_space_id: spaceId, previous_home_space_id: locked.homeSpaceId };
  });
}

/**
 * A package as a space-scoped read sees it: package_not_found when the organization has no such
 * package, package_not_placed when it neither lives nor is placed in the space,
 * package_not_active_in_space when it is placed but switched off.
 */
export async function requirePackageInSpace(scope: SpaceScope, id: string): Promise<PackageRow> {
  const pkg = await findPackage(scope.pool, scope.orgId, scope.spaceId, id);
  if (!pkg) throw problem('package_not_found', { detail: `No package ${id} in this organization.` });
  if (pkg.homeSpaceId === scope.spaceId) return pkg;
  if (pkg.placedActive === null) throw problem('package_not_placed', { detail: `${id} is not placed in this space.` });
  if (!pkg.placedActive) throw problem('package_not_active_in_space', { detail: `${id} is switched off in this space.` });
  return pkg;
}
