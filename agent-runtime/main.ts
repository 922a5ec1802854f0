// The per-run agent runtime. Started ahead of need (warm pool): it loads the agent loop, prints
// {"ready":true}, then takes {workspace, sidecarUrl, maxSteps?} as one line on stdin.
// It holds no credential: its only address is the sidecar's.
import { reportOutcome } from './report.ts';
import { runAgent, type AgentOutcome } from './run-agent.ts';
import { announceReady, readFirstLine, warmFetch } from './warm-start.ts';

(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false;

const MAX_MESSAGE_CHARS = 2000;

interface RuntimeAssignment {
  workspace: string;
  sidecarUrl: string;
  maxSteps?: number;
}

function parseAssignment(line: string): RuntimeAssignment {
  const raw = JSON.parse(line);
  if (typeof raw?.workspace !== 'string' || raw.workspace === '') throw new Error('workspace must be a folder path');
  if (typeof raw.sidecarUrl !== 'string' || !/^https?:\/\//.test(raw.sidecarUrl)) throw new Error('sidecarUrl must be a URL');
  if (raw.maxSteps !== undefined && !(Number.isInteger(raw.maxSteps) && raw.maxSteps > 0)) {
    throw new Error('maxSteps must be a positive integer');
  }
  return { workspace: raw.workspace, sidecarUrl: raw.sidecarUrl.replace(/\/+$/, ''), maxSteps: raw.maxSteps };
}

await warmFetch();
announceReady({});

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

let outcome: AgentOutcome;
try {
  outcome = await runAgent(assignment);
} catch (err) {
  const message = err instanceof Error ? err.message : String(err);
  outcome = { type: 'failed', code: 'agent_error', message: message.slice(0, MAX_MESSAGE_CHARS) };
}
process.exit((await reportOutcome(assignment.sidecarUrl, outcome)) ? 0 : 1);
