// bundle.json, the index of an .afps-bundle, and the canonical statement its overall hash covers.
// docs/bundle-format.md describes both.
import { problem } from '../problem.ts';
import { classifyEntryName, compareEntryNames, printableEntryName } from '../zip/entry-name.ts';
import { isJsonObject } from './field-reader.ts';
import { isSha256Integrity, sha256Integrity } from './integrity.ts';
import { packageIdProblem, type PackageId } from './package-id.ts';
import { isExactVersion } from './versions.ts';

export const BUNDLE_FORMAT = 'afps-bundle';
export const BUNDLE_FORMAT_VERSION = 1;
export const INDEX_FILE = 'bundle.json';
export const SIGNATURE_FILE = 'signature.json';
export const PACKAGES_DIR = 'packages';

export interface IndexedPackage {
  id: PackageId;
  version: string;
  /** treeIntegrity of the package's files */
  integrity: string;
  /** path inside the package → sha256 integrity */
  files: Record<string, string>;
}

export interface BundleIndex {
  format: typeof BUNDLE_FORMAT;
  format_version: typeof BUNDLE_FORMAT_VERSION;
  root: PackageId;
  packages: IndexedPackage[];
  /** sha256 integrity of the canonical statement */
  integrity: string;
}

/** Where a package's files sit in the bundle: `packages/@scope/name/1.2.0/`. */
export function packagePrefix(id: string, version: string): string {
  return `${PACKAGES_DIR}/${id}/${version}/`;
}

export function packageKey(pkg: { id: string; version: string }): string {
  return `${pkg.id}@${pkg.version}`;
}

export function comparePackages(a: { id: string; version: string }, b: { id: string; version: string }): number {
  return compareEntryNames(packageKey(a), packageKey(b));
}

/** The text the overall integrity hashes: format, root, then one line per package in key order. */
export function canonicalStatement(root: string, packages: Array<{ id: string; version: string; integrity: string }>): string {
  const lines = [`${BUNDLE_FORMAT}/${BUNDLE_FORMAT_VERSION}`, `root ${root}`];
  for (const pkg of [...packages].sort(comparePackages)) lines.push(`package ${packageKey(pkg)} ${pkg.integrity}`);
  return lines.map((line) => `${line}\n`).join('');
}

export function overallIntegrity(root: string, packages: Array<{ id: string; version: string; integrity: string }>): string {
  return sha256Integrity(canonicalStatement(root, packages));
}

function malformed(detail: string) {
  return problem('invalid_bundle', { detail: `bundle.json: ${detail}` });
}

/** Reads bundle.json strictly: every member checked, none unknown. */
export function parseBundleIndex(bytes: Buffer | undefined): BundleIndex {
  if (!bytes) throw problem('invalid_bundle', { detail: 'The bundle has no bundle.json at its root.' });
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw malformed('is not valid UTF-8 JSON.');
  }
  if (!isJsonObject(raw)) throw malformed('must be a JSON object.');
  onlyKeys(raw, ['format', 'format_version', 'root', 'packages', 'integrity'], 'the index');
  if (raw.format !== BUNDLE_FORMAT) throw malformed(`format must be "${BUNDLE_FORMAT}".`);
  if (raw.format_version !== BUNDLE_FORMAT_VERSION) throw malformed(`format_version ${JSON.stringify(raw.format_version)} is not supported.`);
  if (typeof raw.root !== 'string' || packageIdProblem(raw.root)) throw malformed('root must be a package id.');
  if (typeof raw.integrity !== 'string' || !isSha256Integrity(raw.integrity)) throw malformed('integrity must be a sha256 integrity string.');
  if (!Array.isArray(raw.packages) || raw.packages.length === 0) throw malformed('packages must be a non-empty array.');

  const packages = raw.packages.map((item, i): IndexedPackage => {
    const where = `packages[${i}]`;
    if (!isJsonObject(item)) throw malformed(`${where} must be an object.`);
    onlyKeys(item, ['id', 'version', 'integrity', 'files'], where);
    if (typeof item.id !== 'string' || packageIdProblem(item.id)) throw malformed(`${where}.id must be a package id.`);
    if (typeof item.version !== 'string' || !isExactVersion(item.version)) throw malformed(`${where}.version must be a semver version.`);
    if (typeof item.integrity !== 'string' || !isSha256Integrity(item.integrity)) throw malformed(`${where}.integrity must be a sha256 integrity string.`);
    if (!isJsonObject(item.files)) throw malformed(`${where}.files must be an object.`);
    for (const [path, hash] of Object.entries(item.files)) {
      if (classifyEntryName(path).kind !== 'file') throw malformed(`${where}.files names an unusable path ${printableEntryName(path)}.`);
      if (typeof hash !== 'string' || !isSha256Integrity(hash)) throw malformed(`${where}.files[${JSON.stringify(path)}] must be a sha256 integrity string.`);
    }
    return { id: item.id, version: item.version, integrity: item.integrity, files: item.files as Record<string, string> };
  });

  return {
    format: BUNDLE_FORMAT,
    format_version: BUNDLE_FORMAT_VERSION,
    root: raw.root,
    packages,
    integrity: raw.integrity,
  };
}

function onlyKeys(value: Record<string, unknown>, keys: string[], where: string): void {
  const unknown = Object.keys(value).find((key) => !keys.includes(key));
  if (unknown !== undefined) throw malformed(`${where} has an unknown member ${JSON.stringify(unknown)}.`);
}
