// Organizations and their members. /api/orgs/{orgId}/... carries the organization in the path:
// membership is checked against it (api/services/org-access.ts), X-Org-Id is not needed.
import { z } from 'zod';
import type { OrgRole } from '../../lib/permissions.ts';
import { problem } from '../../lib/problem.ts';
import { created, noContent, ok, route } from '../route.ts';
import { listMembers, changeMemberRole, removeMember } from '../services/members.ts';
import { reachOrg } from '../services/org-access.ts';
import * as orgs from '../services/organizations.ts';

export const OrgRoleSchema = z.enum(['owner', 'admin', 'member', 'guest'] satisfies OrgRole[]);
const Slug = z.string().regex(orgs.SLUG_PATTERN, 'lower-case letters, digits and hyphens; 1 to 63 characters');

export const Organization = z.object({
  id: z.string(),
  name: z.string(),
  slug: z.string(),
  role: z.string(),
  default_space_id: z.string().nullable(),
  api_version: z.string().nullable().describe('the API version pinned on the organization (used when a request sends no Service-Version); null follows the current version'),
  local_credential_env: z.boolean().describe("whether local MCP servers may receive their connection's credential in their environment (an auth's delivery.env, an extension of the spec); off by default"),
  deleting: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
}).meta({ id: 'Organization' });
const OrgMember = z.object({ userId: z.string(), email: z.string(), name: z.string(), role: z.string(), createdAt: z.string() }).meta({ id: 'OrgMember' });

const list = <T extends z.ZodType>(item: T) => z.object({ object: z.literal('list'), data: z.array(item), hasMore: z.boolean() });
const OrgParams = z.object({ orgId: z.string() });
const MemberParams = z.object({ orgId: z.string(), userId: z.string() });
const TAG = 'Organizations';

/** An organization on the wire: snake_case, but for the identifiers the spec keeps in camelCase. */
function orgWire(o: orgs.Organization) {
  const { defaultSpaceId, apiVersion, localCredentialEnv, ...rest } = o;
  return { ...rest, default_space_id: defaultSpaceId, api_version: apiVersion, local_credential_env: localCredentialEnv };
}

export const orgRoutes = [
  route({
    method: 'get', path: '/api/orgs', summary: 'The organizations of the caller, with their role in each', tag: TAG,
    tenant: 'none', permission: 'signed-in',
    responses: { 200: { description: 'Organizations', schema: list(Organization) } },
    handler: async ({ ctx, deps }) => {
      const p = ctx.principal!;
      const data = await orgs.listOrganizations(deps.database.pool, p.userId, p.boundOrgId);
      return ok({ object: 'list', data: data.map(orgWire), hasMore: false });
    },
  }),
  route({
    method: 'post', path: '/api/orgs', summary: 'Create an organization (with its default space and the creator\'s personal space)', tag: TAG,
    location: (b) => `/api/orgs/${b.id}`,
    tenant: 'none', permission: 'signed-in', sessionOnly: true,
    body: z.object({ name: z.string().trim().min(1).max(200), slug: Slug.optional() }).strict(),
    responses: { 201: { description: 'Created; the caller is its owner', schema: Organization.extend({ personal_space_id: z.string() }) } },
    handler: async ({ ctx, deps, body }) => {
      if (deps.config.ORG_CREATION_DISABLED) throw problem('org_creation_disabled', { detail: 'Organization creation is disabled on this instance.' });
      const r = await orgs.createOrganizationFor({ pool: deps.database.pool, authCache: deps.authCache }, ctx.principal!.userId, body);
      return created({ ...orgWire(r.organization), personal_space_id: r.personalSpaceId });
    },
  }),
  route({
    method: 'get', path: '/api/orgs/{orgId}', summary: 'Read an organization', tag: TAG,
    tenant: 'none', permission: 'org:read', params: OrgParams,
    responses: { 200: { description: 'The organization', schema: Organization } },
    handler: async ({ ctx, req, deps, params }) => {
      const access = await reachOrg(ctx, req, deps, params.orgId, { permission: 'org:read' });
      return ok(orgWire(await orgs.getOrganization(access.scope, access.role)));
    },
  }),
  route({
    method: 'patch', path: '/api/orgs/{orgId}', summary: 'Rename an organization, change its slug, pin its API version or let local MCP servers receive credentials in their environment', tag: TAG,
    tenant: 'none', permission: 'org:write', params: OrgParams,
    body: z.object({
      name: z.string().trim().min(1).max(200).optional(),
      slug: Slug.optional(),
      api_version: z.string().nullable().optional().describe('YYYY-MM-DD, a version this instance serves; null unpins'),
      local_credential_env: z.boolean().optional().describe("let local MCP servers receive their connection's credential in their environment (delivery.env)"),
    }).strict(),
    responses: { 200: { description: 'The organization', schema: Organization }, 400: { description: 'invalid_api_version or unsupported_api_version' } },
    handler: async ({ ctx, req, deps, params, body }) => {
      const access = await reachOrg(ctx, req, deps, params.orgId, { permission: 'org:write', write: true });
      const { api_version, local_credential_env, ...patch } = body;
      return ok(orgWire(await orgs.updateOrganization(access.scope, access.role, { ...patch, apiVersion: api_version, localCredentialEnv: local_credential_env })));
    },
  }),
  route({
    method: 'delete', path: '/api/orgs/{orgId}', summary: 'Delete an organization and everything in it (owners)', tag: TAG,
    tenant: 'none', permission: 'org:delete', params: OrgParams,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ ctx, req, deps, params }) => {
      const access = await reachOrg(ctx, req, deps, params.orgId, { permission: 'org:delete' });
      await orgs.deleteOrganization(access.scope, (err) => deps.log.error('organization removal failed', { org_id: params.orgId, error: err }));
      return noContent();
    },
  }),
  route({
    method: 'get', path: '/api/orgs/{orgId}/members', summary: 'Members of an organization', tag: TAG,
    tenant: 'none', permission: 'members:read', params: OrgParams,
    responses: { 200: { description: 'Members', schema: list(OrgMember) } },
    handler: async ({ ctx, req, deps, params }) => {
      const access = await reachOrg(ctx, req, deps, params.orgId, { permission: 'members:read' });
      return ok({ object: 'list', data: await listMembers(access.scope), hasMore: false });
    },
  }),
  route({
    method: 'patch', path: '/api/orgs/{orgId}/members/{userId}', summary: 'Change a member\'s organization role', tag: TAG,
    tenant: 'none', permission: 'members:write', params: MemberParams,
    body: z.object({ role: OrgRoleSchema }).strict(),
    responses: { 200: { description: 'The member', schema: OrgMember } },
    handler: async ({ ctx, req, deps, params, body }) => {
      const access = await reachOrg(ctx, req, deps, params.orgId, { permission: 'members:write', write: true });
      return ok(await changeMemberRole(access.scope, access.role, params.userId, body.role));
    },
  }),
  route({
    method: 'delete', path: '/api/orgs/{orgId}/members/{userId}', summary: 'Remove a member (or leave, with your own id); revokes their keys in the organization', tag: TAG,
    tenant: 'none', permission: { anyOf: ['members:write', 'org:read'] }, params: MemberParams,
    responses: { 204: { description: 'Removed' } },
    handler: async ({ ctx, req, deps, params }) => {
      const leaving = params.userId === ctx.principal?.userId && ctx.principal?.kind === 'session';
      const access = await reachOrg(ctx, req, deps, params.orgId, { permission: leaving ? 'org:read' : 'members:write', write: true });
      await removeMember(access.scope, access.role, params.userId);
      return noContent();
    },
  }),
];
