// Space roles of an organization: the presets (read-only) and organization-defined bundles of
// space permissions.
import { z } from 'zod';
import { created, noContent, ok, route } from '../route.ts';
import { reachOrg } from '../services/org-access.ts';
import * as roles from '../services/space-roles.ts';

const SpaceRole = z.object({
  id: z.string().nullable(),
  key: z.string(),
  name: z.string(),
  permissions: z.array(z.string()),
  preset: z.boolean(),
  createdAt: z.string().nullable(),
  updatedAt: z.string().nullable(),
}).meta({ id: 'SpaceRole' });
const Permissions = z.array(z.string()).max(200);
const OrgParams = z.object({ orgId: z.string() });
const RoleParams = z.object({ orgId: z.string(), roleId: z.string() });
const TAG = 'Organizations';

export const spaceRoleRoutes = [
  route({
    method: 'get', path: '/api/orgs/{orgId}/roles', summary: 'Space roles: presets and the organization\'s own', tag: TAG,
    tenant: 'none', permission: 'roles:read', params: OrgParams,
    responses: { 200: { description: 'Roles', schema: z.object({ object: z.literal('list'), data: z.array(SpaceRole), hasMore: z.boolean() }) } },
    handler: async ({ ctx, req, deps, params }) => {
      const access = await reachOrg(ctx, req, deps, params.orgId, { permission: 'roles:read' });
      return ok({ object: 'list', data: await roles.listSpaceRoles(access.scope), hasMore: false });
    },
  }),
  route({
    method: 'post', path: '/api/orgs/{orgId}/roles', summary: 'Define a space role', tag: TAG,
    location: (b, p) => `/api/orgs/${p.orgId}/roles/${b.id}`,
    tenant: 'none', permission: 'roles:write', params: OrgParams,
    body: z.object({ key: z.string().regex(roles.ROLE_KEY_PATTERN, 'lower-case letters, digits, _ and -; up to 64'), name: z.string().trim().min(1).max(200), permissions: Permissions }).strict(),
    responses: { 201: { description: 'Created', schema: SpaceRole } },
    handler: async ({ ctx, req, deps, params, body }) => {
      const access = await reachOrg(ctx, req, deps, params.orgId, { permission: 'roles:write', write: true });
      return created(await roles.createSpaceRole(access.scope, body));
    },
  }),
  route({
    method: 'patch', path: '/api/orgs/{orgId}/roles/{roleId}', summary: 'Rename a space role or change its permissions (applies to its holders at once)', tag: TAG,
    tenant: 'none', permission: 'roles:write', params: RoleParams,
    body: z.object({ name: z.string().trim().min(1).max(200).optional(), permissions: Permissions.optional() }).strict(),
    responses: { 200: { description: 'The role', schema: SpaceRole } },
    handler: async ({ ctx, req, deps, params, body }) => {
      const access = await reachOrg(ctx, req, deps, params.orgId, { permission: 'roles:write', write: true });
      return ok(await roles.updateSpaceRole(access.scope, params.roleId, body));
    },
  }),
  route({
    method: 'delete', path: '/api/orgs/{orgId}/roles/{roleId}', summary: 'Delete a space role nobody holds', tag: TAG,
    tenant: 'none', permission: 'roles:write', params: RoleParams,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ ctx, req, deps, params }) => {
      const access = await reachOrg(ctx, req, deps, params.orgId, { permission: 'roles:write', write: true });
      await roles.deleteSpaceRole(access.scope, params.roleId);
      return noContent();
    },
  }),
];
