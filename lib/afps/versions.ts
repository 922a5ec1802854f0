// Package versions: semver, dist-tags and ranges. Published versions are immutable and
// forward-only; a spec resolves to the exact version, the dist-tag's target or the highest
// non-yanked version a range admits.
import semver from 'semver';

export interface PublishedVersion {
  version: string;
  yanked: boolean;
}

export type VersionResolution = { version: string } | { error: 'version_not_found' | 'version_yanked' };

// A leading "v" or "=" is accepted by semver's parser but is not a version as written in a manifest.
const STARTS_WITH_DIGIT = /^\d/;

/** True for a version exactly as a manifest must write it (`1.2.3`, `1.0.0-beta.1`, `1.0.0+build.5`). */
export function isExactVersion(text: string): boolean {
  return STARTS_WITH_DIGIT.test(text) && semver.valid(text) !== null && !/\s/.test(text);
}

/** True for a semver range a dependency may name (`^1.2.0`, `~1.2`, `>=1 <3`, `1.x`, `*`). */
export function isVersionRange(text: string): boolean {
  return text.trim().length > 0 && semver.validRange(text) !== null;
}

export function resolveVersionSpec(
  spec: string,
  versions: PublishedVersion[],
  distTags: Record<string, string>,
): VersionResolution {
  const trimmed = spec.trim();

  if (isExactVersion(trimmed)) return pick(trimmed, versions);

  if (Object.hasOwn(distTags, trimmed)) return pick(distTags[trimmed], versions);

  // Without a recorded latest tag, latest means the highest stable version still available.
  if (trimmed === 'latest') {
    const stable = versions.filter((v) => !v.yanked && semver.prerelease(v.version) === null);
    const highest = semver.rsort(stable.map((v) => v.version))[0];
    return highest ? { version: highest } : { error: 'version_not_found' };
  }

  if (isVersionRange(trimmed)) {
    const candidates = versions.filter((v) => !v.yanked).map((v) => v.version);
    const best = semver.maxSatisfying(candidates, trimmed);
    return best ? { version: best } : { error: 'version_not_found' };
  }

  return { error: 'version_not_found' };
}

function pick(exact: string, versions: PublishedVersion[]): VersionResolution {
  if (!isExactVersion(exact)) return { error: 'version_not_found' };
  const found = versions.find((v) => isExactVersion(v.version) && semver.eq(v.version, exact));
  if (!found) return { error: 'version_not_found' };
  if (found.yanked) return { error: 'version_yanked' };
  return { version: found.version };
}

/**
 * Whether `newVersion` may be published after `existing` (yanked versions included: a yanked
 * number is never reused). Versions differing only in build metadata count as the same.
 */
export function checkPublishable(newVersion: string, existing: string[]): null | 'version_exists' | 'version_not_higher' {
  if (!isExactVersion(newVersion)) throw new TypeError(`Not a semver version: ${JSON.stringify(newVersion)}`);
  const published = existing.filter(isExactVersion);
  if (published.some((v) => semver.eq(v, newVersion))) return 'version_exists';
  if (published.some((v) => semver.gt(v, newVersion))) return 'version_not_higher';
  return null;
}
