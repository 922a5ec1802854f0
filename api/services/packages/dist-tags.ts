// Dist-tags other than latest: names that point at a published version (beta, next, stable) and
// resolve wherever a version is asked for. latest is the platform's: it follows the highest release.
import type pg from 'pg';
import { isExactVersion, isVersionRange } from '../../../lib/afps/index.ts';
import { problem } from '../../../lib/problem.ts';
import { inTransaction } from '../../../db/transaction.ts';
import { requireHomeAuthority, type PackageScope } from './access.ts';
import { listVersions, readablePackage } from './rows.ts';

const TAG_PATTERN = /^[a-z][a-z0-9._-]{0,63}$/;

export interface DistTags {
  packageId: string;
  dist_tags: Record<string, string>;
}

/** A tag must not read as a version or a range, or asking for it would mean something else. */
function checkTag(tag: string): void {
  if (tag === 'latest') throw problem('invalid_request', { detail: 'The latest dist-tag follows the highest release; it cannot be set or removed.' });
  if (!TAG_PATTERN.test(tag) || isExactVersion(tag) || isVersionRange(tag)) {
    throw problem('invalid_request', { detail: `"${tag}" cannot be a dist-tag: use a lower-case name starting with a letter that is not a version or a range.` });
  }
}

async function changeTags(scope: PackageScope, id: string, change: (tx: pg.PoolClient, tags: Record<string, string>) => Promise<Record<string, string>>): Promise<DistTags> {
  const pkg = await readablePackage(scope, id);
  await requireHomeAuthority(scope, pkg, 'write');
  return inTransaction(scope.pool, async (tx: pg.PoolClient) => {
    const locked = await readablePackage(scope, id, tx, { lock: 'wait' });
    const next = await change(tx, { ...locked.distTags });
    await tx.query('UPDATE packages SET dist_tags = $3, updated_at = now() WHERE org_id = $1 AND id = $2', [scope.orgId, id, JSON.stringify(next)]);
    return { packageId: id, dist_tags: next };
  });
}

/** Points `tag` at an exact published version that is not yanked. */
export async function setDistTag(scope: PackageScope, id: string, tag: string, version: string): Promise<DistTags> {
  checkTag(tag);
  return changeTags(scope, id, async (tx, tags) => {
    const target = (await listVersions(tx, scope.orgId, id)).find((v) => v.version === version);
    if (!target) throw problem('version_not_found', { detail: `${id}@${version} does not exist.` });
    if (target.yanked) throw problem('version_yanked', { detail: `${id}@${version} was yanked.` });
    return { ...tags, [tag]: version };
  });
}

export async function removeDistTag(scope: PackageScope, id: string, tag: string): Promise<DistTags> {
  checkTag(tag);
  return changeTags(scope, id, async (_tx, tags) => {
    if (!Object.hasOwn(tags, tag)) throw problem('not_found', { detail: `${id} has no dist-tag "${tag}".` });
    const { [tag]: _removed, ...rest } = tags;
    return rest;
  });
}
