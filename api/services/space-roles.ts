// Space roles: the presets (in code, read-only) and the bundles of space permissions an
// organization defines for itself. Changing a role's permissions changes every holder's at once.
import type pg from 'pg';
import { newId } from '../../lib/ids.ts';
import { SPACE_ROLE_PRESETS, presetRole, type Permission } from '../../lib/permissions.ts';
import { problem, type FieldError } from '../../lib/problem.ts';
import type { OrgScope } from '../../db/tenant.ts';
import { changeIdentity, isUniqueViolation, type IdentityOrgScope } from './identity-change.ts';

export const ROLE_KEY_PATTERN = /^[a-z0-9_-]{1,64}$/;

/** Permissions a space role can bundle: the space_admin preset holds them all. */
export const SPACE_ROLE_PERMISSIONS: readonly Permission[] = presetRole('space_admin')!.permissions;
const GRANTABLE = new Set<string>(SPACE_ROLE_PERMISSIONS);

export interface SpaceRole {
  /** null for presets */
  id: string | null;
  key: string;
  name: string;
  permissions: string[];
  preset: boolean;
  createdAt: string | null;
  updatedAt: string | null;
}

function toRole(row: { id: string; key: string; name: string; permissions: string[]; created_at: Date; updated_at: Date }): SpaceRole {
  return { id: row.id, key: row.key, name: row.name, permissions: row.permissions, preset: false, createdAt: row.created_at.toISOString(), updatedAt: row.updated_at.toISOString() };
}

function checkPermissions(perms: string[]): string[] {
  const errors: FieldError[] = [];
  perms.forEach((p, i) => {
    if (!GRANTABLE.has(p)) errors.push({ field: `permissions[${i}]`, code: 'invalid_value', message: `"${p}" is not a space permission.` });
  });
  if (errors.length) throw problem('validation_failed', { detail: 'Some permissions cannot be part of a space role.', errors });
  return [...new Set(perms)];
}

export async function listSpaceRoles(scope: OrgScope): Promise<SpaceRole[]> {
  const presets: SpaceRole[] = SPACE_ROLE_PRESETS.map((r) => ({ id: null, key: r.key, name: r.name, permissions: [...r.permissions], preset: true, createdAt: null, updatedAt: null }));
  const { rows } = await scope.pool.query('SELECT id, key, name, permissions, created_at, updated_at FROM space_roles WHERE org_id = $1 ORDER BY created_at, id', [scope.orgId]);
  return [...presets, ...rows.map(toRole)];
}

export async function createSpaceRole(scope: IdentityOrgScope, input: { key: string; name: string; permissions: string[] }): Promise<SpaceRole> {
  if (presetRole(input.key)) throw problem('role_key_taken', { detail: `"${input.key}" is a preset role.` });
  const permissions = checkPermissions(input.permissions);
  try {
    const { rows } = await changeIdentity(scope, (client) => client.query(
      'INSERT INTO space_roles (id, org_id, key, name, permissions) VALUES ($1, $2, $3, $4, $5) RETURNING id, key, name, permissions, created_at, updated_at',
      [newId('role'), scope.orgId, input.key, input.name.trim(), permissions],
    ));
    return toRole(rows[0]);
  } catch (err) {
    if (isUniqueViolation(err, 'space_roles_key_uq')) throw problem('role_key_taken', { detail: `A role with key "${input.key}" exists.` });
    throw err;
  }
}

/** A preset is built in: it is addressed by its key and can be neither changed nor deleted. */
function refusePreset(roleId: string): void {
  if (presetRole(roleId)) throw problem('operation_not_allowed', { detail: `"${roleId}" is a built-in preset role: it cannot be changed or deleted. Define a role of your own instead.` });
}

async function lockRole(client: pg.PoolClient, scope: OrgScope, roleId: string) {
  const { rows } = await client.query('SELECT id, key FROM space_roles WHERE id = $1 AND org_id = $2 FOR UPDATE', [roleId, scope.orgId]);
  if (!rows[0]) throw problem('not_found', { detail: 'No such role.' });
  return rows[0] as { id: string; key: string };
}

