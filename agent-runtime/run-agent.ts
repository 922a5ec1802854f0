// The agent loop: the workspace's prompt, the sidecar's model and tools, and one corrective
// re-prompt when an output tool is offered but the model ended without calling it. Each completed
// step is checkpointed; a resumed run continues the conversation of the checkpoint it starts from.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, stepCountIs, type ModelMessage } from 'ai';
import { CheckpointRecorder, readResumePoint } from './checkpoints.ts';
import { PendingTurn } from './pending-turn.ts';
import { connectSidecarTools, type PrepareToolArgs } from './mcp-tools.ts';
import { buildSystemPrompt, buildUserMessage, OUTPUT_REMINDER } from './system-prompt.ts';
import { readWorkspace } from './workspace.ts';
import { readWorkspaceFile, WORKSPACE_TOOL_PREFIX, workspaceTools, type ShellMode } from './workspace-tools.ts';
import { WorkspaceRoot } from './workspace-path.ts';

export const DEFAULT_MAX_STEPS = 20;

export type AgentOutcome = { type: 'completed'; text: string } | { type: 'failed'; code: string; message: string };

export interface AgentRunOptions {
  workspace: string;
  sidecarUrl: string;
  maxSteps?: number;
  /** how requests reach the sidecar; the global fetch when absent */
  fetch?: typeof fetch;
  /** the shell the launch offers; none when absent */
  shell?: ShellMode;
}

export async function runAgent(opts: AgentRunOptions): Promise<AgentOutcome> {
  const ws = await readWorkspace(opts.workspace);
  if (ws.prompt.trim() === '') return { type: 'failed', code: 'empty_prompt', message: 'prompt.md is empty' };

  // the sidecar swaps in the real model name and key: the runtime names neither
  const provider = createOpenAICompatible({ baseURL: `${opts.sidecarUrl}/v1`, name: 'sidecar', fetch: opts.fetch });
  const sidecarFetch = opts.fetch ?? fetch;
  // a resumed run starts from its checkpoint: the conversation so far (boot restored the files)
  const resumed = await readResumePoint(opts.sidecarUrl, opts.fetch ?? fetch);
  const checkpoints = new CheckpointRecorder({ workspace: ws.dir, sidecarUrl: opts.sidecarUrl, fetch: opts.fetch ?? fetch, resumed });
  await checkpoints.begin();
  const sidecarTools = await connectSidecarTools(opts.sidecarUrl, opts.fetch, publishFromWorkspace(ws.dir));
  // while a call waits for a person's decision, the sidecar holds the turn's state: the run may be parked
  const turn = new PendingTurn({
    gated: await gatedToolNames(opts.sidecarUrl, sidecarFetch),
    handOver: (messages, pending) => checkpoints.recordPending(messages, pending),
  });
  const model = turn.watch(provider.chatModel('run-model'));
  try {
    const maxSteps = opts.maxSteps ?? DEFAULT_MAX_STEPS;
    // the steps the run made before it was resumed count towards its bound
    const stopWhen = stepCountIs(Math.max(1, maxSteps - checkpoints.completedSteps));
    const clash = sidecarTools.names.find((n) => n.startsWith(WORKSPACE_TOOL_PREFIX));
    if (clash) throw new Error(`the sidecar offers a tool named ${clash}, a name the workspace tools keep`);
    const tools = turn.wrap({ ...sidecarTools.tools, ...workspaceTools({ workspace: ws.dir, shell: opts.shell ?? null }) });
    const toolNames = Object.keys(tools);
    const system = buildSystemPrompt(ws, toolNames);
    let messages: ModelMessage[] = resumed?.messages ?? [{ role: 'user', content: buildUserMessage(ws) }];
    if (resumed?.pending?.length) {
      // woken from a park: the held calls are made (each takes its decision), completing the turn
      messages = [...messages, await turn.resume(messages, resumed.pending, tools)];
      await checkpoints.record(messages);
    }
    // each completed step is checkpointed (the sidecar takes it at once and posts it before the run's end)
    const checkpointAfter = (before: ModelMessage[]) => async (step: { response: { messages: ModelMessage[] } }) => {
      await checkpoints.record([...before, ...step.response.messages]);
    };
    const first = await generateText({ model, system, messages, tools, stopWhen, onStepFinish: checkpointAfter(messages) });
    const calledOutput = (r: typeof first) => r.steps.some((s) => s.toolCalls.some((c) => c.toolName === 'output'));
    if (!sidecarTools.names.includes('output') || calledOutput(first) || outputCalledIn(messages)) return { type: 'completed', text: first.text };

    const reminded: ModelMessage[] = [...messages, ...first.response.messages, { role: 'user', content: OUTPUT_REMINDER }];
    const second = await generateText({ model, system, messages: reminded, tools, stopWhen, onStepFinish: checkpointAfter(reminded) });
    return { type: 'completed', text: second.text || first.text };
  } finally {
    await sidecarTools.close().catch(() => undefined);
  }
}

/** The tools whose calls wait for a person's decision (the sidecar's gate); none when it does not say. */
async function gatedToolNames(sidecarUrl: string, sidecarFetch: typeof fetch): Promise<Set<string>> {
  try {
    const res = await sidecarFetch(`${sidecarUrl}/runtime/approvals`, { signal: AbortSignal.timeout(30_000) });
    const body = (await res.json().catch(() => null)) as { tools?: unknown } | null;
    return new Set(res.status === 200 && Array.isArray(body?.tools) ? body.tools.filter((t): t is string => typeof t === 'string') : []);
  } catch {
    return new Set();
  }
}

/** Whether the conversation already holds a call of the output tool (a resumed run's earlier steps). */
function outputCalledIn(messages: ModelMessage[]): boolean {
  return messages.some((m) => m.role === 'assistant' && Array.isArray(m.content) && m.content.some((p) => p.type === 'tool-call' && p.toolName === 'output'));
}

/** Largest file publish_file takes from the workspace (the sidecar enforces the same ceiling). */
export const MAX_PUBLISH_BYTES = 10 * 1024 * 1024;

/**
 * publish_file with a workspace `path`: the runtime reads the file through the workspace guard and
 * sends its bytes (base64) to the sidecar, which never reads the agent's files itself. A path that
 * leaves the workspace is refused here, before anything is sent.
 */
export function publishFromWorkspace(workspace: string): PrepareToolArgs {
  let root: WorkspaceRoot | undefined;
  return (toolName, args) => {
    if (toolName !== 'publish_file' || typeof args.path !== 'string' || args.content !== undefined) return args;
    root ??= new WorkspaceRoot(workspace);
    const bytes = readWorkspaceFile(root, args.path, MAX_PUBLISH_BYTES);
    const { path: given, ...rest } = args;
    const name = typeof rest.name === 'string' && rest.name !== '' ? rest.name : String(given).split('/').pop();
    return { ...rest, name, content: bytes.toString('base64'), encoding: 'base64' };
  };
}
