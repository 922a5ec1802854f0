// Organizations. Creating one makes its default team space and the creator's personal space;
// every member gets one personal space per organization on joining. Deleting marks the
// organization (writes answer 409 org_deleting meanwhile), then removes it and all its rows.
import type pg from 'pg';
import type { OrgScope } from '../../db/tenant.ts';
import { newId, randomBase62 } from '../../lib/ids.ts';
import type { OrgRole } from '../../lib/permissions.ts';
import { problem } from '../../lib/problem.ts';
import { SUPPORTED_API_VERSIONS, isCalendarDate } from '../middleware/api-version.ts';
import { changeIdentity, type IdentityOrgScope, type IdentityStore } from './identity-change.ts';
import { sweepTenantRows } from './tenant-sweep.ts';

export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const DEFAULT_SPACE_NAME = 'Default';
const PERSONAL_SPACE_NAME = 'Personal';

export interface Organization {
  id: string;
  name: string;
  slug: string;
  role: OrgRole;
  defaultSpaceId: string | null;
  /** the API version pinned on the organization; null follows the current version */
  apiVersion: string | null;
  /** local MCP servers may receive their connection's credential in their environment (delivery.env) */
  localCredentialEnv: boolean;
  deleting: boolean;
  createdAt: string;
  updatedAt: string;
}

interface OrgRow {
  id: string;
  name: string;
  slug: string;
  deleting_at: Date | null;
  api_version: string | null;
  local_credential_env: boolean;
  created_at: Date;
  updated_at: Date;
  default_space_id: string | null;
}

const ORG_COLUMNS = `o.id, o.name, o.slug, o.deleting_at, o.api_version, o.local_credential_env, o.created_at, o.updated_at,
  (SELECT s.id FROM spaces s WHERE s.org_id = o.id AND s.is_default LIMIT 1) AS default_space_id`;

function toOrganization(row: OrgRow, role: OrgRole): Organization {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    role,
    defaultSpaceId: row.default_space_id,
    apiVersion: row.api_version ?? null,
    localCredentialEnv: row.local_credential_env === true,
    deleting: row.deleting_at !== null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function slugFrom(name: string): string {
  const base = name.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40).replace(/-+$/, '');
  return base || 'org';
}

function slugTaken(slug: string) {
  return problem('slug_taken', { detail: `The slug "${slug}" is used by another organization.`, errors: [{ field: 'slug', code: 'invalid_value', message: 'This slug is in use.' }] });
}

/** Adds a member and gives them their personal space in the organization. */
export async function joinOrganization(client: pg.PoolClient, orgId: string, userId: string, role: OrgRole): Promise<{ personalSpaceId: string }> {
  await client.query('INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $2, $3)', [orgId, userId, role]);
  return { personalSpaceId: await ensurePersonalSpace(client, orgId, userId) };
}

export async function ensurePersonalSpace(client: pg.PoolClient, orgId: string, userId: string): Promise<string> {
  const inserted = await client.query(
    `INSERT INTO spaces (id, org_id, name, kind, owner_user_id) VALUES ($1, $2, $3, 'personal', $4)
     ON CONFLICT (org_id, owner_user_id) WHERE kind = 'personal' DO NOTHING RETURNING id`,
    [newId('spc'), orgId, PERSONAL_SPACE_NAME, userId],
  );
  if (inserted.rows[0]) return inserted.rows[0].id;
  const existing = await client.query(`SELECT id FROM spaces WHERE org_id = $1 AND owner_user_id = $2 AND kind = 'personal'`, [orgId, userId]);
  return existing.rows[0].id;
}

/** Creates an organization owned by `ownerUserId`, with its default team space and the owner's personal space. */
export async function createOrganization(
  client: pg.PoolClient,
  input: { name: string; slug?: string; ownerUserId: string },
): Promise<{ organization: Organization; defaultSpaceId: string; personalSpaceId: string }> {
  let slug = input.slug ?? slugFrom(input.name);
  let row: OrgRow | undefined;
  for (let attempt = 0; !row; attempt++) {
    const { rows } = await client.query(
      `INSERT INTO organizations (name, slug) VALUES ($1, $2) ON CONFLICT (slug) DO NOTHING
       RETURNING id, name, slug, deleting_at, api_version, local_credential_env, created_at, updated_at, NULL::text AS default_space_id`,
      [input.name.trim(), slug],
    );
    row = rows[0];
    if (row) break;
    if (input.slug !== undefined) throw slugTaken(slug);
    if (attempt >= 5) throw slugTaken(slug);
    slug = `${slugFrom(input.name)}-${randomBase62(6).toLowerCase()}`;
  }
  const defaultSpaceId = newId('spc');
  await client.query(`INSERT INTO spaces (id, org_id, name, kind, is_default) VALUES ($1, $2, $3, 'team', true)`, [defaultSpaceId, row.id, DEFAULT_SPACE_NAME]);
  const { personalSpaceId } = await joinOrganization(client, row.id, input.ownerUserId, 'owner');
  return { organization: toOrganization({ ...row, default_space_id: defaultSpaceId }, 'owner'), defaultSpaceId, personalSpaceId };
}

