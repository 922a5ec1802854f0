// The permission catalog. Key scopes are the spec's scope catalog (resource:action); a few more
// permissions exist only for people (managing keys, members and the organization) and no key can
// carry them.

export const KEY_SCOPES = [
  'agents:read', 'agents:write', 'agents:configure', 'agents:delete', 'agents:run',
  'skills:read', 'skills:write', 'skills:delete',
  'mcp-servers:read', 'mcp-servers:write', 'mcp-servers:delete',
  'integrations:read', 'integrations:write', 'integrations:delete', 'integrations:install', 'integrations:uninstall', 'integrations:connect', 'integrations:disconnect',
  'runs:read', 'runs:read-all', 'runs:cancel', 'runs:approve', 'runs:delete',
  'files:read', 'files:delete',
  'schedules:read', 'schedules:write', 'schedules:delete',
  'models:read', 'models:write', 'models:delete', 'proxies:read', 'proxies:write', 'proxies:delete',
  'spaces:read', 'spaces:write', 'spaces:delete', 'end-users:read', 'end-users:write', 'end-users:delete',
  'credential-proxy:call', 'llm-proxy:call',
  'webhooks:read', 'webhooks:write', 'webhooks:delete', 'org-webhooks:read',
  'oauth-clients:read', 'oauth-clients:write', 'oauth-clients:delete',
  'mcp:read', 'mcp:invoke',
] as const;

/** Held by people through their roles; never grantable to an API key. */
export const PERSON_ONLY_PERMISSIONS = [
  'api-keys:create', 'api-keys:read', 'api-keys:delete',
  'org:read', 'org:write', 'org:delete',
  'members:read', 'members:write', 'roles:read', 'roles:write',
  'space-members:read', 'space-members:write',
] as const;

export type KeyScope = (typeof KEY_SCOPES)[number];
export type Permission = KeyScope | (typeof PERSON_ONLY_PERMISSIONS)[number];

export const ALL_PERMISSIONS: readonly Permission[] = [...KEY_SCOPES, ...PERSON_ONLY_PERMISSIONS];
const KEY_SCOPE_SET = new Set<string>(KEY_SCOPES);
const PERMISSION_SET = new Set<string>(ALL_PERMISSIONS);

export function isKeyScope(s: string): s is KeyScope {
  return KEY_SCOPE_SET.has(s);
}
export function isPermission(s: string): s is Permission {
  return PERMISSION_SET.has(s);
}

export type OrgRole = 'owner' | 'admin' | 'member' | 'guest';
export const ORG_ROLES: readonly OrgRole[] = ['owner', 'admin', 'member', 'guest'];

/**
 * Permissions that act on the organization rather than a space: only an organization role holds
 * them, a space role never grants them (a key pinned to a space must not reach beyond it).
 */
export const ORG_LEVEL_PERMISSIONS: readonly Permission[] = [
  'models:read', 'models:write', 'models:delete', 'proxies:read', 'proxies:write', 'proxies:delete',
  'org-webhooks:read', 'mcp:read', 'mcp:invoke',
  'org:read', 'org:write', 'org:delete', 'members:read', 'members:write', 'roles:read', 'roles:write',
];
const ORG_LEVEL_SET = new Set<Permission>(ORG_LEVEL_PERMISSIONS);

const READ_ACTIONS = new Set(['read', 'read-all']);
const isRead = (p: string) => READ_ACTIONS.has(p.split(':')[1] ?? '');

/** What each organization role holds at the organization level. */
export const ORG_ROLE_PERMISSIONS: Record<OrgRole, readonly Permission[]> = {
  owner: ALL_PERMISSIONS,
  admin: ALL_PERMISSIONS.filter((p) => p !== 'org:delete'),
  member: ['org:read', 'models:read', 'proxies:read', 'spaces:read', 'spaces:write', 'members:read', 'roles:read', 'mcp:read', 'mcp:invoke'],
  guest: ['org:read', 'spaces:read'],
};

/** Owners and admins hold every space permission in every team space of their organization. */
export function orgRoleCoversSpaces(role: OrgRole): boolean {
  return role === 'owner' || role === 'admin';
}

const SPACE_PERMISSIONS: readonly Permission[] = ALL_PERMISSIONS.filter((p) => !ORG_LEVEL_SET.has(p));

