// Every relative link of README.md and docs/**/*.md resolves: the file (or folder) exists, and a
// #anchor names a heading of the target page (GitHub's slugs) or an explicit id.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

function markdownFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? markdownFiles(p) : e.name.endsWith('.md') ? [p] : [];
  });
}

/** The text outside fenced code blocks and inline code. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]!.trim().toLowerCase().replace(/<[^>]+>/g, '').replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  for (const m of text.matchAll(/<a (?:name|id)="([^"]+)"/g)) out.add(m[1]!);
  return out;
}

const pages = [path.join(root, 'README.md'), ...markdownFiles(path.join(root, 'docs'))];

test('the anchors are GitHub\'s', () => {
  assert.deepEqual([...anchors('## Signing in with OAuth / OpenID Connect\n### Who may do what: the effective-permission rule\n## 5. Upgrading with runs in flight\n## A b\n## A b\n')],
    ['signing-in-with-oauth--openid-connect', 'who-may-do-what-the-effective-permission-rule', '5-upgrading-with-runs-in-flight', 'a-b', 'a-b-1']);
});

test('every relative link and anchor in README.md and docs/ resolves', () => {
  const broken: string[] = [];
  let checked = 0;
  for (const page of pages) {
    const text = fs.readFileSync(page, 'utf8');
    for (const m of prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      checked += 1;
      const [file, anchor] = target.split('#') as [string, string | undefined];
      const resolved = file ? path.resolve(path.dirname(page), decodeURIComponent(file)) : page;
      const where = `${path.relative(root, page)}: ${target}`;
      if (!fs.existsSync(resolved)) {
        broken.push(`${where} (no ${path.relative(root, resolved)})`);
        continue;
      }
      if (anchor && resolved.endsWith('.md') && !anchors(fs.readFileSync(resolved, 'utf8')).has(anchor)) broken.push(`${where} (no heading #${anchor})`);
    }
  }
  assert.ok(checked > 30, `only ${checked} links found`);
  assert.deepEqual(broken, []);
});

test('every page of docs/ is reachable from the README', () => {
  const reached = new Set<string>();
  const queue = [path.join(root, 'README.md')];
  while (queue.length) {
    const page = queue.pop()!;
    if (reached.has(page)) continue;
    reached.add(page);
    for (const m of prose(fs.readFileSync(page, 'utf8')).matchAll(/\]\(([^)#\s]+)/g)) {
      const p = path.resolve(path.dirname(page), m[1]!);
      if (p.endsWith('.md') && fs.existsSync(p)) queue.push(p);
    }
  }
  const unreached = pages.filter((p) => !reached.has(p)).map((p) => path.relative(root, p));
  assert.deepEqual(unreached, []);
});

test('the README stays a front page: at most 150 lines, linking every guide', () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  assert.ok(readme.split('\n').length <= 151, `README.md has ${readme.split('\n').length - 1} lines`);
  for (const guide of ['integrators', 'agent-authors', 'operators', 'support', 'security', 'runbook']) assert.ok(readme.includes(`(docs/${guide}.md)`), `README.md links docs/${guide}.md`);
});
