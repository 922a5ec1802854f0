// An AFPS package archive (.afps, a ZIP): manifest.json at the root, validated, plus the
// companion files its type requires (prompt.md for an agent, SKILL.md for a skill).
import { problem } from '../problem.ts';
import { readZip, type ZipLimits } from '../zip/read-zip.ts';
import { parseManifest, type Manifest } from './manifest.ts';
import { parseSkillFrontmatter } from './skill-frontmatter.ts';

export const PACKAGE_MAX_ENTRIES = 2000;
export const PACKAGE_MAX_FILE_BYTES = 50 * 1024 * 1024;
export const PACKAGE_MAX_TOTAL_BYTES = 200 * 1024 * 1024;

export const PACKAGE_ZIP_LIMITS: ZipLimits = {
  maxEntries: PACKAGE_MAX_ENTRIES,
  maxEntryBytes: PACKAGE_MAX_FILE_BYTES,
  maxTotalBytes: PACKAGE_MAX_TOTAL_BYTES,
};

export const MANIFEST_FILE = 'manifest.json';
export const PROMPT_FILE = 'prompt.md';
export const SKILL_FILE = 'SKILL.md';

export interface ReadPackageOptions {
  timeoutCeilingSeconds: number;
  limits?: Partial<ZipLimits>;
  /** whose turn it is in the inflation queue (the tenant) */
  queueKey?: string;
}

export interface PackageContents {
  manifest: Manifest;
  /** every file of the archive, manifest.json included */
  files: Map<string, Buffer>;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

export async function readPackageArchive(bytes: Buffer, opts: ReadPackageOptions): Promise<PackageContents> {
  const files = await readZip(bytes, { ...PACKAGE_ZIP_LIMITS, ...opts.limits }, { queueKey: opts.queueKey });
  return readPackageFiles(files, opts);
}

/** Validates a package already unpacked (an archive's files, a bundle's package, a draft). */
export function readPackageFiles(files: Map<string, Buffer>, opts: { timeoutCeilingSeconds: number }): PackageContents {
  const manifestBytes = files.get(MANIFEST_FILE);
  if (!manifestBytes) {
    const nested = [...files.keys()].find((path) => path.endsWith(`/${MANIFEST_FILE}`));
    throw problem('missing_manifest', {
      detail: nested
        ? `The archive has no manifest.json at its root (found ${nested}; zip the package's contents, not its folder).`
        : 'The archive has no manifest.json at its root.',
    });
  }

  let raw: unknown;
  try {
    raw = JSON.parse(decodeText(manifestBytes, 'invalid_manifest', MANIFEST_FILE).replace(/^\uFEFF/, ''));
  } catch (err) {
    if (err instanceof SyntaxError) {
      throw problem('invalid_manifest', {
        detail: `manifest.json is not valid JSON: ${err.message}`,
        errors: [{ field: 'manifest', code: 'invalid_manifest', message: 'is not valid JSON' }],
      });
    }
    throw err;
  }
  const manifest = parseManifest(raw, opts);

  if (manifest.type === 'agent') {
    const prompt = files.get(PROMPT_FILE);
    if (!prompt) throw problem('missing_content', { detail: 'An agent package needs prompt.md at its root.' });
    if (decodeText(prompt, 'invalid_content', PROMPT_FILE).trim() === '') {
      throw problem('missing_content', { detail: 'prompt.md is empty.' });
    }
  }

  if (manifest.type === 'skill') {
    const skill = files.get(SKILL_FILE);
    if (!skill) throw problem('missing_content', { detail: 'A skill package needs SKILL.md at its root.' });
    parseSkillFrontmatter(decodeText(skill, 'invalid_content', SKILL_FILE));
  }

  return { manifest, files };
}

function decodeText(bytes: Buffer, code: 'invalid_manifest' | 'invalid_content', file: string): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw problem(code, { detail: `${file} is not valid UTF-8.` });
  }
}
