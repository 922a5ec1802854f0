// Package ids: `@scope/name`, both parts lower case, as the manifest's name field holds them.

/** `@scope/name`, for example `@acme/invoice-bot`. */
export type PackageId = string;

export const SCOPE_PATTERN = /^@[a-z0-9][a-z0-9-]*$/;
export const PACKAGE_NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const MAX_PACKAGE_ID_LENGTH = 214;

export interface PackageIdParts {
  scope: string;
  name: string;
}

/** Why `id` is not a package id, or null when it is one. */
export function packageIdProblem(id: string): string | null {
  if (id.length > MAX_PACKAGE_ID_LENGTH) return `must be at most ${MAX_PACKAGE_ID_LENGTH} characters`;
  const slash = id.indexOf('/');
  if (!id.startsWith('@') || slash < 0) return 'must be a scoped name such as @scope/name';
  const scope = id.slice(0, slash);
  const name = id.slice(slash + 1);
  if (!SCOPE_PATTERN.test(scope)) return 'must have a scope of lower-case letters, digits and hyphens (@scope)';
  if (!PACKAGE_NAME_PATTERN.test(name)) return 'must have a name in lower-case kebab case (letters, digits, single hyphens)';
  return null;
}

export function isPackageId(id: string): boolean {
  return packageIdProblem(id) === null;
}

/** `@acme/bot` → { scope: '@acme', name: 'bot' }; null when not a package id. */
export function parsePackageId(id: string): PackageIdParts | null {
  if (!isPackageId(id)) return null;
  const slash = id.indexOf('/');
  return { scope: id.slice(0, slash), name: id.slice(slash + 1) };
}
