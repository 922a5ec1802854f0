// The agent's shell under bubblewrap, nested inside the agent's own sandbox: a new user, pid,
// ipc, uts and network namespace (no device but its own loopback), no capability, and a root
// holding only the read-only system (/usr and its /bin, /lib links), a private /tmp and /dev,
// and the workspace read-write. Neither the sidecar's socket folder nor the project's code is
// in its view, and from its own user namespace it cannot trace or read the agent's memory.
// Used by the agent runtime to run each command, and by the process adapter to probe that
// nesting works on this host before it offers the shell.

/** host (or outer sandbox) folders bound read-only, or recreated as the links they are */
export const SHELL_SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

export interface ShellSystemEntry {
  path: string;
  /** the link's target when the entry is a symbolic link, undefined for a folder */
  link?: string;
}

/**
 * bwrap arguments running `command` with the workspace at the same path, read-write, as the
 * working directory. `system` says what each system entry is where bwrap runs.
 */
export function shellSandboxArgv(workspace: string, system: ShellSystemEntry[], command: string[]): string[] {
  const binds: string[] = [];
  for (const entry of system) {
    if (entry.link !== undefined) binds.push('--symlink', entry.link, entry.path);
    else binds.push('--ro-bind', entry.path, entry.path);
  }
  return [
    '--unshare-user',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-net',
    '--unshare-cgroup-try',
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    ...binds,
    // a nested pid namespace cannot mount a proc of its own under bwrap's masked /proc; the
    // outer one, read-only, shows the agent's processes, but another user namespace cannot
    // read their memory or environment
    '--ro-bind',
    '/proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
    '--bind',
    workspace,
    workspace,
    '--chdir',
    workspace,
    '--',
    ...command,
  ];
}
