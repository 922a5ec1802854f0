// Importing a package: an uploaded archive (or a manifest with its files) becomes a new package
// homed in the caller's space, or a new version of the package with that id.
//
// Rules, in order: a system id is name_collision; an id the caller cannot read is name_collision
// (ids are unique per organization); another type is type_mismatch; the version must be new and
// higher (version_exists, version_not_higher), except that importing content identical to an
// already published version answers 200 with that version (idempotent, nothing stored);
// unpublished draft changes are never overwritten (draft_overwrite).
import { readPackageArchive, readPackageFiles, type PackageContents } from '../../../lib/afps/index.ts';
import { writeZip } from '../../../lib/zip/index.ts';
import { problem } from '../../../lib/problem.ts';
import { canRead, holds, packagePermission, requireHomeAuthority, type PackageScope } from './access.ts';
import { findPackage, listVersions } from './rows.ts';
import { entriesOf, treeIntegrityOf, } from './store.ts';
import { inTransaction } from '../../../db/transaction.ts';
import { assertPublishable, draftIsDirty, insertVersion, isSystemPackage, type PublishedRef } from './versions.ts';

export interface ImportOutcome {
  /** 201 when a version was stored, 200 when the same content was already published */
  status: 200 | 201;
  body: PublishedRef;
}

const UNIQUE_VIOLATION = '23505';

export function packageReadOptions(scope: PackageScope) {
  return { timeoutCeilingSeconds: scope.config.PLATFORM_RUN_LIMITS.timeout_ceiling_seconds };
}

/** An uploaded .afps/.zip archive; it is kept byte for byte. */
export async function importArchive(scope: PackageScope, bytes: Buffer): Promise<ImportOutcome> {
  const contents = await readPackageArchive(bytes, {
    ...packageReadOptions(scope),
    limits: { maxTotalBytes: scope.config.PACKAGE_MAX_INFLATED_BYTES, totalSetting: 'PACKAGE_MAX_INFLATED_BYTES' },
    queueKey: scope.orgId,
  });
  return importContents(scope, contents, bytes);
}

/** Files without an archive (a JSON import, a repository): the stored archive is written from them. */
export function importFiles(scope: PackageScope, files: Map<string, Buffer>): Promise<ImportOutcome> {
  const contents = readPackageFiles(files, packageReadOptions(scope));
  return importContents(scope, contents, writeZip(files));
}

export async function importContents(scope: PackageScope, contents: PackageContents, archive: Buffer): Promise<ImportOutcome> {
  const { manifest, files } = contents;
  const id = manifest.name;
  if (isSystemPackage(id)) throw problem('name_collision', { detail: `${id} is a system package id.` });
  const integrity = treeIntegrityOf(entriesOf(files));

  for (let attempt = 0; ; attempt++) {
    try {
      return await inTransaction(scope.pool, async (tx) => {
        const existing = await findPackage(tx, scope.orgId, scope.spaceId, id, { lock: 'wait', includeDeleted: true });
        const nv = { version: manifest.version, manifest, files, archive };

        if (!existing || existing.deletedAt) {
          if (!(await holds(scope, scope.spaceId, packagePermission(manifest.type, 'write')))) {
            throw problem('forbidden', { detail: `Importing a package needs ${packagePermission(manifest.type, 'write')} in this space.` });
          }
          // a deleted package's id is free again: its tombstone goes
          if (existing) await tx.query('DELETE FROM packages WHERE org_id = $1 AND id = $2', [scope.orgId, id]);
          return { status: 201, body: await insertVersion(tx, scope, { id, type: manifest.type }, nv, [], { resetDraft: false, createIn: scope.spaceId }) };
        }

        if (!(await canRead(scope, existing))) throw problem('name_collision', { detail: `The package id ${id} is taken in this organization.` });
        if (existing.type !== manifest.type) {
          throw problem('type_mismatch', { detail: `${id} exists as a package of type ${existing.type}, not ${manifest.type}.` });
        }
        await requireHomeAuthority(scope, existing, 'write');
        const versions = await listVersions(tx, scope.orgId, id);
        const same = versions.find((v) => v.version === manifest.version);
        if (same && same.integrity === integrity) {
          return { status: 200, body: { packageId: id, type: existing.type, version: same.version, integrity } };
        }
        assertPublishable(id, manifest.version, versions);
        if (draftIsDirty(existing, versions)) {
          throw problem('draft_overwrite', { detail: `${id} has unpublished draft changes; publish or discard them before importing a new version.` });
        }
        return { status: 201, body: await insertVersion(tx, scope, existing, nv, versions, { resetDraft: true }) };
      });
    } catch (err) {
      // two first imports of one id raced; the second now finds the package
      if ((err as { code?: string }).code === UNIQUE_VIOLATION && attempt === 0) continue;
      throw err;
    }
  }
}
