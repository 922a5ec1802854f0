// The embedded servers must not outlive the platform that started them, however it ends: a
// SIGKILL (the OOM killer, `kill -9`, a container runtime's stop timeout) runs no handler of ours.
// On Linux the kernel can do it: a child whose parent-death signal is set (PR_SET_PDEATHSIG) is
// sent that signal the moment its parent dies. util-linux's `setpriv --pdeathsig` sets it and then
// execs the server, so the server keeps the pid we spawned and nothing stands between the two.
import { existsSync } from 'node:fs';
import { platform } from 'node:os';

const SETPRIV_PATHS = ['/usr/bin/setpriv', '/bin/setpriv', '/usr/sbin/setpriv', '/sbin/setpriv'];

export interface BoundCommand {
  command: string;
  args: string[];
  /** false where the binding is not available (not Linux, or no setpriv): the server may outlive a killed platform */
  bound: boolean;
}

let setpriv: string | null | undefined;

/** setpriv, when this host has it. */
export function findSetpriv(): string | null {
  if (setpriv === undefined) setpriv = platform() === 'linux' ? (SETPRIV_PATHS.find((p) => existsSync(p)) ?? null) : null;
  return setpriv;
}

/**
 * `command args`, run so that the kernel sends it `signal` when the spawning thread's process
 * dies. Spawn it from the main thread: the parent-death signal follows the thread that forked.
 */
export function boundToParent(command: string, args: string[], signal: 'SIGINT' | 'SIGTERM'): BoundCommand {
  const tool = findSetpriv();
  if (!tool) return { command, args, bound: false };
  return { command: tool, args: ['--pdeathsig', signal.slice(3), '--', command, ...args], bound: true };
}

/** Why the embedded servers are not bound to the platform's life here, for a start-up warning. */
export function unboundReason(): string {
  return platform() === 'linux'
    ? 'setpriv (util-linux) is not installed'
    : `${platform()} has no parent-death signal`;
}
