// .afps-bundle: a root agent and its resolved dependencies in one ZIP, with an integrity hash
// per file, per package and overall, optionally signed with Ed25519. docs/bundle-format.md is
// the format's description.
//
// Reading: anything that does not match its hash, and any file missing from or absent in the
// index, is invalid_bundle (400) with a detail naming the integrity fault. The signature is
// judged by AFPS_SIGNATURE_POLICY: off ignores it, warn accepts with a warning, required refuses
// with bundle_signature_invalid (422) unless a trust-root key signed it. Building from stored
// packages that do not form a bundle is bundle_invalid (422).
import type { KeyObject } from 'node:crypto';
import { problem } from '../problem.ts';
import { classifyEntryName, compareEntryNames, printableEntryName } from '../zip/entry-name.ts';
import { readZip, type ZipLimits } from '../zip/read-zip.ts';
import { writeZip } from '../zip/write-zip.ts';
import {
  BUNDLE_FORMAT, BUNDLE_FORMAT_VERSION, INDEX_FILE, SIGNATURE_FILE, comparePackages, overallIntegrity,
  packageKey, packagePrefix, parseBundleIndex, type BundleIndex,
} from './bundle-index.ts';
import { checkBundleSignature, signBundleIntegrity } from './bundle-signature.ts';
import { PACKAGE_MAX_TOTAL_BYTES } from './archive.ts';
import { isJsonObject } from './field-reader.ts';
import { sha256Integrity, treeIntegrity } from './integrity.ts';
import { packageIdProblem, type PackageId } from './package-id.ts';
import { isExactVersion } from './versions.ts';

export { ed25519PublicKeyToTrustRootEntry, generateSigningKey, isTrustRootEntry } from './bundle-signature.ts';

export const BUNDLE_ZIP_LIMITS: ZipLimits = {
  maxEntries: 20_000,
  maxEntryBytes: 50 * 1024 * 1024,
  maxTotalBytes: 500 * 1024 * 1024,
};

export type SignaturePolicy = 'off' | 'warn' | 'required';

export interface BundlePackage {
  id: PackageId;
  version: string;
  files: Map<string, Buffer>;
}

export interface BundleInput {
  root: PackageId;
  packages: BundlePackage[];
}

export interface ReadBundleOptions {
  policy: SignaturePolicy;
  /** AFPS_TRUST_ROOT: base64 raw Ed25519 public keys; entries that are not one are ignored */
  trustRoot: readonly string[];
  limits?: Partial<ZipLimits>;
  /** what one package of the bundle may inflate to; default PACKAGE_MAX_TOTAL_BYTES */
  maxPackageBytes?: number;
  /** whose turn it is in the inflation queue (the tenant) */
  queueKey?: string;
}

export interface ReadBundle {
  root: PackageId;
  /** in index order (package key order); the root is among them */
  packages: Array<BundlePackage & { integrity: string }>;
  /** the overall integrity */
  integrity: string;
  /** a signature is present and verifies over the overall integrity */
  signed: boolean;
  /** the signing key is in the trust root */
  trusted: boolean;
  keyId?: string;
  warnings: string[];
}

export function buildBundle(input: BundleInput, signer?: { privateKey: KeyObject }): Buffer {
  const fail = (detail: string) => problem('bundle_invalid', { detail });
  const seen = new Set<string>();
  for (const pkg of input.packages) {
    if (packageIdProblem(pkg.id)) throw fail(`${JSON.stringify(pkg.id)} is not a package id.`);
    if (!isExactVersion(pkg.version)) throw fail(`${packageKey(pkg)} does not have a semver version.`);
    if (seen.has(packageKey(pkg))) throw fail(`${packageKey(pkg)} appears twice.`);
    seen.add(packageKey(pkg));
    for (const path of pkg.files.keys()) {
      if (classifyEntryName(path).kind !== 'file') throw fail(`${packageKey(pkg)} has an unusable file path ${printableEntryName(path)}.`);
    }
  }
  const problemText = rootProblem(input.root, input.packages) ?? input.packages.map(manifestProblem).find(Boolean);
  if (problemText) throw fail(problemText);

  const packages = [...input.packages].sort(comparePackages).map((pkg) => ({
    id: pkg.id,
    version: pkg.version,
    integrity: treeIntegrity(pkg.files),
    files: Object.fromEntries([...pkg.files.keys()].sort(compareEntryNames).map((path) => [path, sha256Integrity(pkg.files.get(path)!)])),
  }));
  const index: BundleIndex = {
    format: BUNDLE_FORMAT,
    format_version: BUNDLE_FORMAT_VERSION,
    root: input.root,
    packages,
    integrity: overallIntegrity(input.root, packages),
  };

  const entries = new Map<string, Buffer>();
  entries.set(INDEX_FILE, Buffer.from(`${JSON.stringify(index, null, 2)}\n`));
  if (signer) {
    const signature = signBundleIntegrity(index.integrity, signer.privateKey);
    entries.set(SIGNATURE_FILE, Buffer.from(`${JSON.stringify(signature, null, 2)}\n`));
  }
  for (const pkg of input.packages) {
    for (const [path, content] of pkg.files) entries.set(packagePrefix(pkg.id, pkg.version) + path, content);
  }
  return writeZip(entries);
}

