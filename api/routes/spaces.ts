// Spaces and their members. Organization routes (X-Org-Id, or the key's binding) with the space
// in the path; what the caller may do in that space is checked against their role there.
import { z } from 'zod';
import { orgScopeOf } from '../../db/tenant.ts';
import type { RequestContext } from '../context.ts';
import type { AppDeps } from '../deps.ts';
import { created, noContent, ok, route } from '../route.ts';
import { identityScope } from '../services/identity-change.ts';
import { reachSpace, requireSpacePermission, type Space as SpaceRecord } from '../services/space-access.ts';
import * as members from '../services/space-members.ts';
import * as spaces from '../services/spaces.ts';

const Space = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(['team', 'personal']),
  is_default: z.boolean(),
  owner_user_id: z.string().nullable(),
  role_key: z.string().nullable(),
  visibility: z.enum(['private', 'org']).nullable().describe('team spaces: private (members only) or org (every organization member may see and join it); null for personal spaces'),
  default_role: z.string().nullable().describe('team spaces: the space role a member joining by themselves receives; null for personal spaces'),
  package_copy: z.enum(['members', 'restricted']).describe('who may fork packages out of this space: members (whoever reads the package) or restricted (holders of the package type\'s write permission here)'),
  is_member: z.boolean().describe('false: an organization-visible team space the caller may join (POST /api/spaces/{spaceId}/join)'),
  createdAt: z.string(),
  updatedAt: z.string(),
}).meta({ id: 'Space' });
const SpaceMember = z.object({ userId: z.string(), email: z.string(), name: z.string(), org_role: z.string(), role_key: z.string(), createdAt: z.string() }).meta({ id: 'SpaceMember' });
const list = <T extends z.ZodType>(item: T) => z.object({ object: z.literal('list'), data: z.array(item), hasMore: z.boolean() });
const SpaceParams = z.object({ spaceId: z.string() });
const MemberParams = z.object({ spaceId: z.string(), userId: z.string() });
const RoleKey = z.string().min(1).max(64);
const TAG = 'Spaces';

/** A space on the wire: snake_case, but for the identifiers the spec keeps in camelCase. */
function spaceWire(s: SpaceRecord) {
  const { isDefault, ownerUserId, roleKey, ...rest } = s;
  return { ...rest, is_default: isDefault, owner_user_id: ownerUserId, role_key: roleKey };
}

function memberWire(m: members.SpaceMember) {
  const { orgRole, roleKey, ...rest } = m;
  return { ...rest, org_role: orgRole, role_key: roleKey };
}

function scopeFor(ctx: RequestContext, deps: AppDeps) {
  return identityScope(orgScopeOf(ctx, deps.database), deps.authCache);
}

async function reach(ctx: RequestContext, deps: AppDeps, spaceId: string) {
  const scope = scopeFor(ctx, deps);
  return { scope, access: await reachSpace(scope, ctx, spaceId) };
}

