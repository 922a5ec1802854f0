// The AFPS package library: manifests, archives, versions, integrity and bundles.
export * from './manifest.ts';
export {
  readPackageArchive, readPackageFiles, MANIFEST_FILE, PROMPT_FILE, SKILL_FILE, PACKAGE_ZIP_LIMITS,
  PACKAGE_MAX_ENTRIES, PACKAGE_MAX_FILE_BYTES, PACKAGE_MAX_TOTAL_BYTES, type PackageContents, type ReadPackageOptions,
} from './archive.ts';
export { parseSkillFrontmatter, type SkillFrontmatter } from './skill-frontmatter.ts';
export { sha256Integrity, treeIntegrity, treeListing, isSha256Integrity } from './integrity.ts';
export { resolveVersionSpec, checkPublishable, isExactVersion, isVersionRange, type PublishedVersion, type VersionResolution } from './versions.ts';
export {
  buildBundle, readBundle, BUNDLE_ZIP_LIMITS, ed25519PublicKeyToTrustRootEntry, generateSigningKey, isTrustRootEntry,
  type BundleInput, type BundlePackage, type ReadBundle, type ReadBundleOptions, type SignaturePolicy,
} from './bundle.ts';
export { isPackageId, parsePackageId, packageIdProblem, type PackageId } from './package-id.ts';
export { compileJsonSchema, jsonSchemaProblem } from './json-schema.ts';
export { parseSuccessCriterion, type SuccessCriterion } from './success-criterion.ts';
export { evaluateSuccessCriterion, extractLoginOutput, type LoginResponse } from './login-evaluation.ts';
export { parseAuthorizedUri, matchesAuthorizedUri, renderAuthorizedUri } from './authorized-uri.ts';