export async function updateSpaceRole(scope: IdentityOrgScope, roleId: string, patch: { name?: string; permissions?: string[] }): Promise<SpaceRole> {
  refusePreset(roleId);
  const permissions = patch.permissions ? checkPermissions(patch.permissions) : null;
  return changeIdentity(scope, async (client) => {
    const role = await lockRole(client, scope, roleId);
    if (permissions && permissions.some((p) => ADMINISTERING.has(p))) {
      const spaces = await spacesJoiningAs(client, scope.orgId, role.key);
      if (spaces.length) throw problem('role_in_use', { detail: `Members joining ${spaces.join(', ')} receive this role: it cannot administer a space while it is a default role.` });
    }
    const { rows } = await client.query(
      `UPDATE space_roles SET name = COALESCE($3, name), permissions = COALESCE($4, permissions), updated_at = now()
        WHERE id = $1 AND org_id = $2 RETURNING id, key, name, permissions, created_at, updated_at`,
      [roleId, scope.orgId, patch.name?.trim() ?? null, permissions],
    );
    return toRole(rows[0]);
  });
}

export async function deleteSpaceRole(scope: IdentityOrgScope, roleId: string): Promise<void> {
  refusePreset(roleId);
  await changeIdentity(scope, async (client) => {
    const role = await lockRole(client, scope, roleId);
    const held = await client.query('SELECT count(*)::int AS n FROM space_members WHERE org_id = $1 AND role_key = $2', [scope.orgId, role.key]);
    if (held.rows[0].n > 0) throw problem('role_in_use', { detail: `${held.rows[0].n} space member(s) hold this role; give them another first.` });
    const spaces = await spacesJoiningAs(client, scope.orgId, role.key);
    if (spaces.length) throw problem('role_in_use', { detail: `This role is the default role of ${spaces.join(', ')}; choose another default first.` });
    await client.query('DELETE FROM space_roles WHERE id = $1 AND org_id = $2', [roleId, scope.orgId]);
  });
}

/** True when `key` names a preset or a role of the organization (locked against deletion until commit). */
export async function roleExists(client: pg.PoolClient, orgId: string, key: string): Promise<boolean> {
  if (presetRole(key)) return true;
  const { rowCount } = await client.query('SELECT 1 FROM space_roles WHERE org_id = $1 AND key = $2 FOR SHARE', [orgId, key]);
  return Boolean(rowCount);
}

/**
 * Permissions that administer a space (its members, its settings, its removal). A role holding one
 * cannot be a space's default role: whoever may see an organization-visible space could make
 * themselves its administrator by joining.
 */
const ADMINISTERING = new Set<string>(['space-members:write', 'spaces:write', 'spaces:delete']);

/** Team spaces of the organization whose self-joining members receive `key`. */
async function spacesJoiningAs(client: pg.PoolClient, orgId: string, key: string): Promise<string[]> {
  const { rows } = await client.query(`SELECT id FROM spaces WHERE org_id = $1 AND kind = 'team' AND default_role = $2 ORDER BY id FOR SHARE`, [orgId, key]);
  return rows.map((r) => r.id as string);
}

/**
 * `key` may be a default role: a preset or a role of this organization (locked until commit) that
 * does not administer the space. validation_failed on `field` otherwise.
 */
export async function assertJoinRole(client: pg.PoolClient, orgId: string, key: string, field: string): Promise<void> {
  const refuse = (message: string) => problem('validation_failed', { detail: `"${key}" cannot be a default role: ${message}`, errors: [{ field, code: 'invalid_value', message }] });
  const preset = presetRole(key);
  let permissions: readonly string[];
  if (preset) permissions = preset.permissions;
  else {
    const { rows } = await client.query('SELECT permissions FROM space_roles WHERE org_id = $1 AND key = $2 FOR SHARE', [orgId, key]);
    if (!rows[0]) throw refuse('not a preset or a role of this organization');
    permissions = rows[0].permissions;
  }
  if (permissions.some((p) => ADMINISTERING.has(p))) throw refuse('it administers the space (members, settings or removal), which nobody may take by joining');
}