export const spaceRoutes = [
  route({
    method: 'get', path: '/api/spaces', summary: 'Spaces of the organization the caller can see', tag: TAG,
    tenant: 'org', permission: 'spaces:read',
    responses: { 200: { description: 'Spaces', schema: list(Space) } },
    handler: async ({ ctx, deps }) => {
      // Spaces and memberships change only through identity changes, which clear this cache on
      // every instance (auth-cache.ts): the list is served from it like the credential itself.
      const p = ctx.principal!;
      const data = await deps.authCache.through(`spaces:${ctx.org!.id}:${p.userId}:${ctx.org!.role}:${p.boundSpaceId ?? ''}`, () =>
        spaces.listSpaces(scopeFor(ctx, deps), p, ctx.org!.role));
      return ok({ object: 'list', data: data.map(spaceWire), hasMore: false });
    },
  }),
  route({
    method: 'post', path: '/api/spaces', summary: 'Create a team space', tag: TAG,
    location: (b) => `/api/spaces/${b.id}`,
    tenant: 'org', permission: 'spaces:write',
    body: z.object({ name: z.string().trim().min(1).max(200) }).strict(),
    responses: { 201: { description: 'Created; a creator below admin becomes its space admin', schema: Space } },
    handler: async ({ ctx, deps, body }) => created(spaceWire(await spaces.createSpace(scopeFor(ctx, deps), ctx.org!.role, body))),
  }),
  route({
    method: 'get', path: '/api/spaces/{spaceId}', summary: 'Read a space', tag: TAG,
    tenant: 'org', authority: 'resource', permission: 'spaces:read', params: SpaceParams,
    responses: { 200: { description: 'The space', schema: Space } },
    handler: async ({ ctx, deps, params }) => {
      const { access } = await reach(ctx, deps, params.spaceId);
      if (!access.joinable) requireSpacePermission(access, 'spaces:read');
      return ok(spaceWire(access.space));
    },
  }),
  route({
    method: 'patch', path: '/api/spaces/{spaceId}', summary: 'Rename a space; for a team space: make it the default, set its visibility, default role and package copying', tag: TAG,
    tenant: 'org', authority: 'resource', permission: 'spaces:write', params: SpaceParams,
    body: z.object({
      name: z.string().trim().min(1).max(200).optional(),
      is_default: z.literal(true).optional(),
      visibility: z.enum(['private', 'org']).optional(),
      default_role: RoleKey.optional().describe('a preset or a role of the organization that does not administer the space'),
      package_copy: z.enum(['members', 'restricted']).optional(),
    }).strict(),
    responses: { 200: { description: 'The space', schema: Space } },
    handler: async ({ ctx, deps, params, body }) => {
      const { scope, access } = await reach(ctx, deps, params.spaceId);
      const { is_default, ...patch } = body;
      return ok(spaceWire(await spaces.updateSpace(scope, access, { ...patch, isDefault: is_default })));
    },
  }),
  route({
    method: 'delete', path: '/api/spaces/{spaceId}', summary: 'Delete a team space and everything in it', tag: TAG,
    tenant: 'org', authority: 'resource', permission: 'spaces:delete', params: SpaceParams,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ ctx, deps, params }) => {
      const { scope, access } = await reach(ctx, deps, params.spaceId);
      await spaces.deleteSpace(scope, access);
      return noContent();
    },
  }),
  route({
    method: 'post', path: '/api/spaces/{spaceId}/convert', summary: 'Turn an orphaned personal space into a team space (organization owners and admins)', tag: TAG,
    tenant: 'org', authority: 'resource', permission: 'spaces:write', params: SpaceParams,
    responses: {
      200: { description: 'The space, now a team space', schema: Space },
      409: { description: 'space_not_personal (a team space) or personal_space_not_orphaned (its owner is still a member)' },
    },
    handler: async ({ ctx, deps, params }) => {
      const { scope, access } = await reach(ctx, deps, params.spaceId);
      return ok(spaceWire(await spaces.convertOrphanedSpace(scope, access)));
    },
  }),
  route({
    method: 'get', path: '/api/spaces/{spaceId}/members', summary: 'Members of a space and their space roles', tag: TAG,
    tenant: 'org', authority: 'resource', permission: 'space-members:read', params: SpaceParams,
    responses: { 200: { description: 'Members', schema: list(SpaceMember) } },
    handler: async ({ ctx, deps, params }) => {
      const { scope, access } = await reach(ctx, deps, params.spaceId);
      return ok({ object: 'list', data: (await members.listSpaceMembers(scope, access)).map(memberWire), hasMore: false });
    },
  }),
  route({
    method: 'post', path: '/api/spaces/{spaceId}/members', summary: 'Give an organization member a role in a team space', tag: TAG,
    location: (b, p) => `/api/spaces/${p.spaceId}/members/${b.userId}`,
    tenant: 'org', authority: 'resource', permission: 'space-members:write', params: SpaceParams,
    body: z.object({ userId: z.string().min(1), role_key: RoleKey }).strict(),
    responses: { 201: { description: 'Added', schema: SpaceMember } },
    handler: async ({ ctx, deps, params, body }) => {
      const { scope, access } = await reach(ctx, deps, params.spaceId);
      return created(memberWire(await members.addSpaceMember(scope, access, { userId: body.userId, roleKey: body.role_key })));
    },
  }),
  route({
    method: 'patch', path: '/api/spaces/{spaceId}/members/{userId}', summary: 'Change a member\'s space role', tag: TAG,
    tenant: 'org', authority: 'resource', permission: 'space-members:write', params: MemberParams,
    body: z.object({ role_key: RoleKey }).strict(),
    responses: { 200: { description: 'The member', schema: SpaceMember } },
    handler: async ({ ctx, deps, params, body }) => {
      const { scope, access } = await reach(ctx, deps, params.spaceId);
      return ok(memberWire(await members.updateSpaceMember(scope, access, params.userId, body.role_key)));
    },
  }),
  route({
    method: 'post', path: '/api/spaces/{spaceId}/join', summary: 'Join an organization-visible team space with its default role', tag: TAG,
    location: (b, p) => `/api/spaces/${p.spaceId}/members/${b.userId}`,
    tenant: 'org', permission: 'signed-in', sessionOnly: true, params: SpaceParams,
    body: z.object({
      visibility: z.enum(['private', 'org']).describe('the visibility the space showed when the caller chose to join'),
      default_role: RoleKey.describe('the default role the space showed when the caller chose to join'),
    }).strict(),
    responses: {
      201: { description: 'Joined: the caller\'s membership, with the space\'s default role', schema: SpaceMember },
      409: { description: 'space_access_changed (visibility or default role differ from what the body says), space_member_exists, redundant_space_role, personal_space_has_no_members' },
    },
    handler: async ({ ctx, deps, params, body }) => {
      const p = ctx.principal!;
      return created(memberWire(await members.joinSpace(scopeFor(ctx, deps), { userId: p.userId, boundSpaceId: p.boundSpaceId }, params.spaceId, body)));
    },
  }),
  route({
    method: 'delete', path: '/api/spaces/{spaceId}/members/{userId}', summary: 'Remove a member from a space', tag: TAG,
    tenant: 'org', authority: 'resource', permission: { anyOf: ['space-members:write', 'spaces:read'] }, params: MemberParams,
    responses: { 204: { description: 'Removed' } },
    handler: async ({ ctx, deps, params }) => {
      const { scope, access } = await reach(ctx, deps, params.spaceId);
      await members.removeSpaceMember(scope, access, params.userId);
      return noContent();
    },
  }),
];
