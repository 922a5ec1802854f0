// Runs a program of the platform from its bundle in dist/, rebuilding the bundle first when a
// source file is newer. Bundling makes a start much faster than compiling TypeScript on the fly.
// The platform bundles our own code (its dependencies stay in node_modules: some locate binaries
// and files of their own). The two per-run programs, started for every run, bundle their
// dependencies too, minified: one file to read and compile instead of hundreds of modules, which
// halves the CPU a sandbox costs to start.
//   node bin/start.mjs [platform|sidecar|agent-runtime|mcp-bridge]
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const ENTRIES = {
  platform: 'bin/platform.ts',
  sidecar: 'sidecar/main.ts',
  'agent-runtime': 'agent-runtime/main.ts',
  // a local integration's container runs it beside the integration's MCP server (docker backend)
  'mcp-bridge': 'bin/mcp-bridge.ts',
};
/** programs for operators, bundled beside the platform (node dist/<name>.js) */
const TOOLS = {
  'remove-worker-data': 'bin/remove-worker-data.ts',
};
// the dashboard's sources (web/build.mjs builds them into dist/web); absent where only dist/ is shipped
const WEB_SOURCES = { paths: ['web/src', 'web/index.html', 'web/build.mjs', 'sdk/src/core.ts'], extensions: ['.ts', '.tsx', '.css', '.html', '.mjs'] };
const SOURCE_DIRS = ['lib', 'db', 'api', 'workflows', 'activities', 'sidecar', 'agent-runtime', 'restate', 'bin'];

function newestSourceMtime() {
  let newest = 0;
  const walk = (p, extensions) => {
    const stat = fs.statSync(p);
    if (!stat.isDirectory()) {
      if (extensions.some((x) => p.endsWith(x))) newest = Math.max(newest, stat.mtimeMs);
      return;
    }
    for (const e of fs.readdirSync(p)) walk(path.join(p, e), extensions);
  };
  for (const d of SOURCE_DIRS) if (fs.existsSync(path.join(root, d))) walk(path.join(root, d), ['.ts']);
  // the dashboard (web/), built into dist/web
  for (const d of WEB_SOURCES.paths) if (fs.existsSync(path.join(root, d))) walk(path.join(root, d), WEB_SOURCES.extensions);
  return newest;
}

export async function ensureBundle() {
  const stamp = path.join(root, 'dist', '.built');
  const builtAt = fs.existsSync(stamp) ? fs.statSync(stamp).mtimeMs : 0;
  if (builtAt > newestSourceMtime()) return;
  const esbuild = await import('esbuild');
  // code caches and startup snapshots belong to the bundles they were made from
  // (activities/sandbox/code-cache.ts, startup-snapshot.ts)
  const dist = path.join(root, 'dist');
  if (fs.existsSync(dist)) for (const f of fs.readdirSync(dist)) if (f.endsWith('.cache') || f.endsWith('.blob')) fs.rmSync(path.join(dist, f), { force: true });
  const common = { absWorkingDir: root, outdir: 'dist', bundle: true, platform: 'node', target: 'node20', sourcemap: 'linked', logLevel: 'warning' };
  const { platform, ...sandboxPrograms } = ENTRIES;
  const { buildWeb } = await import('../web/build.mjs');
  await Promise.all([
    esbuild.build({ ...common, format: 'esm', entryPoints: { platform, ...TOOLS }, packages: 'external' }),
    // CommonJS, so bin/cached-program.ts can compile them through vm.Script with V8's code cache
    esbuild.build({
      ...common,
      format: 'cjs',
      outExtension: { '.js': '.cjs' },
      entryPoints: { ...sandboxPrograms, 'cached-program': 'bin/cached-program.ts' },
      minify: true,
    }),
    buildWeb(esbuild, root),
  ]);
  fs.writeFileSync(stamp, new Date().toISOString());
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const name = process.argv[2] ?? 'platform';
  if (!ENTRIES[name]) {
    process.stderr.write(`unknown program ${name}; one of ${Object.keys(ENTRIES).join(', ')}\n`);
    process.exit(2);
  }
  await ensureBundle();
  if (name === 'platform') await import(pathToFileURL(path.join(root, 'dist', 'platform.js')).href);
  else createRequire(import.meta.url)(path.join(root, 'dist', `${name}.cjs`));
}
