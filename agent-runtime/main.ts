// The per-run agent runtime. Started ahead of need (warm pool): it loads the agent loop, prints
// {"ready":true}, then takes {workspace, sidecarUrl, sidecarToken, sidecarSocket?, maxSteps?,
// confined?, shell?} as one line on stdin. The launch says whether the agent is confined and
// which shell it may offer (workspace-tools.ts): the runtime never guesses it. It holds no provider credential: its only address is the sidecar's (over
// sidecarSocket when given, the way in from a sandbox with its own network namespace), and its
// only secret the run's sidecar token, which never enters its environment or arguments. It ends
// when stdin closes.
// The process backend starts it from a V8 startup snapshot of this bundle where it can
// (activities/sandbox/startup-snapshot.ts): nothing here may read the environment, the arguments or
// anything of a run while the modules load, and node:child_process loads on first use; node:http is
// never loaded (the sidecar is reached over node:net, sidecar-fetch.ts).
// first: what building a startup snapshot of this program needs before any other module loads
import './snapshot-prelude.ts';
import { startupSnapshot } from 'node:v8';
import { reportOutcome } from './report.ts';
import { runAgent, type AgentOutcome } from './run-agent.ts';
import { installFetchHeaders } from './fetch-headers.ts';
import { sidecarFetch } from './sidecar-fetch.ts';
import type { ShellMode } from './workspace-tools.ts';
import { announceReady, exitWhenStdinEnds, readFirstLine } from '../lib/warm-start.ts';

(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;
// the model library's Headers without node's undici, which a run then never loads (fetch-headers.ts)
installFetchHeaders();

const MAX_MESSAGE_CHARS = 2000;

interface RuntimeAssignment {
  workspace: string;
  sidecarUrl: string;
  sidecarToken: string;
  sidecarSocket?: string;
  maxSteps?: number;
  confined: boolean;
  shell: ShellMode;
}

function parseShell(raw: unknown): ShellMode {
  if (raw === undefined || raw === null) return null;
  const shell = raw as { kind?: unknown; bwrap?: unknown };
  if (shell.kind === 'unconfined') return { kind: 'unconfined' };
  if (shell.kind === 'bubblewrap' && typeof shell.bwrap === 'string' && shell.bwrap.startsWith('/')) return { kind: 'bubblewrap', bwrap: shell.bwrap };
  throw new Error('shell must be null, {"kind":"unconfined"} or {"kind":"bubblewrap","bwrap":"/path"}');
}

function parseAssignment(line: string): RuntimeAssignment {
  const raw = JSON.parse(line);
  if (typeof raw?.workspace !== 'string' || raw.workspace === '') throw new Error('workspace must be a folder path');
  if (typeof raw.sidecarUrl !== 'string' || !/^https?:\/\//.test(raw.sidecarUrl)) throw new Error('sidecarUrl must be a URL');
  if (typeof raw.sidecarToken !== 'string' || raw.sidecarToken === '') throw new Error('sidecarToken must be a non-empty string');
  if (raw.maxSteps !== undefined && !(Number.isInteger(raw.maxSteps) && raw.maxSteps > 0)) {
    throw new Error('maxSteps must be a positive integer');
  }
  if (raw.sidecarSocket !== undefined && (typeof raw.sidecarSocket !== 'string' || !raw.sidecarSocket.startsWith('/'))) {
    throw new Error('sidecarSocket must be an absolute path');
  }
  return {
    workspace: raw.workspace,
    sidecarUrl: raw.sidecarUrl.replace(/\/+$/, ''),
    sidecarToken: raw.sidecarToken,
    sidecarSocket: raw.sidecarSocket,
    maxSteps: raw.maxSteps,
    confined: raw.confined === true,
    shell: parseShell(raw.shell),
  };
}

// No top-level await: the program is bundled as CommonJS so its compiled code can be cached
// (bin/cached-program.ts).
async function main(fromSnapshot: boolean): Promise<void> {
  // the ready line says how the process started, for the platform's tests and benches
  announceReady(fromSnapshot ? { snapshot: true } : {});

  let line: string;
  try {
    line = await readFirstLine();
  } catch {
    process.exit(0); // the pool let go of this process before using it
  }
  let assignment: RuntimeAssignment;
  try {
    assignment = parseAssignment(line);
  } catch (err) {
    process.stderr.write(`agent-runtime: ${(err as Error).message}\n`);
    process.exit(2);
  }
  exitWhenStdinEnds();

  const toSidecar = sidecarFetch(assignment.sidecarToken, assignment.sidecarSocket);
  let outcome: AgentOutcome;
  try {
    outcome = await runAgent({
      workspace: assignment.workspace,
      sidecarUrl: assignment.sidecarUrl,
      maxSteps: assignment.maxSteps,
      fetch: toSidecar,
      shell: assignment.shell,
    });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    outcome = { type: 'failed', code: 'agent_error', message: message.slice(0, MAX_MESSAGE_CHARS) };
  }
  process.exit((await reportOutcome(assignment.sidecarUrl, outcome, toSidecar)) ? 0 : 1);
}

// Built into a V8 startup snapshot (activities/sandbox/startup-snapshot.ts), the program stops
// here with every module loaded and its main set to run when a process starts from the snapshot;
// started plainly, it runs at once.
if (startupSnapshot.isBuildingSnapshot()) startupSnapshot.setDeserializeMainFunction(() => void main(true));
else void main(false);
