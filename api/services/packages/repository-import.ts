// Importing a package from a GitHub repository folder. The submitted URL must be an https URL
// of a repository on github.com (or on the host of GITHUB_API_URL, for GitHub Enterprise):
// https://github.com/<owner>/<repo>[/tree/<ref>/<path>]. The files are read through the REST API
// at GITHUB_API_URL: the repository (default branch, size), the git tree of the ref
// (recursive), then each blob under the path (raw). Every request goes through the egress guard.
import { PACKAGE_MAX_FILE_BYTES } from '../../../lib/afps/index.ts';
import { EgressRefusal, guardedFetch, type PlatformEndpoint } from '../../../lib/egress.ts';
import { problem } from '../../../lib/problem.ts';
import type { PackageScope } from './access.ts';
import { importFiles, type ImportOutcome } from './import.ts';

export const REPOSITORY_LIMITS = {
  /** the repository's size as the host reports it (KiB) */
  maxRepositoryKib: 1024 * 1024,
  maxFiles: 1000,
  maxTotalBytes: 50 * 1024 * 1024,
  maxFileBytes: PACKAGE_MAX_FILE_BYTES,
};

const NAME = /^[A-Za-z0-9_.-]+$/;

export interface RepositoryRef {
  owner: string;
  repo: string;
  ref?: string;
  path: string;
}

function invalidUrl(detail: string) {
  return problem('INVALID_URL', { detail, errors: [{ field: 'url', code: 'invalid_format', message: detail }] });
}

/** Reads owner, repository, and the ref and path a /tree/ URL names. */
export function parseRepositoryUrl(raw: string, apiUrl: string): RepositoryRef {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidUrl('The URL cannot be parsed.');
  }
  if (url.protocol !== 'https:') throw invalidUrl('Only https repository URLs are accepted.');
  if (url.username || url.password || url.port) throw invalidUrl('The URL must not carry credentials or a port.');
  const apiHost = new URL(apiUrl).hostname.toLowerCase();
  const hosts = new Set(['github.com', 'www.github.com', ...(apiHost === 'api.github.com' ? [] : [apiHost])]);
  if (!hosts.has(url.hostname.toLowerCase())) throw invalidUrl(`Repositories are imported from ${[...hosts].join(' or ')}.`);
  const parts = url.pathname.split('/').filter(Boolean).map((p) => decodeURIComponent(p));
  if (parts.length < 2) throw invalidUrl('The URL must name a repository: https://github.com/<owner>/<repo>.');
  const [owner, repoPart, kind, ref, ...rest] = parts;
  const repo = repoPart.replace(/\.git$/, '');
  if (!NAME.test(owner) || !NAME.test(repo)) throw invalidUrl('The owner or repository name is not valid.');
  if (parts.length > 2 && !((kind === 'tree' || kind === 'blob') && ref)) throw invalidUrl('Only repository and /tree/<ref>/<path> URLs are accepted.');
  return { owner, repo, ref, path: rest.join('/') };
}

function normalizePath(path: string): string {
  const clean = path.split('/').filter((p) => p !== '' && p !== '.');
  if (clean.some((p) => p === '..')) throw problem('validation_failed', { detail: 'path must not climb out of the repository.', errors: [{ field: 'path', code: 'invalid_value', message: 'must not contain ..' }] });
  return clean.join('/');
}

interface Fetcher {
  json(path: string): Promise<unknown>;
  raw(path: string): Promise<Buffer>;
}

function hostFetcher(scope: PackageScope, platformEndpoints: PlatformEndpoint[]): Fetcher {
  const base = scope.config.GITHUB_API_URL.replace(/\/+$/, '');
  const egress = { allowInternalHosts: scope.config.EGRESS_ALLOW_INTERNAL_HOSTS, platformEndpoints };
  const headers = { 'user-agent': 'agent-platform-package-import', 'x-github-api-version': '2022-11-28' };

  async function get(path: string, accept: string, failure: 'GITHUB_ERROR' | 'DOWNLOAD_FAILED'): Promise<Response> {
    let res: Response;
    try {
      res = await guardedFetch(`${base}${path}`, { headers: { ...headers, accept }, maxRedirects: 3, timeoutMs: 30_000 }, egress);
    } catch (err) {
      if (err instanceof EgressRefusal) {
        if (err.kind === 'blocked') throw problem('blocked_url', { detail: `The repository host is refused: ${err.message}` });
        if (err.kind === 'invalid_url') throw problem('INVALID_URL', { detail: err.message });
      }
      throw problem(failure, { detail: `The repository host could not be reached: ${(err as Error).message}` });
    }
    if (res.ok) return res;
    await res.body?.cancel().catch(() => {});
    if (res.status === 404) throw problem('NOT_FOUND', { detail: 'The repository, ref or path was not found (or is private).' });
    if (res.status === 429 || (res.status === 403 && res.headers.get('x-ratelimit-remaining') === '0')) {
      const reset = Number(res.headers.get('x-ratelimit-reset'));
      const wait = Number.isFinite(reset) && reset > 0 ? Math.max(1, Math.ceil(reset - Date.now() / 1000)) : Number(res.headers.get('retry-after')) || undefined;
      throw problem('RATE_LIMITED', { detail: 'The repository host refused: its rate limit is reached.', retryAfter: wait });
    }
    throw problem(failure, { detail: `The repository host answered ${res.status}.` });
  }

  return {
    async json(path) {
      const res = await get(path, 'application/vnd.github+json', 'GITHUB_ERROR');
      try {
        return await res.json();
      } catch {
        throw problem('GITHUB_ERROR', { detail: 'The repository host answered with unreadable JSON.' });
      }
    },
    async raw(path) {
      const res = await get(path, 'application/vnd.github.raw', 'DOWNLOAD_FAILED');
      return readCapped(res, REPOSITORY_LIMITS.maxFileBytes);
    },
  };
}

