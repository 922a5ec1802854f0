// Starts a per-run program (dist/sidecar.cjs, dist/agent-runtime.cjs) from V8's compiled code
// when a cache for it exists, so a sandbox does not parse and compile a megabyte of JavaScript
// each time it starts.
//   node [flags] dist/cached-program.cjs <program.cjs> <cache file>            run it
//   node [flags] dist/cached-program.cjs <program.cjs> <cache file> --write    run it, and write
//     the cache as it exits (SIGTERM included): the code compiled by then, a whole run's worth when
//     the platform's rehearsal drives it (activities/sandbox/rehearsal.ts).
// V8 accepts a cache only from the same V8 version, the same flags and a source of the same length;
// the platform names cache files after the node binary, the flags and the bundle's hash
// (activities/sandbox/code-cache.ts), so a cache is never applied to other code. A missing or
// refused cache only costs the compilation.
import fs from 'node:fs';
import Module from 'node:module';
import path from 'node:path';
import vm from 'node:vm';

const [programArg, cacheArg, mode] = process.argv.slice(2);
if (!programArg || !cacheArg) {
  process.stderr.write('usage: cached-program <program.cjs> <cache file> [--write]\n');
  process.exit(2);
}
const file = path.resolve(programArg);
const cacheFile = path.resolve(cacheArg);
const writing = mode === '--write';

let cachedData: Buffer | undefined;
if (!writing) {
  try {
    cachedData = fs.readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
}
const script = new vm.Script(Module.wrap(fs.readFileSync(file, 'utf8')), { filename: file, cachedData });
const compiled = script.runInThisContext() as (exports: object, require: NodeJS.Require, module: Module, filename: string, dirname: string) => void;

if (writing) {
  process.once('exit', () => {
    const tmp = `${cacheFile}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, script.createCachedData());
    fs.renameSync(tmp, cacheFile);
  });
  process.once('SIGTERM', () => process.exit(0));
}

const mod = new Module(file);
mod.filename = file;
mod.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(path.dirname(file));
process.argv.splice(1, process.argv.length - 1, file);
compiled.call(mod.exports, mod.exports, Module.createRequire(file), mod, file, path.dirname(file));
