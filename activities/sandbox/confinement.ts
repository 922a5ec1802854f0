// Confinement of the agent runtime with bubblewrap: new user, mount, pid, ipc, uts, cgroup and
// network namespaces; a root filesystem holding only the system's read-only /usr (and its /lib*
// and /bin links), the node binary, the project's dist/ and node_modules read-only, the run's
// workspace read-write at /workspace and the sidecar's socket folder at /run/sidecar.
// No network device but its own loopback: the socket is its only way out.
import { execFile } from 'node:child_process';
import { accessSync, constants, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import path from 'node:path';

export const SANDBOX_WORKSPACE = '/workspace';
export const SANDBOX_IPC_DIR = '/run/sidecar';
export const SIDECAR_SOCKET_NAME = 'sidecar.sock';
export const SANDBOX_PATH_ENV = '/usr/local/bin:/usr/bin:/bin';

const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

export interface ConfinedLayout {
  /** the project root: its dist/ and node_modules are bound read-only */
  root: string;
  /** host folder bound read-write at /workspace */
  workspaceDir: string;
  /** host folder holding the sidecar's socket, bound at /run/sidecar */
  ipcDir: string;
}

/** The bwrap executable on PATH, or undefined. */
export function findBubblewrap(pathEnv = process.env.PATH ?? ''): string | undefined {
  for (const dir of pathEnv.split(':').filter(Boolean)) {
    const candidate = path.join(dir, 'bwrap');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this folder
    }
  }
  return undefined;
}

/** The node binary as seen inside the sandbox (its real path, bound read-only). */
export function sandboxNodePath(): string {
  return realpathSync(process.execPath);
}

function systemBinds(nodePath: string): string[] {
  const args: string[] = [];
  let nodeCovered = false;
  for (const dir of SYSTEM_DIRS) {
    let stat;
    try {
      stat = lstatSync(dir);
    } catch {
      continue;
    }
    if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else if (stat.isDirectory()) {
      args.push('--ro-bind', dir, dir);
      if (nodePath.startsWith(`${dir}/`)) nodeCovered = true;
    }
  }
  if (!nodeCovered) args.push('--ro-bind', nodePath, nodePath);
  return args;
}

/** bwrap arguments that run `command` confined to the layout. */
export function confinedArgv(layout: ConfinedLayout, command: string[]): string[] {
  const project = (name: string) => ['--ro-bind', path.join(layout.root, name), path.join(layout.root, name)];
  return [
    '--unshare-all',
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    ...systemBinds(command[0]),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--tmpfs',
    '/tmp',
    ...project('dist'),
    ...project('node_modules'),
    '--bind',
    layout.workspaceDir,
    SANDBOX_WORKSPACE,
    '--ro-bind',
    layout.ipcDir,
    SANDBOX_IPC_DIR,
    '--chdir',
    SANDBOX_WORKSPACE,
    '--',
    ...command,
  ];
}

/** Runs `node -e 0` confined: bwrap on PATH is not enough where namespaces are refused (some containers). */
export function probeBubblewrap(bwrap: string, layout: ConfinedLayout): Promise<{ ok: true } | { ok: false; reason: string }> {
  return new Promise((resolve) => {
    execFile(
      bwrap,
      confinedArgv(layout, [sandboxNodePath(), '-e', '0']),
      { env: { PATH: SANDBOX_PATH_ENV, HOME: SANDBOX_WORKSPACE }, timeout: 10_000 },
      (err, _stdout, stderr) => resolve(err ? { ok: false, reason: (stderr || err.message).trim().slice(0, 500) } : { ok: true }),
    );
  });
}