/** A response body, refused past `max` bytes without reading further (the host may lie about sizes). */
async function readCapped(res: Response, max: number): Promise<Buffer> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > max) {
    await res.body?.cancel().catch(() => {});
    throw problem('FILE_TOO_LARGE', { detail: `A file is ${declared} bytes; at most ${max} per file.` });
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.length;
      if (size > max) {
        await res.body?.cancel().catch(() => {});
        throw problem('FILE_TOO_LARGE', { detail: `A file is larger than ${max} bytes.` });
      }
      chunks.push(Buffer.from(chunk));
    }
  } catch (err) {
    if ((err as { code?: string }).code === 'FILE_TOO_LARGE') throw err;
    throw problem('DOWNLOAD_FAILED', { detail: `A file download failed: ${(err as Error).message}` });
  }
  return Buffer.concat(chunks);
}

interface TreeItem {
  path: string;
  type: string;
  sha: string;
  size?: number;
}

/** platformEndpoints: the platform's own host:ports, which the repository host may never be. */
export async function importFromRepository(
  scope: PackageScope,
  body: { url: string; ref?: string; path?: string },
  platformEndpoints: PlatformEndpoint[] = [],
): Promise<ImportOutcome & { source: { owner: string; repo: string; ref: string; path: string } }> {
  const parsed = parseRepositoryUrl(body.url, scope.config.GITHUB_API_URL);
  const folder = normalizePath(body.path ?? parsed.path);
  const host = hostFetcher(scope, platformEndpoints);
  const repoPath = `/repos/${encodeURIComponent(parsed.owner)}/${encodeURIComponent(parsed.repo)}`;

  const info = (await host.json(repoPath)) as { default_branch?: string; size?: number };
  if (typeof info.size === 'number' && info.size > REPOSITORY_LIMITS.maxRepositoryKib) {
    throw problem('REPO_TOO_LARGE', { detail: `The repository is ${info.size} KiB; at most ${REPOSITORY_LIMITS.maxRepositoryKib} KiB are read.` });
  }
  const ref = body.ref ?? parsed.ref ?? info.default_branch ?? 'main';
  const tree = (await host.json(`${repoPath}/git/trees/${encodeURIComponent(ref)}?recursive=1`)) as { tree?: TreeItem[]; truncated?: boolean };
  if (!Array.isArray(tree.tree)) throw problem('GITHUB_ERROR', { detail: 'The repository host answered without a tree.' });
  if (tree.truncated) throw problem('TOO_MANY_FILES', { detail: 'The repository holds too many files to list.' });

  const prefix = folder ? `${folder}/` : '';
  const blobs = tree.tree.filter((item) => item.type === 'blob' && item.path.startsWith(prefix));
  if (blobs.length === 0) throw problem('EMPTY_PATH', { detail: folder ? `No files under ${folder}.` : 'The repository holds no files.' });
  if (blobs.length > REPOSITORY_LIMITS.maxFiles) {
    throw problem('TOO_MANY_FILES', { detail: `${blobs.length} files under the path; at most ${REPOSITORY_LIMITS.maxFiles} are imported.` });
  }
  let total = 0;
  for (const item of blobs) {
    const size = item.size ?? 0;
    if (size > REPOSITORY_LIMITS.maxFileBytes) throw problem('FILE_TOO_LARGE', { detail: `${item.path} is ${size} bytes; at most ${REPOSITORY_LIMITS.maxFileBytes} per file.` });
    total += size;
  }
  if (total > REPOSITORY_LIMITS.maxTotalBytes) throw problem('TOO_LARGE', { detail: `The path holds ${total} bytes; at most ${REPOSITORY_LIMITS.maxTotalBytes} are imported.` });

  const files = new Map<string, Buffer>();
  let fetched = 0;
  for (const item of blobs) {
    const bytes = await host.raw(`${repoPath}/git/blobs/${encodeURIComponent(item.sha)}`);
    fetched += bytes.length;
    if (bytes.length > REPOSITORY_LIMITS.maxFileBytes) throw problem('FILE_TOO_LARGE', { detail: `${item.path} is larger than ${REPOSITORY_LIMITS.maxFileBytes} bytes.` });
    if (fetched > REPOSITORY_LIMITS.maxTotalBytes) throw problem('TOO_LARGE', { detail: `The path holds more than ${REPOSITORY_LIMITS.maxTotalBytes} bytes.` });
    files.set(item.path.slice(prefix.length), bytes);
  }
  const outcome = await importFiles(scope, files);
  return { ...outcome, source: { owner: parsed.owner, repo: parsed.repo, ref, path: folder } };
}
