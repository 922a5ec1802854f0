// V8 code caches for the per-run programs: the compiled code of dist/sidecar.cjs and
// dist/agent-runtime.cjs as it stands at the end of a whole run, written once by a rehearsal run
// of the pair (rehearsal.ts, each program started by bin/cached-program.ts --write) and read by
// every sandbox after it.
// V8 takes a cache only from the same binary and flags (heap sizes included) for a source of the
// same length, so a cache file is named after the node binary, the flags and the bundle's bytes:
// a rebuilt bundle or a changed ceiling gets a new cache and never runs another one's code.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../lib/log.ts';
import { rehearsePair } from './rehearsal.ts';
import { agentSnapshotArgv } from './startup-snapshot.ts';

export type CachedProgram = 'sidecar' | 'agent-runtime';

const made = new Map<string, Promise<void>>();
/** cache file names already worked out, by binary, flags and the bundle's identity on disk */
const named = new Map<string, string>();

/**
 * A file in dist/ that belongs to one bundle as run by one node binary with one set of flags:
 * `<program>.<hash>.<extension>`, the hash taken over all three.
 */
export function bundleKeyedFile(root: string, node: string, flags: string[], program: CachedProgram, extension: string): string {
  const bundle = path.join(root, 'dist', `${program}.cjs`);
  // hashing a megabyte per sandbox is not needed while the bundle file stays the same one
  const { mtimeMs, size, ino } = statSync(bundle);
  const key = `${extension}\0${node}\0${flags.join('\0')}\0${bundle}\0${mtimeMs}\0${size}\0${ino}`;
  let file = named.get(key);
  if (!file) {
    const hash = createHash('sha256')
      .update(`${node}\0${process.version}\0${flags.join('\0')}\0`)
      .update(readFileSync(bundle))
      .digest('hex')
      .slice(0, 24);
    file = path.join(root, 'dist', `${program}.${hash}.${extension}`);
    named.set(key, file);
  }
  return file;
}

function programArgv(root: string, flags: string[], program: CachedProgram, cacheFile: string): string[] {
  return [...flags, path.join(root, 'dist', 'cached-program.cjs'), path.join(root, 'dist', `${program}.cjs`), cacheFile];
}

export interface PairFlags {
  sidecar: string[];
  agent: string[];
}

/**
 * The argv (after the node binary) of each program of a pair: the agent runtime from its startup
 * snapshot (startup-snapshot.ts) where one can be built for its flags, else like the sidecar from
 * its code cache; the caches are written first, by one rehearsal run, when either is missing.
 * Caches that cannot be written are logged and the programs start without them.
 */
export async function cachedPairArgv(root: string, node: string, flags: PairFlags, log?: Logger): Promise<{ sidecar: string[]; agent: string[] }> {
  const [argv, snapshot] = await Promise.all([codeCachedPairArgv(root, node, flags, log), agentSnapshotArgv(root, node, flags.agent, log)]);
  return snapshot ? { ...argv, agent: snapshot } : argv;
}

async function codeCachedPairArgv(root: string, node: string, flags: PairFlags, log?: Logger): Promise<{ sidecar: string[]; agent: string[] }> {
  const sidecarCache = bundleKeyedFile(root, node, flags.sidecar, 'sidecar', 'cache');
  const agentCache = bundleKeyedFile(root, node, flags.agent, 'agent-runtime', 'cache');
  const argv = {
    sidecar: programArgv(root, flags.sidecar, 'sidecar', sidecarCache),
    agent: programArgv(root, flags.agent, 'agent-runtime', agentCache),
  };
  if (existsSync(sidecarCache) && existsSync(agentCache)) return argv;
  const key = `${sidecarCache}\0${agentCache}`;
  let making = made.get(key);
  if (!making) {
    making = rehearsePair(node, { sidecar: [...argv.sidecar, '--write'], agent: [...argv.agent, '--write'] })
      .then(() => {
        if (!existsSync(sidecarCache) || !existsSync(agentCache)) throw new Error('the rehearsal ended without writing both caches');
      })
      .catch((err: Error) => {
        log?.warn('sandbox program code caches could not be written; starting without them', { error: err.message });
      });
    made.set(key, making);
  }
  await making;
  return argv;
}
