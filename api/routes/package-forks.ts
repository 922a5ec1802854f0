// Forking a package (spec: the package record's forked_from; home_move_into_personal_space says
// "fork"): a copy under a new id, homed in the space the caller acts in or the one it names.
import { PACKAGE_WRITE } from '../../lib/permissions.ts';
import { z } from 'zod';
import { created, route } from '../route.ts';
import { getPackage } from '../services/packages/catalog.ts';
import { forkPackage } from '../services/packages/forks.ts';
import { PackageParams, PackageRecord, packageIdOf, scopeOf } from './package-wire.ts';

// a fork stores no content (the copy shares the source's blobs), so it is cheaper than an import
const FORK_LIMIT = { perMinute: 30 };

export const packageForkRoutes = [
  route({
    method: 'post', path: '/api/packages/{scope}/{name}/fork', summary: 'Fork a package: copy its draft (or a version) into a new package homed in a space', tag: 'Package placement',
    location: (b) => `/api/packages/${b.packageId}`,
    authority: 'resource', permission: PACKAGE_WRITE, idempotent: true, rateLimit: FORK_LIMIT, params: PackageParams,
    body: z.object({
      name: z.string().min(1).max(214).describe('the new package id, @scope/name'),
      space_id: z.string().min(1).optional().describe('the space the fork is homed in (a team space or the caller\'s personal space); default: the space the caller acts in'),
      version: z.string().min(1).max(256).optional().describe('copy this published version (exact, dist-tag or range) as the fork\'s draft; default: the source\'s draft'),
    }).strict(),
    responses: {
      201: { description: 'Forked: the new package (no published version yet; its draft is the copy), forked_from naming the source', schema: PackageRecord },
      403: { description: 'forbidden (no write permission in the target space) or package_copy_restricted (the source\'s home space keeps its packages in)' },
      409: { description: 'name_collision' },
    },
    handler: async ({ ctx, params, body, deps }) => {
      const fork = await forkPackage(scopeOf(ctx, deps), packageIdOf(params), body);
      return created(await getPackage(scopeOf(ctx, deps, fork.spaceId), fork.packageId));
    },
  }),
];
