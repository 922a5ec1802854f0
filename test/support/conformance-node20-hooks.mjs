// Module hook for conformance-node20.mjs: in the conformance bundle only, the fs.globSync import
// becomes a small stand-in covering the one pattern shape the bundle uses (`**/<file name>`).
import fs from 'node:fs';

export async function load(url, context, nextLoad) {
  const out = await nextLoad(url, context);
  if (typeof fs.globSync === 'function' || !url.includes('/@modelcontextprotocol/conformance/dist/index.js')) return out;
  const src = String(out.source).replace(/^#!.*\n/, '').replace('globSync as o,', '');
  const shim = `import * as __fs from 'node:fs'; import * as __path from 'node:path';
const o = (pattern, opts = {}) => { const m = /^\\*\\*\\/([^*?/]+)$/.exec(pattern); if (!m) throw new Error('unsupported glob ' + pattern);
  return __fs.readdirSync(opts.cwd ?? process.cwd(), { recursive: true }).map(String).filter((p) => __path.basename(p) === m[1]); };
`;
  return { ...out, source: shim + src, format: 'module' };
}