export async function createOrganizationFor(store: IdentityStore, userId: string, input: { name: string; slug?: string }) {
  return changeIdentity(store, (client) => createOrganization(client, { ...input, ownerUserId: userId }));
}

/** The organizations a person belongs to, with their role in each. */
export async function listOrganizations(pool: pg.Pool, userId: string, onlyOrgId?: string): Promise<Organization[]> {
  const { rows } = await pool.query(
    `SELECT ${ORG_COLUMNS}, om.role FROM org_members om JOIN organizations o ON o.id = om.org_id
      WHERE om.user_id = $1 AND ($2::uuid IS NULL OR o.id = $2::uuid)
      ORDER BY o.created_at, o.id`,
    [userId, onlyOrgId ?? null],
  );
  return rows.map((r) => toOrganization(r, r.role));
}

export async function getOrganization(scope: OrgScope, role: OrgRole): Promise<Organization> {
  const { rows } = await scope.pool.query(`SELECT ${ORG_COLUMNS} FROM organizations o WHERE o.id = $1`, [scope.orgId]);
  if (!rows[0]) throw problem('not_found', { detail: 'No such organization.' });
  return toOrganization(rows[0], role);
}

/** A pin must be a date this server serves: a pin it cannot serve would fail every call later. */
function checkPinnable(version: string): void {
  const errors = [{ field: 'api_version', code: 'invalid_value', message: `Served versions: ${[...SUPPORTED_API_VERSIONS].join(', ')}.` }];
  if (!isCalendarDate(version)) throw problem('invalid_api_version', { detail: 'api_version must be a date in the form YYYY-MM-DD.', errors });
  if (!SUPPORTED_API_VERSIONS.has(version)) throw problem('unsupported_api_version', { detail: `API version ${version} is not served by this instance.`, errors });
}

export async function updateOrganization(
  scope: IdentityOrgScope, role: OrgRole, patch: { name?: string; slug?: string; apiVersion?: string | null; localCredentialEnv?: boolean },
): Promise<Organization> {
  if (patch.apiVersion) checkPinnable(patch.apiVersion);
  const update = async (db: pg.Pool | pg.PoolClient) => db.query(
    `UPDATE organizations o SET name = COALESCE($2, name), slug = COALESCE($3, slug),
        api_version = CASE WHEN $4 THEN $5 ELSE api_version END, local_credential_env = COALESCE($6, local_credential_env), updated_at = now()
      WHERE o.id = $1 AND NOT EXISTS (SELECT 1 FROM organizations x WHERE x.slug = $3 AND x.id <> $1)
      RETURNING ${ORG_COLUMNS}`,
    [scope.orgId, patch.name?.trim() ?? null, patch.slug ?? null, patch.apiVersion !== undefined, patch.apiVersion ?? null, patch.localCredentialEnv ?? null],
  ).catch((err) => {
    if ((err as { code?: string }).code === '23505') throw slugTaken(patch.slug ?? '');
    throw err;
  });
  // the pin travels with cached credentials: changing it goes through an identity change
  const { rows } = patch.apiVersion !== undefined ? await changeIdentity(scope, update) : await update(scope.pool);
  if (!rows[0]) {
    if (patch.slug !== undefined) throw slugTaken(patch.slug);
    throw problem('not_found', { detail: 'No such organization.' });
  }
  return toOrganization(rows[0], role);
}

/**
 * Marks the organization as being deleted (its credentials stop working and writes are refused),
 * then removes it with every row that belongs to it. A removal that fails leaves the mark; calling
 * DELETE again resumes.
 */
export async function deleteOrganization(scope: IdentityOrgScope, onRemovalError: (err: unknown) => void = () => {}): Promise<void> {
  const store = { pool: scope.pool, authCache: scope.authCache };
  await changeIdentity(store, (client) =>
    client.query('UPDATE organizations SET deleting_at = COALESCE(deleting_at, now()) WHERE id = $1', [scope.orgId]));
  try {
    await changeIdentity(store, async (client) => {
      await sweepTenantRows(client, 'org_id', scope.orgId);
      await client.query('DELETE FROM organizations WHERE id = $1', [scope.orgId]);
    });
  } catch (err) {
    onRemovalError(err);
    throw problem('delete_failed', { detail: 'The organization is marked for deletion but could not be removed yet; call DELETE again.' });
  }
}
