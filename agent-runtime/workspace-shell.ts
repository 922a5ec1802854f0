// The agent's shell tool: one command at a time with the workspace as its working directory, in a
// nested bubblewrap sandbox (or, where the operator allowed it, unconfined), in its own process
// group so a timeout or the agent's end stops whatever it started; output capped.
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { shellSandboxArgv, SHELL_SYSTEM_DIRS, type ShellSystemEntry } from '../lib/shell-sandbox.ts';

/** How the launch says commands run: in a nested bubblewrap sandbox, directly (unsafe), or not at all. */
export type ShellMode = { kind: 'bubblewrap'; bwrap: string } | { kind: 'unconfined' } | null;

export const DEFAULT_SHELL_TIMEOUT_SECONDS = 60;
export const MAX_SHELL_TIMEOUT_SECONDS = 600;
export const MAX_SHELL_OUTPUT_BYTES = 32 * 1024;
const SHELL_PATH = '/usr/local/bin:/usr/bin:/bin';

/** The system folders as this process sees them (inside the agent's sandbox, its own view). */
function systemView(): ShellSystemEntry[] {
  const entries: ShellSystemEntry[] = [];
  for (const dir of SHELL_SYSTEM_DIRS) {
    try {
      const stat = lstatSync(dir);
      if (stat.isSymbolicLink()) entries.push({ path: dir, link: readlinkSync(dir) });
      else if (stat.isDirectory()) entries.push({ path: dir });
    } catch {
      // not on this system
    }
  }
  return entries;
}

// Process groups of the commands run so far. Under bubblewrap a command's sandbox dies with it;
// unconfined, what a command left running in the background is ended when the agent ends.
const commandGroups = new Set<number>();
let endHooked = false;
function endCommandGroups(): void {
  for (const pgid of commandGroups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  commandGroups.clear();
}
function hookAgentEnd(): void {
  if (endHooked) return;
  endHooked = true;
  process.once('exit', endCommandGroups);
  // the adapter stops an agent with SIGTERM: end its commands too, then exit as node would
  process.once('SIGTERM', () => {
    endCommandGroups();
    process.exit(143);
  });
}

export interface ShellResult {
  exitCode: number | null;
  timedOut: boolean;
  output: string;
}

/** Runs one command with the workspace as its working directory; output (stdout and stderr together) capped. */
export function runShell(workspace: string, mode: Exclude<ShellMode, null>, command: string, timeoutSeconds: number): Promise<ShellResult> {
  const shell = existsSync('/bin/bash') ? '/bin/bash' : '/bin/sh';
  const env = { PATH: SHELL_PATH, HOME: workspace, LANG: 'C.UTF-8', TERM: 'dumb' };
  const [file, args] =
    mode.kind === 'bubblewrap'
      ? [mode.bwrap, shellSandboxArgv(workspace, systemView(), [shell, '-c', command])]
      : [shell, ['-c', command]];
  return new Promise((resolve, reject) => {
    // its own process group: a timeout ends the command and whatever it started
    // node:child_process is loaded on first use, not with the module: the runtime's startup
    // snapshot (activities/sandbox/startup-snapshot.ts) holds no process-spawning state
    const { spawn } = process.getBuiltinModule('node:child_process');
    const child = spawn(file, args, { cwd: workspace, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    if (child.pid !== undefined) {
      hookAgentEnd();
      commandGroups.add(child.pid);
    }
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let droppedBytes = 0;
    const collect = (data: Buffer) => {
      const room = MAX_SHELL_OUTPUT_BYTES - keptBytes;
      if (room > 0) {
        kept.push(data.subarray(0, room));
        keptBytes += Math.min(room, data.length);
      }
      droppedBytes += Math.max(0, data.length - Math.max(room, 0));
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, timeoutSeconds * 1000);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      let output = Buffer.concat(kept).toString('utf8');
      if (droppedBytes > 0) output += `\n[output cut at ${MAX_SHELL_OUTPUT_BYTES} bytes; ${droppedBytes} more bytes dropped]`;
      resolve({ exitCode: code, timedOut, output });
    });
  });
}

export function describeShell(r: ShellResult, timeoutSeconds: number): string {
  const status = r.timedOut ? `timed out after ${timeoutSeconds}s and was stopped` : `exit code ${r.exitCode}`;
  return `${status}\n${r.output}`;
}
