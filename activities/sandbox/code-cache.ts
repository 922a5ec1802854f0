// V8 code caches for the per-run programs: the compiled code of dist/sidecar.cjs and
// dist/agent-runtime.cjs as it stands once a program is loaded and warmed up, written once by a
// throwaway run of the program (bin/cached-program.ts --write) and read by every sandbox after it.
// V8 takes a cache only from the same binary and flags (heap sizes included) for a source of the
// same length, so a cache file is named after the node binary, the flags and the bundle's bytes:
// a rebuilt bundle or a changed ceiling gets a new cache and never runs another one's code.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../lib/log.ts';

export type CachedProgram = 'sidecar' | 'agent-runtime';

const WRITE_TIMEOUT_MS = 30_000;
const made = new Map<string, Promise<void>>();

function cacheFileFor(root: string, node: string, flags: string[], program: CachedProgram): string {
  const hash = createHash('sha256')
    .update(`${node}\0${process.version}\0${flags.join('\0')}\0`)
    .update(readFileSync(path.join(root, 'dist', `${program}.cjs`)))
    .digest('hex')
    .slice(0, 24);
  return path.join(root, 'dist', `${program}.${hash}.cache`);
}

function writeCache(root: string, node: string, flags: string[], program: CachedProgram, cacheFile: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(node, [...flags, path.join(root, 'dist', 'cached-program.cjs'), path.join(root, 'dist', `${program}.cjs`), cacheFile, '--write'], {
      cwd: root, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => { stderr = (stderr + c.toString()).slice(-2000); });
    const timer = setTimeout(() => child.kill('SIGKILL'), WRITE_TIMEOUT_MS);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      child.stdin!.destroy();
      if (code === 0 && existsSync(cacheFile)) resolve();
      else reject(new Error(`exit ${code ?? signal}: ${stderr.trim()}`));
    });
  });
}

/**
 * The argv (after the node binary) that starts `program` with these flags from its code cache,
 * writing the cache first when it does not exist yet. A cache that cannot be written is logged
 * and the program starts without one.
 */
export async function cachedProgramArgv(root: string, node: string, flags: string[], program: CachedProgram, log?: Logger): Promise<string[]> {
  const cacheFile = cacheFileFor(root, node, flags, program);
  if (!existsSync(cacheFile)) {
    let making = made.get(cacheFile);
    if (!making) {
      making = writeCache(root, node, flags, program, cacheFile).catch((err: Error) => {
        log?.warn('a sandbox program code cache could not be written; starting without it', { program, error: err.message });
      });
      made.set(cacheFile, making);
    }
    await making;
  }
  return [...flags, path.join(root, 'dist', 'cached-program.cjs'), path.join(root, 'dist', `${program}.cjs`), cacheFile];
}
