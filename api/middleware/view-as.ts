// X-View-As: owners and admins preview the API as a lesser role: `<org role>` or
// `<org role>:<space role key>` (member:viewer, guest, admin ...).
import type pg from 'pg';
import type { Request } from '../http.ts';
import { ORG_ROLES, presetRole, type OrgRole } from '../../lib/permissions.ts';
import { problem } from '../../lib/problem.ts';
import type { ViewAs } from '../services/access.ts';

const RANK: Record<OrgRole, number> = { owner: 3, admin: 2, member: 1, guest: 0 };
const FORM = /^(owner|admin|member|guest)(?::([a-z0-9_-]{1,64}))?$/;

export function parseViewAs(req: Request, actualRole: OrgRole, fromQuery = false): ViewAs | undefined {
  const raw = fromQuery ? req.query.view_as : req.headers['x-view-as'];
  if (raw === undefined || raw === '') return undefined;
  const m = typeof raw === 'string' ? FORM.exec(raw) : null;
  if (!m) throw problem('invalid_view_as', { param: fromQuery ? 'view_as' : 'X-View-As', detail: 'Use <org role> or <org role>:<space role key>.' });
  if (actualRole !== 'owner' && actualRole !== 'admin') {
    throw problem('forbidden', { param: 'X-View-As', detail: 'Only owners and admins can preview another role.' });
  }
  const orgRole = m[1] as OrgRole;
  if (!ORG_ROLES.includes(orgRole) || RANK[orgRole] > RANK[actualRole]) {
    throw problem('forbidden', { param: 'X-View-As', detail: 'You can only preview a role at or below your own.' });
  }
  req.ctx.viewAs = raw as string;
  return { orgRole, spaceRoleKey: m[2] };
}

/** parseViewAs, with the permissions of an organization-defined space role looked up. */
export async function resolveViewAs(req: Request, actualRole: OrgRole, pool: pg.Pool, orgId: string, fromQuery = false): Promise<ViewAs | undefined> {
  const viewAs = parseViewAs(req, actualRole, fromQuery);
  if (!viewAs?.spaceRoleKey || presetRole(viewAs.spaceRoleKey)) return viewAs;
  const { rows } = await pool.query<{ permissions: string[] }>('SELECT permissions FROM space_roles WHERE org_id = $1 AND key = $2', [orgId, viewAs.spaceRoleKey]);
  return { ...viewAs, customPermissions: rows[0]?.permissions ?? null };
}
