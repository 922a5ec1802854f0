#!/usr/bin/env node
// The command-line client (cli/main.ts) under plain node: `npx agent-platform ...` in the
// repository, or `agent-platform ...` once the package is installed globally. It runs from one
// bundle, dist/cli.mjs, rebuilt by esbuild when a source is newer (a third of the start time of
// compiling TypeScript on the fly); where dist/ cannot be written, tsx compiles the sources.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bundle = path.join(root, 'dist', 'cli.mjs');
const SOURCES = [path.join(root, 'cli'), path.join(root, 'sdk', 'src', 'core.ts')];

function newestSource() {
  let newest = 0;
  const walk = (p) => {
    const stat = fs.statSync(p);
    if (stat.isDirectory()) for (const e of fs.readdirSync(p)) walk(path.join(p, e));
    else if (p.endsWith('.ts')) newest = Math.max(newest, stat.mtimeMs);
  };
  for (const s of SOURCES) if (fs.existsSync(s)) walk(s);
  return newest;
}

async function ensureCliBundle() {
  const builtAt = fs.existsSync(bundle) ? fs.statSync(bundle).mtimeMs : 0;
  if (builtAt > newestSource()) return true;
  const tmp = `${bundle}.${process.pid}.tmp`;
  try {
    const esbuild = await import('esbuild');
    fs.mkdirSync(path.dirname(bundle), { recursive: true });
    // built aside and renamed: two commands started together never read half a bundle
    await esbuild.build({
      absWorkingDir: root, entryPoints: ['cli/main.ts'], outfile: tmp, bundle: true, platform: 'node', format: 'esm',
      target: 'node20', logLevel: 'warning', banner: { js: '// built from cli/ by bin/agent-platform.mjs' },
    });
    fs.renameSync(tmp, bundle);
    return true;
  } catch {
    fs.rmSync(tmp, { force: true });
    return false;
  }
}

if (await ensureCliBundle()) {
  await import(pathToFileURL(bundle).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../cli/main.ts');
}
