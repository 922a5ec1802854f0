// A V8 startup snapshot of the agent runtime: its heap once dist/agent-runtime.cjs has loaded
// (the model SDK, the tools, the validators), written to a blob that every later agent process
// starts from (`node [flags] --snapshot-blob <blob>`), instead of reading and running a megabyte
// of JavaScript. Each run is still a fresh process in a fresh sandbox: the blob holds what the
// program is before it has seen any run (it was built from our bundle alone, with an environment
// naming nothing but PATH and HOME), and a process started from it shares no memory with another.
// V8 reseeds Math.random and node its random sources when a process starts from a snapshot.
//
// V8 takes a snapshot only under the same binary and flags it was built with (heap sizes
// included: a blob built for one ceiling is refused under another), so a blob is named like a
// code cache (code-cache.ts), after the node binary, the flags and the bundle's bytes, and built
// the first time a sandbox needs that combination. A blob that cannot be built is logged once,
// and that combination's agents start as before, from the bundle and its code cache.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../../lib/log.ts';
import { bundleKeyedFile } from './code-cache.ts';

const BUILD_TIMEOUT_MS = 120_000;
/** the environment the runtime is built and checked in: nothing of the platform's own */
const BUILD_ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/nonexistent', LANG: 'C.UTF-8' };

/** blob file -> its build (undefined once it is known not to build) */
const building = new Map<string, Promise<boolean>>();

function run(node: string, args: string[], input?: string): Promise<{ ok: boolean; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(node, args, { cwd: os.tmpdir(), env: BUILD_ENV, timeout: BUILD_TIMEOUT_MS, maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
      resolve({ ok: !err, stdout: String(stdout), stderr: String(stderr) });
    });
    child.stdin?.end(input ?? '');
  });
}

/** the last lines of a failed build's output, for the log (node's own warnings left out) */
function tail(stderr: string): string {
  return stderr
    .split('\n')
    .filter((l) => l.trim() !== '' && !/^\(node:\d+\) Warning|^It may still work|^To request support|--trace-warnings/.test(l))
    .slice(0, 8)
    .join('\n')
    .slice(0, 1000);
}

async function build(root: string, node: string, flags: string[], blob: string): Promise<void> {
  const tmp = `${blob}.${process.pid}.tmp`;
  try {
    const made = await run(node, [...flags, '--snapshot-blob', tmp, '--build-snapshot', path.join(root, 'dist', 'agent-runtime.cjs')]);
    if (!made.ok || !existsSync(tmp)) throw new Error(`node could not build the snapshot: ${tail(made.stderr) || 'no output'}`);
    // a blob is kept only once a process started from it says it is ready, then ends with its stdin
    const check = await run(node, [...flags, '--snapshot-blob', tmp]);
    const first = check.stdout.split('\n')[0] ?? '';
    let ready: { ready?: unknown; snapshot?: unknown } = {};
    try {
      ready = JSON.parse(first);
    } catch {
      // judged below
    }
    if (!check.ok || ready.ready !== true || ready.snapshot !== true) {
      throw new Error(`a process started from the snapshot did not say it was ready: ${tail(check.stderr) || first.slice(0, 200) || 'no output'}`);
    }
    await rename(tmp, blob);
  } finally {
    await rm(tmp, { force: true });
  }
}

/**
 * The agent runtime's argv (after the node binary) starting it from its startup snapshot for
 * these flags, building the snapshot first when there is none; undefined when it cannot be
 * built (logged once per binary, flags and bundle), and the caller starts the agent as before.
 */
export async function agentSnapshotArgv(root: string, node: string, flags: string[], log?: Logger): Promise<string[] | undefined> {
  let blob: string;
  try {
    blob = bundleKeyedFile(root, node, flags, 'agent-runtime', 'blob');
  } catch (err) {
    log?.warn('the agent runtime starts without a startup snapshot: its bundle cannot be read', { error: (err as Error).message });
    return undefined;
  }
  const argv = [...flags, '--snapshot-blob', blob];
  if (existsSync(blob)) return argv;
  let made = building.get(blob);
  if (!made) {
    made = build(root, node, flags, blob).then(
      () => true,
      (err: Error) => {
        log?.warn('the agent runtime starts without a startup snapshot (it could not be built); from its bundle instead', { flags, error: err.message });
        return false;
      },
    );
    building.set(blob, made);
  }
  if (!(await made)) return undefined;
  if (existsSync(blob)) return argv;
  building.delete(blob); // removed since it was built: built again next time
  return undefined;
}
