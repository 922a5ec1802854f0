// The caller's agents as chat tools: one function per agent the caller may run in the space. A call
// launches a run through the same service the run route uses, under the caller's permissions, and
// waits for its ending; the tool result is the run's status and output (or why it could not start).
import type { SpaceScope } from '../../../db/tenant.ts';
import { isProblem } from '../../../lib/problem.ts';
import type { Permission } from '../../../lib/permissions.ts';
import type { LaunchContext } from '../../services/runs/launch.ts';
import { launchAgentRun } from '../../services/runs/launch.ts';
import { readRun } from '../../services/runs/control.ts';
import { isTerminal } from '../../services/runs/records.ts';
import type { RunStatusFeed } from '../../services/runs/status-feed.ts';
import type { ModelTool } from './model-stream.ts';

export interface AgentTool {
  name: string;
  packageId: string;
  tool: ModelTool;
}

interface AgentRow {
  id: string;
  manifest: { display_name?: unknown; description?: unknown; input?: { schema?: unknown } } | null;
}

/** Tool names are [a-zA-Z0-9_-]{1,64}: agent_<scope>_<name>, cut and made unique. */
function toolName(packageId: string, taken: Set<string>): string {
  const base = `agent_${packageId.replace(/^@/, '').replace(/[^a-zA-Z0-9_-]/g, '_')}`.slice(0, 60);
  let name = base;
  for (let n = 2; taken.has(name); n++) name = `${base.slice(0, 60 - String(n).length - 1)}_${n}`;
  taken.add(name);
  return name;
}

/** Agents living or active in the space, each with its latest published manifest; none without agents:run. */
export async function agentTools(scope: SpaceScope, permissions: ReadonlySet<Permission>): Promise<AgentTool[]> {
  if (!permissions.has('agents:run')) return [];
  const { rows } = await scope.pool.query<AgentRow>(
    `SELECT p.id, v.manifest
       FROM packages p
       LEFT JOIN package_placements pl ON pl.org_id = p.org_id AND pl.package_id = p.id AND pl.space_id = $2
       LEFT JOIN package_versions v ON v.org_id = p.org_id AND v.package_id = p.id AND v.version = p.dist_tags->>'latest'
      WHERE p.org_id = $1 AND p.type = 'agent' AND p.deleted_at IS NULL
        AND (p.home_space_id = $2 OR pl.active)
        AND EXISTS (SELECT 1 FROM package_versions pv WHERE pv.org_id = p.org_id AND pv.package_id = p.id AND NOT pv.yanked)
      ORDER BY p.id
      LIMIT 64`,
    [scope.orgId, scope.spaceId],
  );
  const taken = new Set<string>();
  return rows.map((r) => {
    const name = toolName(r.id, taken);
    const m = r.manifest ?? {};
    const title = typeof m.display_name === 'string' ? `${m.display_name} (${r.id})` : r.id;
    const about = typeof m.description === 'string' ? ` ${m.description}` : '';
    const inputSchema = m.input?.schema && typeof m.input.schema === 'object' ? m.input.schema as Record<string, unknown> : { type: 'object' };
    return {
      name,
      packageId: r.id,
      tool: {
        type: 'function',
        function: {
          name,
          description: `Run the agent ${title} and wait for its result.${about}`.slice(0, 1024),
          parameters: { type: 'object', properties: { input: inputSchema }, additionalProperties: false },
        },
      },
    };
  });
}

export interface AgentToolResult {
  run_id: string | null;
  status: string;
  output?: unknown;
  error?: unknown;
}

export interface AgentCallDeps {
  launch: LaunchContext;
  permissions: ReadonlySet<Permission>;
  feed: RunStatusFeed | null;
  /** the caller's key for the per-caller wait count */
  caller: string;
}

/** Launches the agent and waits (in long polls) until its run ends, the turn is stopped, or the deadline. */
export async function callAgent(
  scope: SpaceScope, deps: AgentCallDeps, packageId: string, args: unknown, deadline: number, signal: AbortSignal,
): Promise<AgentToolResult> {
  const input = args && typeof args === 'object' && !Array.isArray(args) && typeof (args as { input?: unknown }).input === 'object'
    ? ((args as { input: Record<string, unknown> | null }).input ?? {})
    : {};
  let runId: string;
  try {
    const run = await launchAgentRun(scope, deps.launch, packageId, { input: input as Record<string, unknown> });
    runId = run.id;
  } catch (err) {
    if (isProblem(err)) return { run_id: null, status: 'not_started', error: { code: err.code, detail: err.detail } };
    throw err;
  }
  for (;;) {
    const left = (deadline - Date.now()) / 1000;
    const run = JSON.parse((await readRun(scope, deps.permissions, runId, Math.max(0, Math.min(55, left)), deps.feed, null, deps.caller, signal)).text) as {
      status: string; result: { output: unknown } | null; error: unknown;
    };
    if (isTerminal(run.status)) {
      return run.status === 'success' ? { run_id: runId, status: run.status, output: run.result?.output ?? null } : { run_id: runId, status: run.status, error: run.error };
    }
    if (signal.aborted || Date.now() >= deadline) return { run_id: runId, status: run.status, error: { code: 'still_running', detail: 'The run had not ended when the chat stopped waiting; read it with GET /api/runs/{id}.' } };
    // no status feed (a process without one): poll
    if (!deps.feed) await new Promise((r) => setTimeout(r, 250));
  }
}
