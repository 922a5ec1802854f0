// Who the caller is and what it may do in the chosen context: GET /api/me, computed by the API's
// own authority function. The dashboard only hides what the API would refuse from this answer; it
// decides nothing itself (a 403 is still shown as the problem it is).
import { api, context, rawFetch, PlatformError, unwrap } from './client.ts';

/** GET /api/me's body (snake_case), as agreed for every client. */
export interface MeBody {
  object: 'me';
  user: { id: string; email: string; name: string } | null;
  end_user: { id: string; external_id: string; name: string } | null;
  credential: { kind: 'session' | 'api_key' | 'oauth'; level: 'instance' | 'org' | 'space' | null; client_id: string | null; api_key_id: string | null; scopes: string[] | null };
  org: { id: string; name: string; role: string } | null;
  space: { id: string; name: string; kind: string } | null;
  permissions: string[];
  view_as: string | null;
}

export interface Me {
  userId: string | null;
  orgRole: string | null;
  /** 'all' only from the fallback, for owners and admins */
  permissions: ReadonlySet<string> | 'all';
  /** where the permissions came from: the API's answer, or the fallback below */
  source: 'me' | 'fallback';
}

/** Whether the API would let the caller do what needs this permission (the API still decides). */
export function can(me: Me, permission: string): boolean {
  return me.permissions === 'all' || me.permissions.has(permission);
}

export const NOBODY: Me = { userId: null, orgRole: null, permissions: new Set(), source: 'me' };

/** What the session already read (the fallback needs it; GET /api/me does not). */
export interface Known {
  userId: string;
  orgs: { id: string; role: string }[];
  spaces: { id: string; role_key: string | null }[];
}

export async function loadMe(known: Known): Promise<Me> {
  try {
    const res = await rawFetch('/api/me', { headers: { accept: 'application/json' } });
    const body = (await res.json()) as MeBody;
    return { userId: body.user?.id ?? null, orgRole: body.org?.role ?? null, permissions: new Set(body.permissions), source: 'me' };
  } catch (err) {
    if (err instanceof PlatformError && err.status === 404 && err.code === 'not_found') return fallbackMe(known);
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// FALLBACK, only while GET /api/me is not served by this instance (it answers 404 not_found).
// The permissions are read from what the API already publishes: the caller's organization role
// (GET /api/orgs), its role key in the space (GET /api/spaces), both read by the session, and that role's permission list
// (GET /api/orgs/{orgId}/roles); owners and admins hold every space permission. Role preview
// (X-View-As) is applied the same way. Remove this block once /api/me is everywhere.
// ---------------------------------------------------------------------------------------------
async function fallbackMe({ userId, orgs, spaces }: Known): Promise<Me> {
  if (!context.orgId) return { userId, orgRole: null, permissions: new Set(), source: 'fallback' };
  const actual = orgs.find((o) => o.id === context.orgId)?.role ?? null;
  const [previewRole, previewSpaceRole] = context.viewAs ? context.viewAs.split(':') : [null, null];
  const orgRole = previewRole ?? actual;
  if (orgRole === 'owner' || orgRole === 'admin') return { userId, orgRole, permissions: 'all', source: 'fallback' };
  let roleKey: string | null = previewSpaceRole ?? null;
  if (!roleKey && context.spaceId && !previewRole) roleKey = spaces.find((s) => s.id === context.spaceId)?.role_key ?? null;
  if (!roleKey) return { userId, orgRole, permissions: new Set(), source: 'fallback' };
  const roles = await unwrap(api.GET('/api/orgs/{orgId}/roles', { params: { path: { orgId: context.orgId } } })).catch(() => null);
  const held = roles?.data.find((r) => r.key === roleKey)?.permissions ?? [];
  const readOnly = orgRole === 'guest';
  return { userId, orgRole, permissions: new Set(held.filter((p) => !readOnly || /:read(-all)?$/.test(p))), source: 'fallback' };
}
