// Builds the dashboard into dist/web: one minified ES module and one stylesheet under assets/,
// named by their content hash (served as immutable), and index.html naming them. Called by
// bin/start.mjs's bundle step; esbuild erases the generated API types, so the build needs no
// running instance (the type-check against one is test/integration/dashboard-types.test.ts).
import fs from 'node:fs';
import path from 'node:path';

export async function buildWeb(esbuild, root) {
  const out = path.join(root, 'dist', 'web');
  fs.rmSync(out, { recursive: true, force: true });
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: { app: 'web/src/main.tsx' },
    outdir: 'dist/web/assets',
    entryNames: '[name]-[hash]',
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome115', 'firefox115', 'safari16'],
    minify: true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile.outputs).map((f) => path.basename(f));
  const js = outputs.find((f) => f.endsWith('.js'));
  const css = outputs.find((f) => f.endsWith('.css'));
  if (!js || !css) throw new Error('the dashboard build produced no script or no stylesheet');
  const html = fs.readFileSync(path.join(root, 'web', 'index.html'), 'utf8').replace('%APP_JS%', `/assets/${js}`).replace('%APP_CSS%', `/assets/${css}`);
  fs.writeFileSync(path.join(out, 'index.html'), html);
}
