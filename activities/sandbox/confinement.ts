// Confinement of the agent runtime with bubblewrap: new user, mount, pid, ipc, uts, cgroup and
// network namespaces; a root filesystem holding only the system's read-only /usr (and its /lib*
// and /bin links), the node binary, the project's dist/ and node_modules read-only, the run's
// workspace read-write at /workspace and the sidecar's socket folder at /run/sidecar.
// No network device but its own loopback: the socket is its only way out.
// The agent runs as an ordinary user of its own user namespace (SANDBOX_UID, mapped to the
// caller), not as its root: bubblewrap, run again from inside, can then nest the shell's own
// sandbox (lib/shell-sandbox.ts), which a capability-less root cannot set up.
import { execFile } from 'node:child_process';
import { accessSync, constants, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { SHELL_SYSTEM_DIRS, shellSandboxArgv, type ShellSystemEntry } from '../../lib/shell-sandbox.ts';

export const SANDBOX_WORKSPACE = '/workspace';
export const SANDBOX_IPC_DIR = '/run/sidecar';
export const SIDECAR_SOCKET_NAME = 'sidecar.sock';
export const SANDBOX_PATH_ENV = '/usr/local/bin:/usr/bin:/bin';
/** the agent's user and group inside its user namespace */
export const SANDBOX_UID = 1000;

const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

export interface ConfinedLayout {
  /** the project root: its dist/ and node_modules are bound read-only */
  root: string;
  /** host folder bound read-write at /workspace */
  workspaceDir: string;
  /** host folder holding the sidecar's socket, bound at /run/sidecar */
  ipcDir: string;
  /** the bwrap executable, bound read-only (where the system folders do not hold it) for the shell */
  bwrap?: string;
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

/** The system folders as they are on this host: a folder, or a link to recreate. */
export function systemEntries(): ShellSystemEntry[] {
  const entries: ShellSystemEntry[] = [];
  for (const dir of SHELL_SYSTEM_DIRS) {
    let stat;
    try {
      stat = lstatSync(dir);
    } catch {
      continue;
    }
    if (stat.isSymbolicLink()) entries.push({ path: dir, link: readlinkSync(dir) });
    else if (stat.isDirectory()) entries.push({ path: dir });
  }
  return entries;
}

function systemBinds(nodePath: string, bwrap?: string): string[] {
  const args: string[] = [];
  let nodeCovered = false;
  let bwrapCovered = bwrap === undefined;
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
      if (bwrap?.startsWith(`${dir}/`)) bwrapCovered = true;
    }
  }
  if (!nodeCovered) args.push('--ro-bind', nodePath, nodePath);
  if (!bwrapCovered) args.push('--ro-bind', bwrap!, bwrap!);
  return args;
}

/** bwrap arguments that run `command` confined to the layout. */
export function confinedArgv(layout: ConfinedLayout, command: string[]): string[] {
  const project = (name: string) => ['--ro-bind', path.join(layout.root, name), path.join(layout.root, name)];
  return [
    '--unshare-all',
    '--unshare-user',
    '--uid',
    String(SANDBOX_UID),
    '--gid',
    String(SANDBOX_UID),
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    ...systemBinds(command[0], layout.bwrap),
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

export type ProbeResult = { ok: true } | { ok: false; reason: string };

/**
 * How long a probe may take. It starts a program, which on a loaded host (a restart with many
 * runs resuming) can take many seconds: a probe that has not answered yet has refused nothing,
 * so it is given far longer than a start takes, and a slow answer is named as such, never taken
 * for namespaces refused.
 */
export const PROBE_TIMEOUT_MS = 120_000;
/** a refusal can be transient (a clone refused for lack of a resource): asked this often */
const PROBE_ATTEMPTS = 3;

function probe(bwrap: string, args: string[], timeoutMs: number): Promise<ProbeResult> {
  const began = Date.now();
  return new Promise((resolve) => {
    execFile(bwrap, args, { env: { PATH: SANDBOX_PATH_ENV, HOME: SANDBOX_WORKSPACE }, timeout: timeoutMs }, (err, _stdout, stderr) => {
      if (!err) return resolve({ ok: true });
      const killed = (err as { killed?: boolean }).killed === true;
      resolve({ ok: false, reason: killed ? `no answer within ${Math.round((Date.now() - began) / 1000)} s` : (stderr || err.message).trim().slice(0, 500) });
    });
  });
}

async function probeAgain(bwrap: string, args: string[], timeoutMs: number): Promise<ProbeResult> {
  let result: ProbeResult = { ok: false, reason: 'not probed' };
  for (let attempt = 1; attempt <= PROBE_ATTEMPTS; attempt++) {
    result = await probe(bwrap, args, timeoutMs);
    if (result.ok || result.reason.startsWith('no answer')) return result;
    if (attempt < PROBE_ATTEMPTS) await new Promise((r) => setTimeout(r, 500 * attempt));
  }
  return result;
}

/**
 * Runs the shell's nested sandbox inside the agent's (`true` as its command): nesting needs
 * user namespaces inside user namespaces, which some hosts refuse.
 */
export function probeNestedShell(bwrap: string, layout: ConfinedLayout, timeoutMs = PROBE_TIMEOUT_MS): Promise<ProbeResult> {
  const shell = [bwrap, ...shellSandboxArgv(SANDBOX_WORKSPACE, systemEntries(), ['/bin/sh', '-c', 'exit 0'])];
  return probeAgain(bwrap, confinedArgv({ ...layout, bwrap }, shell), timeoutMs);
}

/** Runs `node -e 0` confined: bwrap on PATH is not enough where namespaces are refused (some containers). */
export function probeBubblewrap(bwrap: string, layout: ConfinedLayout, timeoutMs = PROBE_TIMEOUT_MS): Promise<ProbeResult> {
  return probeAgain(bwrap, confinedArgv(layout, [sandboxNodePath(), '-e', '0']), timeoutMs);
}
