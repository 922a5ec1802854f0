// Forking: a copy of a package, under a new id, homed in a space the caller writes in (a personal
// space too: that is how a package reaches one, since a home never moves into it). The copy's
// draft is the source's draft, or one published version of it when `version` is given, with
// manifest.json renamed to the new id; it has no published version until its owner publishes.
// forked_from records the source.
//
// Who may fork: whoever reads the source (404 otherwise) and holds <type>:write in the target
// space (404 for a space they hold nothing in, 403 forbidden otherwise). A home space whose
// package_copy is restricted lets a package out only for holders of <type>:write in that home
// space (403 package_copy_restricted).
import { MANIFEST_FILE, isPackageId, packageIdProblem } from '../../../lib/afps/index.ts';
import { problem } from '../../../lib/problem.ts';
import { inTransaction } from '../../../db/transaction.ts';
import { holds, packagePermission, permissionsIn, type PackageScope } from './access.ts';
import { draftSource, findPackage, listVersions, readablePackage, resolveStored, type PackageRow } from './rows.ts';
import { blobOf, listTree, putBlobs, readBlob, treeIntegrityOf, type Queryable, type TreeEntry } from './store.ts';
import { isSystemPackage } from './versions.ts';

export interface ForkInput {
  /** the new package id (@scope/name) */
  name: string;
  /** the target space; the space the caller acts in when omitted */
  space_id?: string;
  /** copy this published version (exact, dist-tag or range) instead of the draft */
  version?: string;
}

export interface ForkOutcome {
  packageId: string;
  /** the space the fork is homed in */
  spaceId: string;
}

const UNIQUE_VIOLATION = '23505';

function nameTaken(id: string) {
  return problem('name_collision', { detail: `The package id ${id} is taken in this organization.` });
}

/** 403 package_copy_restricted when the source's home keeps its packages in and the caller cannot write there. */
async function assertMayCopyOut(scope: PackageScope, source: PackageRow): Promise<void> {
  const { rows } = await scope.pool.query('SELECT package_copy FROM spaces WHERE org_id = $1 AND id = $2', [scope.orgId, source.homeSpaceId]);
  if (rows[0]?.package_copy !== 'restricted') return;
  const write = packagePermission(source.type, 'write');
  if (!(await holds(scope, source.homeSpaceId, write))) {
    throw problem('package_copy_restricted', { detail: `The home space of ${source.id} restricts copying its packages out to holders of ${write} there.` });
  }
}

/** The target space, checked: 404 when it is not one the caller holds anything in, 403 without <type>:write. */
async function targetSpace(scope: PackageScope, source: PackageRow, spaceId: string): Promise<void> {
  const perms = await permissionsIn(scope, spaceId);
  if (perms.size === 0) throw problem('not_found', { detail: `No space ${spaceId} is reachable.` });
  const write = packagePermission(source.type, 'write');
  if (!perms.has(write)) throw problem('forbidden', { detail: `Forking ${source.id} into that space needs ${write} there.` });
}

/** The tree the fork starts from, with its manifest renamed: the entries and the one new blob. */
async function forkedTree(q: Queryable, scope: PackageScope, source: PackageRow, version: string | undefined, newId: string) {
  let from = draftSource(source);
  if (version !== undefined) {
    const versions = await listVersions(q, scope.orgId, source.id);
    from = resolveStored(source.id, versions, source.distTags, version).version;
  }
  const entries: TreeEntry[] = (await listTree(q, scope.orgId, source.id, from)).map((e) => ({ ...e, size: Number(e.size) }));
  const manifestEntry = entries.find((e) => e.path === MANIFEST_FILE);
  let manifest: unknown = null;
  if (manifestEntry) {
    try {
      manifest = JSON.parse((await readBlob(q, scope.orgId, manifestEntry.digest)).toString('utf8'));
    } catch {
      manifest = null;
    }
  }
  if (manifest === null || typeof manifest !== 'object' || Array.isArray(manifest)) {
    throw problem('invalid_draft_manifest', { detail: `The ${version === undefined ? 'draft' : `version ${from}`} of ${source.id} has no manifest.json object to copy.` });
  }
  const bytes = Buffer.from(`${JSON.stringify({ ...(manifest as Record<string, unknown>), name: newId }, null, 2)}\n`, 'utf8');
  const blob = blobOf(bytes);
  const tree = entries.filter((e) => e.path !== MANIFEST_FILE).concat({ path: MANIFEST_FILE, digest: blob.digest, size: bytes.length });
  return { tree, blob };
}

export async function forkPackage(scope: PackageScope, sourceId: string, input: ForkInput): Promise<ForkOutcome> {
  const source = await readablePackage(scope, sourceId);
  const newId = input.name;
  if (!isPackageId(newId)) {
    throw problem('validation_failed', { detail: `${JSON.stringify(newId)} is not a package id.`, errors: [{ field: 'name', code: 'invalid_format', message: packageIdProblem(newId) ?? 'must be @scope/name' }] });
  }
  if (isSystemPackage(newId)) throw problem('name_collision', { detail: `${newId} is a system package id.` });
  await assertMayCopyOut(scope, source);
  const spaceId = input.space_id ?? scope.spaceId;
  await targetSpace(scope, source, spaceId);
  const { tree, blob } = await forkedTree(scope.pool, scope, source, input.version, newId);

  try {
    await inTransaction(scope.pool, async (tx) => {
      const existing = await findPackage(tx, scope.orgId, spaceId, newId, { lock: 'wait', includeDeleted: true });
      if (existing && !existing.deletedAt) throw nameTaken(newId);
      // a deleted package's id is free again: its tombstone goes
      if (existing) await tx.query('DELETE FROM packages WHERE org_id = $1 AND id = $2', [scope.orgId, newId]);
      await putBlobs(tx, scope.orgId, [blob]);
      // one statement: the draft rows' foreign key is checked at its end, after the package row exists
      await tx.query(
        `WITH package_row AS (
           INSERT INTO packages (org_id, id, type, home_space_id, created_by, dist_tags, draft_base_version, draft_detached, draft_integrity, forked_from)
           VALUES ($1, $2, $3, $4, $5, '{}'::jsonb, NULL, true, $6, $7))
         INSERT INTO package_draft_files (org_id, package_id, path, digest, size)
         SELECT $1, $2, p, d, s FROM unnest($8::text[], $9::text[], $10::bigint[]) AS t(p, d, s)`,
        [scope.orgId, newId, source.type, spaceId, scope.actor.userId, treeIntegrityOf(tree), source.id,
          tree.map((e) => e.path), tree.map((e) => e.digest), tree.map((e) => e.size)],
      );
    });
  } catch (err) {
    // two forks (or a fork and an import) took the id at once
    if ((err as { code?: string }).code === UNIQUE_VIOLATION) throw nameTaken(newId);
    throw err;
  }
  return { packageId: newId, spaceId };
}
