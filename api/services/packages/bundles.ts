// .afps-bundle export and import. Export: an agent with its resolved dependencies, signed with
// AFPS_SIGNING_KEY when it is set (an Ed25519 private key: PEM, or the base64 of its PKCS#8 DER).
// Import: the bundle's integrity is checked file by file, package by package and overall, its
// signature judged by AFPS_SIGNATURE_POLICY against AFPS_TRUST_ROOT; then every package version
// is stored in one transaction. A contained id the caller cannot read, or that exists with
// another type, is 409 bundle_conflict; a contained version already published with other
// content is 409 integrity_mismatch; one already published with the same content is kept as is.
import crypto, { type KeyObject } from 'node:crypto';
import semver from 'semver';
import { buildBundle, readBundle, readPackageFiles, type PackageContents } from '../../../lib/afps/index.ts';
import { writeZip } from '../../../lib/zip/index.ts';
import type { Config } from '../../../lib/config.ts';
import { isProblem, problem } from '../../../lib/problem.ts';
import { canRead, holds, packagePermission, requireHomeAuthority, type PackageScope } from './access.ts';
import { resolveRunnableAgent } from './dependencies.ts';
import { packageReadOptions } from './import.ts';
import { findPackage, listVersions } from './rows.ts';

import { inTransaction } from '../../../db/transaction.ts';
import { assertPublishable, draftIsDirty, insertVersion, isSystemPackage } from './versions.ts';

let cachedSigner: { text: string; key: KeyObject } | undefined;

/** The bundle signing key of AFPS_SIGNING_KEY, or undefined when none is configured. */
export function signingKeyOf(config: Config): KeyObject | undefined {
  const text = config.AFPS_SIGNING_KEY?.trim();
  if (!text) return undefined;
  if (cachedSigner?.text === text) return cachedSigner.key;
  let key: KeyObject;
  try {
    key = text.includes('-----BEGIN')
      ? crypto.createPrivateKey(text)
      : crypto.createPrivateKey({ key: Buffer.from(text, 'base64'), format: 'der', type: 'pkcs8' });
  } catch {
    throw problem('internal_error', { detail: 'AFPS_SIGNING_KEY is not a readable private key.' });
  }
  if (key.asymmetricKeyType !== 'ed25519') throw problem('internal_error', { detail: 'AFPS_SIGNING_KEY must be an Ed25519 private key.' });
  cachedSigner = { text, key };
  return key;
}

export async function exportBundle(scope: PackageScope, id: string, versionSpec?: string): Promise<{ bytes: Buffer; filename: string; version: string }> {
  const agent = await resolveRunnableAgent(scope, id, versionSpec);
  const packages = [
    { id: agent.packageId, version: agent.version, files: agent.files },
    ...[...agent.skills, ...agent.integrations, ...agent.mcpServers].map((p) => ({ id: p.id, version: p.version, files: p.files })),
  ];
  const key = signingKeyOf(scope.config);
  const bytes = buildBundle({ root: agent.packageId, packages }, key ? { privateKey: key } : undefined);
  return { bytes, filename: `${id.slice(1).replace('/', '-')}-${agent.version}.afps-bundle`, version: agent.version };
}

export interface BundleImportResult {
  packageId: string;
  type: 'agent';
  version: string;
  /** the bundle's overall integrity */
  integrity: string;
  signed: boolean;
  trusted: boolean;
  warnings: string[];
  packages: Array<{ packageId: string; type: string; version: string; integrity: string; status: 'created' | 'added' | 'unchanged' }>;
}

const UNIQUE_VIOLATION = '23505';

export async function importBundle(scope: PackageScope, bytes: Buffer): Promise<{ status: 200 | 201; body: BundleImportResult }> {
  const bundle = await readBundle(bytes, {
    policy: scope.config.AFPS_SIGNATURE_POLICY,
    trustRoot: scope.config.AFPS_TRUST_ROOT,
    maxPackageBytes: scope.config.PACKAGE_MAX_INFLATED_BYTES,
    queueKey: scope.orgId,
  });
  const checked = bundle.packages.map((pkg) => {
    let contents: PackageContents;
    try {
      contents = readPackageFiles(pkg.files, packageReadOptions(scope));
    } catch (err) {
      if (isProblem(err) && err.status < 500) throw problem('invalid_bundle', { detail: `${pkg.id}@${pkg.version}: ${err.detail}`, errors: err.errors });
      throw err;
    }
    if (isSystemPackage(pkg.id)) throw problem('name_collision', { detail: `${pkg.id} is a system package id.` });
    return { ...pkg, contents };
  });
  // dependencies first, the root last; versions of one package in ascending order
  checked.sort((a, b) => Number(a.id === bundle.root) - Number(b.id === bundle.root) || a.id.localeCompare(b.id) || semver.compare(a.version, b.version));

  for (let attempt = 0; ; attempt++) {
    try {
      const results = await inTransaction(scope.pool, async (tx) => {
        const out: BundleImportResult['packages'] = [];
        for (const pkg of checked) {
          const { manifest, files } = pkg.contents;
          const nv = { version: pkg.version, manifest, files, archive: writeZip(files) };
          const row = await findPackage(tx, scope.orgId, scope.spaceId, pkg.id, { lock: 'wait', includeDeleted: true });
          if (!row || row.deletedAt) {
            if (!(await holds(scope, scope.spaceId, packagePermission(manifest.type, 'write')))) {
              throw problem('forbidden', { detail: `Importing ${pkg.id} needs ${packagePermission(manifest.type, 'write')} in this space.` });
            }
            if (row) await tx.query('DELETE FROM packages WHERE org_id = $1 AND id = $2', [scope.orgId, pkg.id]);
            const ref = await insertVersion(tx, scope, { id: pkg.id, type: manifest.type }, nv, [], { resetDraft: false, createIn: scope.spaceId });
            out.push({ ...ref, status: 'created' });
            continue;
          }
          if (!(await canRead(scope, row))) throw problem('bundle_conflict', { detail: `The package id ${pkg.id} is taken in this organization.` });
          if (row.type !== manifest.type) throw problem('bundle_conflict', { detail: `${pkg.id} exists as a ${row.type} package, the bundle holds a ${manifest.type}.` });
          await requireHomeAuthority(scope, row, 'write');
          const versions = await listVersions(tx, scope.orgId, pkg.id);
          const same = versions.find((v) => v.version === pkg.version);
          if (same) {
            if (same.integrity !== pkg.integrity) throw problem('integrity_mismatch', { detail: `${pkg.id}@${pkg.version} is published here with other content.` });
            out.push({ packageId: pkg.id, type: row.type, version: pkg.version, integrity: same.integrity, status: 'unchanged' });
            continue;
          }
          assertPublishable(pkg.id, pkg.version, versions);
          const ref = await insertVersion(tx, scope, row, nv, versions, { resetDraft: !draftIsDirty(row, versions) });
          out.push({ ...ref, status: 'added' });
        }
        return out;
      });
      const root = results.find((r) => r.packageId === bundle.root)!;
      return {
        status: results.some((r) => r.status !== 'unchanged') ? 201 : 200,
        body: {
          packageId: bundle.root, type: 'agent', version: root.version, integrity: bundle.integrity,
          signed: bundle.signed, trusted: bundle.trusted, warnings: bundle.warnings, packages: results,
        },
      };
    } catch (err) {
      if ((err as { code?: string }).code === UNIQUE_VIOLATION && attempt === 0) continue;
      throw err;
    }
  }
}
