import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { client } from '../support/http.ts';
import { aPackageWorld, manifest, type World } from './packages-harness.ts';

// A stand-in for the repository host's REST API, on 127.0.0.1 only.
const blobs: Record<string, string> = {
  'sha-manifest': manifest('@acme/repo-bot', '1.0.0', 'agent', { description: 'From a repository' }),
  'sha-prompt': 'Prompt from the repository.',
  'sha-readme': '# Tools',
  'sha-guide': 'A guide.',
};
const tree = (items: Array<[string, string, number?]>) => ({ sha: 'root', truncated: false, tree: items.map(([path, sha, size]) => ({ path, type: 'blob', sha, size: size ?? blobs[sha]?.length ?? 10 })) });
const repos: Record<string, { info: unknown; tree?: unknown; status?: number; headers?: Record<string, string> }> = {
  tools: {
    info: { default_branch: 'main', size: 12 },
    tree: tree([['README.md', 'sha-readme'], ['agents/bot/manifest.json', 'sha-manifest'], ['agents/bot/prompt.md', 'sha-prompt'], ['agents/bot/docs/guide.md', 'sha-guide']]),
  },
  limited: { info: {}, status: 403, headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + 30) } },
  broken: { info: {}, status: 502 },
  huge: { info: { default_branch: 'main', size: 5_000_000 } },
  many: { info: { default_branch: 'main', size: 10 }, tree: { ...tree([['a', 'sha-readme']]), truncated: true } },
  heavy: { info: { default_branch: 'main', size: 10 }, tree: tree([['pkg/a.bin', 'sha-a', 30_000_000], ['pkg/b.bin', 'sha-b', 30_000_000]]) },
  fat: { info: { default_branch: 'main', size: 10 }, tree: tree([['pkg/a.bin', 'sha-a', 60 * 1024 * 1024]]) },
  flaky: { info: { default_branch: 'main', size: 10 }, tree: tree([['pkg/manifest.json', 'sha-missing']]) },
};
const requests: string[] = [];
const host = http.createServer((req, res) => {
  requests.push(req.url ?? '');
  const url = new URL(req.url ?? '/', 'http://host');
  const m = /^\/repos\/acme\/([^/]+)(\/git\/(trees|blobs)\/([^/]+))?$/.exec(url.pathname);
  const repo = m ? repos[m[1]] : undefined;
  if (!m || !repo) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}');
  if (repo.status) return void res.writeHead(repo.status, { 'content-type': 'application/json', ...repo.headers }).end('{"message":"no"}');
  if (!m[2]) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(repo.info));
  if (m[3] === 'trees') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(repo.tree));
  const blob = blobs[decodeURIComponent(m[4])];
  if (blob === undefined) return void res.writeHead(500).end('boom');
  assert.equal(req.headers.accept, 'application/vnd.github.raw');
  res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(blob);
});
await new Promise<void>((r) => host.listen(0, '127.0.0.1', () => r()));
const hostUrl = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;

const w = await aPackageWorld({ env: { GITHUB_API_URL: hostUrl, EGRESS_ALLOW_INTERNAL_HOSTS: new URL(hostUrl).host } });
// The same host without the operator's allowance: an internal address is refused.
const guarded = await aPackageWorld({ env: { GITHUB_API_URL: hostUrl } });
after(async () => {
  await w.app.close();
  await guarded.app.close();
  await new Promise<void>((r) => host.close(() => r()));
});

async function importFrom(world: World, body: Record<string, unknown>) {
  return client(world.app.url, { key: await world.freshKey() }).post('/api/packages/import-github', body);
}

test('a repository folder is imported as a package; the same content again is 200', async () => {
  const res = await importFrom(w, { url: 'https://github.com/acme/tools/tree/main/agents/bot' });
  assert.equal(res.status, 201, res.text);
  assert.deepEqual([res.body.packageId, res.body.type, res.body.version], ['@acme/repo-bot', 'agent', '1.0.0']);
  assert.deepEqual(res.body.source, { owner: 'acme', repo: 'tools', ref: 'main', path: 'agents/bot' });
  const files = await w.api.get('/api/packages/@acme/repo-bot/files');
  assert.deepEqual(files.body.data.map((f: any) => f.path), ['docs/guide.md', 'manifest.json', 'prompt.md']);
  const prompt = await w.api.get('/api/packages/@acme/repo-bot/files/content?path=prompt.md');
  assert.equal(prompt.text, 'Prompt from the repository.');
  assert.ok(requests.includes('/repos/acme/tools/git/trees/main?recursive=1'));

  const again = await importFrom(w, { url: 'https://github.com/acme/tools', path: 'agents/bot/', ref: 'main' });
  assert.equal(again.status, 200, again.text);
});

test('URLs other than https repository URLs on the configured host are INVALID_URL', async () => {
  for (const url of ['http://github.com/acme/tools', 'https://gitlab.com/acme/tools', 'https://github.com/acme', 'not a url', 'https://user:pw@github.com/acme/tools', 'https://github.com/acme/tools/issues/1']) {
    const res = await importFrom(w, { url });
    assert.equal(res.status, 400, url);
    assert.equal(res.body.code, 'INVALID_URL', url);
  }
});

test('host answers map to the repository-import codes', async () => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['missing', {}, 'NOT_FOUND'],
    ['limited', {}, 'RATE_LIMITED'],
    ['broken', {}, 'GITHUB_ERROR'],
    ['huge', {}, 'REPO_TOO_LARGE'],
    ['many', {}, 'TOO_MANY_FILES'],
    ['tools', { path: 'nothing/here' }, 'EMPTY_PATH'],
    ['heavy', { path: 'pkg' }, 'TOO_LARGE'],
    ['fat', { path: 'pkg' }, 'FILE_TOO_LARGE'],
    ['flaky', { path: 'pkg' }, 'DOWNLOAD_FAILED'],
  ];
  for (const [repo, extra, code] of cases) {
    const res = await importFrom(w, { url: `https://github.com/acme/${repo}`, ...extra });
    assert.equal(res.status, 400, `${repo}: ${res.text}`);
    assert.equal(res.body.code, code, repo);
  }
});

test('a repository host at an internal address is blocked_url unless the operator allows it', async () => {
  const before = requests.length;
  const res = await importFrom(guarded, { url: 'https://github.com/acme/tools' });
  assert.equal(res.status, 400, res.text);
  assert.equal(res.body.code, 'blocked_url');
  assert.equal(requests.length, before, 'the host was never contacted');
});
