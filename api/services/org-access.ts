// Routes under /api/orgs/{orgId} carry the organization in the path instead of X-Org-Id: the
// caller's membership is checked against that value. Not a member (or a key bound elsewhere) is
// 404, like any resource out of reach; a member lacking the permission is 403.
import type { Request } from '../http.ts';
import { ORG_ROLE_PERMISSIONS, withinCeiling, type OrgRole, type Permission } from '../../lib/permissions.ts';
import { problem } from '../../lib/problem.ts';
import type { RequestContext } from '../context.ts';
import type { AppDeps } from '../deps.ts';
import { parseViewAs } from '../middleware/view-as.ts';
import { identityScope, type IdentityOrgScope } from './identity-change.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface OrgAccess {
  scope: IdentityOrgScope;
  role: OrgRole;
  permissions: ReadonlySet<Permission>;
  deleting: boolean;
}

export interface OrgAccessNeeds {
  /** the permission the operation needs in the organization */
  permission: Permission;
  /** the operation changes the organization: refused with 409 org_deleting while it is being deleted */
  write?: boolean;
}

function notFound() {
  return problem('not_found', { detail: 'No such organization.' });
}

export async function reachOrg(ctx: RequestContext, req: Request, deps: AppDeps, orgId: string, needs: OrgAccessNeeds): Promise<OrgAccess> {
  const p = ctx.principal;
  if (!p) throw problem('unauthorized');
  if (!UUID.test(orgId)) throw notFound();
  const { rows } = await deps.database.pool.query(
    `SELECT om.role, (o.deleting_at IS NOT NULL) AS deleting
       FROM org_members om JOIN organizations o ON o.id = om.org_id
      WHERE om.org_id = $1 AND om.user_id = $2`,
    [orgId, p.userId],
  );
  const row = rows[0];
  if (!row) throw notFound();

  let role = row.role as OrgRole;
  let permissions: ReadonlySet<Permission>;
  if (p.boundOrgId !== undefined && p.boundOrgId !== orgId) {
    // the pipeline already refused this (refuseOtherTenant); kept so no caller of reachOrg depends on it
    throw problem('forbidden', { param: 'orgId', detail: 'This credential is bound to another organization.' });
  }
  if (p.kind === 'api_key') {
    // a key resolved its organization in the pipeline: its permissions are already cut to its scopes
    role = ctx.org?.role ?? role;
    permissions = ctx.permissions;
  } else {
    // a session (with role preview) or an OAuth token: the role here, cut to what the token was granted
    role = parseViewAs(req, role)?.orgRole ?? role;
    permissions = withinCeiling(ORG_ROLE_PERMISSIONS[role], p.ceiling);
  }
  if (!permissions.has(needs.permission)) {
    throw problem('forbidden', { detail: `This operation needs the ${needs.permission} permission.` });
  }
  if (needs.write && row.deleting) throw problem('org_deleting', { detail: 'The organization is being deleted.' });
  const scope = identityScope(
    { pool: deps.database.pool, db: deps.database.db, orgId, actor: { userId: p.userId, apiKeyId: p.apiKeyId, endUserId: ctx.endUserId } },
    deps.authCache,
  );
  return { scope, role, permissions, deleting: row.deleting };
}
