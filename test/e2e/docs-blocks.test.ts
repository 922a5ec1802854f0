// Every command of the documentation runs: the fenced ```sh and ```bash blocks of README.md and
// docs/**/*.md, page by page, in the order written, against ONE started platform and the scripted
// model. The rules (README.md, "Documentation"): a `sh`/`bash` block runs as written; `sh norun`
// marks a command not run here (it starts the platform or the whole suite, or needs docker, a
// browser or a real provider; each of those has a test of its own); `text`, `json`, `yaml` are
// output, documents and configuration. Only the addresses change: `127.0.0.1:3000`, `127.0.0.1:11435`
// and `.data/` become this platform's, model's and data folder's.
//
// docs/integrators.md goes first: its walkthrough claims the unclaimed instance (it must print the
// echo), then its "A shell for the guides" block signs in and sets B, JAR, ORG, SPACE, KEY and RUN;
// every other page runs after that block, in a bash of its own. A failing command stops its page
// (set -e, and `ask` stops at an answer other than 2xx) and fails the test with the page's output.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { namedPort, startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

export interface DocBlock { page: string; line: number; info: string; code: string; runs: boolean }

/** The fenced blocks of a page whose language is sh or bash, with whether they run. */
export function shellBlocks(page: string): DocBlock[] {
  const lines = fs.readFileSync(path.join(root, page), 'utf8').split('\n');
  const out: DocBlock[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    const open = /^```(\S*)(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith('```'));
    assert.ok(end > i, `${page}:${i + 1}: a fence is not closed`);
    const lang = open[1]!;
    const rest = open[2]!.trim();
    if (lang === 'sh' || lang === 'bash' || lang === 'shell') {
      assert.ok(rest === '' || rest === 'norun', `${page}:${i + 1}: "${lines[i]}": a shell block is \`\`\`sh, \`\`\`bash or \`\`\`sh norun`);
      out.push({ page, line: i + 1, info: lines[i]!.slice(3), code: lines.slice(i + 1, end).join('\n'), runs: rest === '' });
    }
    i = end;
  }
  return out;
}

function markdownPages(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const p = path.posix.join(dir, e.name);
    return e.isDirectory() ? markdownPages(p) : e.name.endsWith('.md') ? [p] : [];
  }).sort();
}

const FIRST = 'docs/integrators.md';
const pages = [FIRST, 'README.md', ...markdownPages('docs').filter((p) => p !== FIRST)];

let platform: PlatformProcess;
let model: FakeModel;
let modelPort: number;
let tmp: string;

before(async () => {
  const port = await namedPort();
  modelPort = port;
  model = await startFakeModel({ port });
  // No configured token: the walkthrough reads the one the platform generated, as a newcomer's does.
  platform = await startPlatformProcess({ env: { BOOTSTRAP_TOKEN: '', EGRESS_ALLOW_INTERNAL_HOSTS: `127.0.0.1:${port}`, SANDBOX_WARM_POOL: '1' } });
  tmp = fs.mkdtempSync(path.join(platform.dataDir, 'docs-'));
});
after(async () => {
  await model?.close();
  await platform?.stop();
});

/** The block as written, pointed at this platform, model and data folder. */
function localised(code: string): string {
  return code
    .replaceAll('http://127.0.0.1:3000', platform.url)
    .replaceAll('127.0.0.1:11435', `127.0.0.1:${modelPort}`)
    .replaceAll('./.data/', `${platform.dataDir}/`)
    .replaceAll('.data/', `${platform.dataDir}/`);
}

async function runPage(page: string, script: string): Promise<{ code: number | null; out: string }> {
  fs.writeFileSync(path.join(tmp, `${page.replaceAll('/', '_')}.sh`), script);
  const child = spawn('bash', ['-c', `cd '${root}'\nset -e\n${script}`], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', TMPDIR: tmp },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  return { code, out };
}

const blocksOf = new Map(pages.map((p) => [p, shellBlocks(p)]));
const setup = () => {
  const text = fs.readFileSync(path.join(root, FIRST), 'utf8');
  const at = text.indexOf('\n## A shell for the guides\n');
  assert.ok(at > 0, `${FIRST} has "A shell for the guides"`);
  const line = text.slice(0, at).split('\n').length + 1;
  const block = blocksOf.get(FIRST)!.find((b) => b.line > line && b.runs);
  assert.ok(block, 'the shell block of the guides');
  return block;
};

test('the guides\' shell helpers are the walkthrough\'s, line for line', () => {
  const walkthrough = blocksOf.get(FIRST)!.find((b) => b.code.includes('/api/auth/bootstrap/redeem'));
  assert.ok(walkthrough);
  const helpers = (s: string) => s.split('\n').filter((l) => /^(ask|field)\(\) |^# (ask|field) /.test(l));
  const kept = helpers(fs.readFileSync(path.join(root, 'docs/shell-helpers.sh'), 'utf8'));
  assert.equal(kept.length, 4);
  assert.deepEqual(kept, helpers(walkthrough.code));
});

/** Where the guides' shell leaves its variables for the other pages (bash's own `declare -p`). */
const SHELL_STATE = '"$TMPDIR/guides-shell.env"';

test('every page\'s commands run in order against one started platform', async () => {
  const shell = setup();
  const before = fs.readdirSync(root).sort();
  const summary: string[] = [];
  for (const page of pages) {
    const blocks = blocksOf.get(page)!;
    const running = blocks.filter((b) => b.runs);
    summary.push(`${page}: ${running.length} run, ${blocks.length - running.length} norun`);
    if (!running.length) continue;
    const own = page === FIRST;
    // The first page sets the guides' shell up itself; the others start from its variables.
    const prelude = own ? '' : `. docs/shell-helpers.sh\n. ${SHELL_STATE}\n`;
    const parts = running.map((b) => `echo; echo "@@block ${b.page}:${b.line} $(date +%s%N)"\n${localised(b.code)}${b === shell ? `\ndeclare -p B JAR ORG SPACE KEY RUN > ${SHELL_STATE}` : ''}`);
    const { code, out } = await runPage(page, `${prelude}${parts.join('\n')}\necho; echo "@@block end $(date +%s%N)"`);
    assert.equal(code, 0, `${page}: a command failed\n${out.slice(-6000)}\n--- platform ---\n${platform.output().slice(-3000)}`);
    const marks = [...out.matchAll(/^@@block (\S+) (\d+)$/gm)].map((m) => ({ at: m[1]!, ns: Number(m[2]) }));
    for (let i = 0; i + 1 < marks.length; i += 1) summary.push(`  ${marks[i]!.at}: ${((marks[i + 1]!.ns - marks[i]!.ns) / 1e9).toFixed(1)} s`);
    if (own) assert.match(out, /"status":"success".*"result":\{"output":\{"echo":"hello"\}/, 'the walkthrough ends with the echo');
  }
  console.log(summary.join('\n'));
  assert.ok(model.requests.length > 0, 'the runs asked the scripted model');
  assert.deepEqual(fs.readdirSync(root).sort(), before, 'nothing is left in the repository folder');
});
