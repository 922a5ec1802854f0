// Dist-tags of a package other than latest (which follows the highest release by itself).
import { PACKAGE_WRITE } from '../../lib/permissions.ts';
import { z } from 'zod';
import { ok, route } from '../route.ts';
import { removeDistTag, setDistTag } from '../services/packages/dist-tags.ts';
import { PackageParams, packageIdOf, scopeOf } from './package-wire.ts';

const TAG = 'Packages';
const TagParams = PackageParams.extend({ tag: z.string() });
const DistTags = z.object({ packageId: z.string(), dist_tags: z.record(z.string(), z.string()) }).meta({ id: 'DistTags' });
const Refusals = {
  400: { description: 'invalid_request: latest, or a tag that reads as a version or a range' },
  404: { description: 'not_found or version_not_found' },
};

export const packageDistTagRoutes = [
  route({
    method: 'put', path: '/api/packages/{scope}/{name}/dist-tags/{tag}', summary: 'Point a dist-tag at a published version', tag: TAG,
    authority: 'resource', permission: PACKAGE_WRITE, params: TagParams,
    body: z.object({ version: z.string().min(1).describe('an exact published version, not yanked') }).strict(),
    responses: { 200: { description: "The package's dist-tags", schema: DistTags }, ...Refusals, 410: { description: 'version_yanked' } },
    handler: async ({ ctx, params, body, deps }) => ok(await setDistTag(scopeOf(ctx, deps), packageIdOf(params), params.tag, body.version)),
  }),
  route({
    method: 'delete', path: '/api/packages/{scope}/{name}/dist-tags/{tag}', summary: 'Remove a dist-tag', tag: TAG,
    authority: 'resource', permission: PACKAGE_WRITE, params: TagParams,
    responses: { 200: { description: "The package's dist-tags", schema: DistTags }, ...Refusals },
    handler: async ({ ctx, params, deps }) => ok(await removeDistTag(scopeOf(ctx, deps), packageIdOf(params), params.tag)),
  }),
];