export interface SpaceRolePreset {
  key: string;
  name: string;
  permissions: readonly Permission[];
}

export const SPACE_ROLE_PRESETS: readonly SpaceRolePreset[] = [
  { key: 'space_admin', name: 'Space admin', permissions: SPACE_PERMISSIONS },
  {
    key: 'editor',
    name: 'Editor',
    permissions: SPACE_PERMISSIONS.filter((p) => !p.endsWith(':delete') && !p.startsWith('space-members:') && p !== 'spaces:write'),
  },
  {
    key: 'runner',
    name: 'Runner',
    permissions: SPACE_PERMISSIONS.filter((p) => isRead(p) || p === 'agents:run' || p === 'runs:cancel' || p === 'runs:approve' || p === 'integrations:connect' || p === 'schedules:write'),
  },
  { key: 'viewer', name: 'Viewer', permissions: SPACE_PERMISSIONS.filter((p) => isRead(p) && p !== 'runs:read-all') },
];

export function presetRole(key: string): SpaceRolePreset | undefined {
  return SPACE_ROLE_PRESETS.find((r) => r.key === key);
}

/**
 * What a space role grants a person of this organization role: never an organization-level
 * permission (an organization-defined role may still list one), and to a guest only reading.
 */
export function capForOrgRole(role: OrgRole, perms: Iterable<Permission>): Permission[] {
  const list = [...perms].filter((p) => !ORG_LEVEL_SET.has(p));
  return role === 'guest' ? list.filter(isRead) : list;
}

/**
 * What an operation needs, declared on its route and checked before its handler: one permission,
 * any one of several (`anyOf`: the handler narrows to the one its resource asks, e.g. a package's
 * type), or `signed-in`: the caller's own things (their organizations, their notifications),
 * which every platform credential reaches and an end-user token does not.
 */
export type Need = Permission | { anyOf: readonly Permission[] } | 'signed-in';

export function neededPermissions(need: Need): readonly Permission[] {
  if (need === 'signed-in') return [];
  return typeof need === 'string' ? [need] : need.anyOf;
}

/** Whether a set of permissions meets a need. */
export function needMet(need: Need, held: ReadonlySet<string>): boolean {
  if (need === 'signed-in') return true;
  return neededPermissions(need).some((p) => held.has(p));
}

export function describeNeed(need: Need): string {
  if (need === 'signed-in') return 'a signed-in caller';
  const list = neededPermissions(need);
  return list.length === 1 ? `the ${list[0]} permission` : `one of the ${list.join(', ')} permissions`;
}

/**
 * The scopes a space-level (end-user) token can carry, and so the most it can do: read and run
 * the space's agents, read, cancel and decide the approvals of the end-user's own runs (and follow
 * them on the realtime streams), read the end-user's own files. Published in docs/integrators.md and the
 * OpenAPI document.
 */
export const SPACE_TOKEN_SCOPES = ['agents:read', 'agents:run', 'runs:read', 'runs:cancel', 'runs:approve', 'files:read'] as const satisfies readonly KeyScope[];

/** A role's permissions cut to what a delegated credential was granted (no ceiling: a session). */
export function withinCeiling(held: Iterable<Permission>, ceiling: ReadonlySet<string> | undefined): Set<Permission> {
  const out = new Set<Permission>();
  for (const p of held) if (!ceiling || ceiling.has(p)) out.add(p);
  return out;
}

/** Package operations name their resource by id: the handler narrows to the package type's permission. */
export const PACKAGE_READ: Need = { anyOf: ['agents:read', 'skills:read', 'mcp-servers:read', 'integrations:read'] };
export const PACKAGE_WRITE: Need = { anyOf: ['agents:write', 'skills:write', 'mcp-servers:write', 'integrations:write'] };
export const PACKAGE_DELETE: Need = { anyOf: ['agents:delete', 'skills:delete', 'mcp-servers:delete', 'integrations:delete'] };
export const PACKAGE_PLACE: Need = { anyOf: ['agents:write', 'skills:write', 'mcp-servers:write', 'integrations:install', 'integrations:uninstall'] };
export const WEBHOOK_READ: Need = { anyOf: ['webhooks:read', 'org-webhooks:read'] };
