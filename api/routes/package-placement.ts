// A package's home space and its placements in other spaces (spec: Packages, "activates a
// package in a space"). The space routes carry the target space in the path (tenant org).
import { PACKAGE_WRITE, PACKAGE_PLACE } from '../../lib/permissions.ts';
import { z } from 'zod';
import { created, noContent, ok, route, type Reply } from '../route.ts';
import { moveHome, placePackage, removePlacement, setPlacementActive } from '../services/packages/placement.ts';
import { PackageParams, packageIdOf, scopeOf } from './package-wire.ts';

const TAG = 'Package placement';

const Placement = z.object({
  packageId: z.string(),
  spaceId: z.string(),
  active: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
}).meta({ id: 'PackagePlacement' });

const SpaceParams = z.object({ spaceId: z.string() });
const SpacePackageParams = SpaceParams.extend(PackageParams.shape);

export const packagePlacementRoutes = [
  route({
    method: 'put', path: '/api/packages/{scope}/{name}/home', summary: 'Move the package\'s home space', tag: TAG,
    authority: 'resource', permission: PACKAGE_WRITE, params: PackageParams,
    body: z.object({ space_id: z.string().min(1).nullable().optional().describe('target space; omitted or null: the organization\'s default space') }).strict(),
    responses: { 200: { description: 'Moved', schema: z.object({ packageId: z.string(), home_space_id: z.string(), previous_home_space_id: z.string() }) } },
    handler: async ({ ctx, params, body, deps }) => ok(await moveHome(scopeOf(ctx, deps), packageIdOf(params), body.space_id)),
  }),
  route({
    method: 'post', path: '/api/spaces/{spaceId}/packages', summary: 'Place (activate) a package in a space', tag: TAG,
    location: (b, p) => `/api/spaces/${p.spaceId}/packages/${b.packageId}`,
    tenant: 'org', authority: 'resource', permission: PACKAGE_PLACE, params: SpaceParams,
    body: z.object({ packageId: z.string().min(1), active: z.boolean().optional() }).strict(),
    responses: { 201: { description: 'Placed', schema: Placement }, 200: { description: 'Already placed; active updated', schema: Placement } },
    handler: async ({ ctx, params, body, deps }): Promise<Reply> => {
      const { created: isNew, placement } = await placePackage(scopeOf(ctx, deps, params.spaceId), body.packageId, body.active ?? true);
      return isNew ? created(placement) : ok(placement);
    },
  }),
  route({
    method: 'patch', path: '/api/spaces/{spaceId}/packages/{scope}/{name}', summary: 'Switch a placed package on or off in a space', tag: TAG,
    tenant: 'org', authority: 'resource', permission: PACKAGE_PLACE, params: SpacePackageParams,
    body: z.object({ active: z.boolean() }).strict(),
    responses: { 200: { description: 'The placement', schema: Placement } },
    handler: async ({ ctx, params, body, deps }) => ok(await setPlacementActive(scopeOf(ctx, deps, params.spaceId), packageIdOf(params), body.active)),
  }),
  route({
    method: 'delete', path: '/api/spaces/{spaceId}/packages/{scope}/{name}', summary: 'Remove a package from a space it is placed in', tag: TAG,
    tenant: 'org', authority: 'resource', permission: PACKAGE_PLACE, params: SpacePackageParams,
    responses: { 204: { description: 'Removed' } },
    handler: async ({ ctx, params, deps }) => {
      await removePlacement(scopeOf(ctx, deps, params.spaceId), packageIdOf(params));
      return noContent();
    },
  }),
];