export async function readBundle(bytes: Buffer, opts: ReadBundleOptions): Promise<ReadBundle> {
  // packages/@scope/name/version/...: the first four segments name the package an entry belongs to
  const group = { depth: 4, maxBytes: opts.maxPackageBytes ?? PACKAGE_MAX_TOTAL_BYTES, setting: 'PACKAGE_MAX_INFLATED_BYTES' };
  const entries = await readZip(bytes, { ...BUNDLE_ZIP_LIMITS, group, ...opts.limits }, { queueKey: opts.queueKey });
  const index = parseBundleIndex(entries.get(INDEX_FILE));
  const integrityFault = (detail: string) => problem('invalid_bundle', { detail: `Bundle integrity check failed: ${detail}` });

  const claimed = new Set<string>([INDEX_FILE, SIGNATURE_FILE]);
  const seen = new Set<string>();
  const packages: ReadBundle['packages'] = [];
  for (const entry of index.packages) {
    const key = packageKey(entry);
    if (seen.has(key)) throw problem('invalid_bundle', { detail: `bundle.json lists ${key} twice.` });
    seen.add(key);

    const prefix = packagePrefix(entry.id, entry.version);
    const files = new Map<string, Buffer>();
    for (const [path, expected] of Object.entries(entry.files)) {
      const content = entries.get(prefix + path);
      if (!content) throw integrityFault(`${key} lacks its file ${printableEntryName(path)}.`);
      if (sha256Integrity(content) !== expected) throw integrityFault(`file ${printableEntryName(path)} of ${key} does not match its hash.`);
      files.set(path, content);
      claimed.add(prefix + path);
    }
    const integrity = treeIntegrity(files);
    if (integrity !== entry.integrity) throw integrityFault(`${key} does not match its package hash.`);
    packages.push({ id: entry.id, version: entry.version, files, integrity });
  }

  const extra = [...entries.keys()].find((name) => !claimed.has(name));
  if (extra !== undefined) throw integrityFault(`${printableEntryName(extra)} is not listed in bundle.json.`);
  const computed = overallIntegrity(index.root, index.packages);
  if (computed !== index.integrity) throw integrityFault('the bundle does not match its overall hash.');

  const contentProblem = rootProblem(index.root, packages) ?? packages.map(manifestProblem).find(Boolean);
  if (contentProblem) throw problem('invalid_bundle', { detail: contentProblem });

  const check = checkBundleSignature(entries.get(SIGNATURE_FILE), computed, opts.trustRoot);
  const signed = check.state === 'trusted' || check.state === 'untrusted';
  const trusted = check.state === 'trusted';
  const warnings: string[] = [];
  if (!trusted && opts.policy !== 'off') {
    const why = signatureFault(check);
    if (opts.policy === 'required') throw problem('bundle_signature_invalid', { detail: `AFPS_SIGNATURE_POLICY is required: ${why}.` });
    warnings.push(`Bundle accepted under AFPS_SIGNATURE_POLICY=warn: ${why}.`);
  }

  return {
    root: index.root,
    packages,
    integrity: computed,
    signed,
    trusted,
    ...('keyId' in check ? { keyId: check.keyId } : {}),
    warnings,
  };
}

function signatureFault(check: ReturnType<typeof checkBundleSignature>): string {
  switch (check.state) {
    case 'unsigned': return 'the bundle is not signed';
    case 'malformed': return check.reason;
    case 'bad-signature': return `the signature by key ${check.keyId} does not verify`;
    case 'untrusted': return `key ${check.keyId} is not in AFPS_TRUST_ROOT`;
    case 'trusted': return 'the signature is trusted';
  }
}

/** The root must be one package of the bundle, and an agent. */
function rootProblem(root: string, packages: Array<{ id: string; files: Map<string, Buffer> }>): string | undefined {
  const matching = packages.filter((pkg) => pkg.id === root);
  if (matching.length !== 1) return `The root ${root} must be exactly one package of the bundle.`;
  const manifest = readManifestJson(matching[0].files);
  if (manifest && manifest.type !== 'agent') return `The root ${root} is not an agent.`;
  return undefined;
}

/** Each package's manifest.json must name the package and version the bundle files it under. */
function manifestProblem(pkg: { id: string; version: string; files: Map<string, Buffer> }): string | undefined {
  const manifest = readManifestJson(pkg.files);
  if (!manifest) return `${packageKey(pkg)} has no readable manifest.json.`;
  if (manifest.name !== pkg.id || manifest.version !== pkg.version) {
    return `${packageKey(pkg)} holds the manifest of ${String(manifest.name)}@${String(manifest.version)}.`;
  }
  return undefined;
}

function readManifestJson(files: Map<string, Buffer>): Record<string, unknown> | undefined {
  const bytes = files.get('manifest.json');
  if (!bytes) return undefined;
  try {
    const raw: unknown = JSON.parse(bytes.toString('utf8').replace(/^\uFEFF/, ''));
    return isJsonObject(raw) ? raw : undefined;
  } catch {
    return undefined;
  }
}
