// One chat turn: the checks that can still refuse it with a problem document (usage, capacity,
// skills, model), then a Server-Sent Events stream of the model's answer. The model may call the
// caller's agents; each call runs the agent and its result goes back to the model, until it answers
// in text or the turn's model calls are used up.
//
// Stream events: turn (the session), token ({ text }), tool_call ({ id, name, agent, input }),
// tool_result ({ id, name, agent, run_id, status, output | error }), done ({ content, stop }),
// error (a problem document; the stream ends after it).
import type { Request, Response } from '../../http.ts';
import type { RequestContext } from '../../context.ts';
import type { AppDeps } from '../../deps.ts';
import { problem, problemBody, isProblem, type ProblemError } from '../../../lib/problem.ts';
import { spaceScopeOf, type SpaceScope } from '../../../db/tenant.ts';
import { handled, type Reply } from '../../route.ts';
import { launchContext } from '../../routes/runs.ts';
import { publishChatSessionUpdate } from '../../services/realtime/publish.ts';
import { resolveRunModel, type RunModel } from '../core-providers/index.ts';
import { agentTools, callAgent, type AgentTool } from './agent-tools.ts';
import { streamCompletion, type ModelMessage } from './model-stream.ts';
import { appendMessages, getSessionRow, listMessages, toSessionWire, type NewMessage, type SessionRow } from './sessions.ts';
import { loadEnforcedSkills, loadInjectedDrafts, type SkillText } from './skills.ts';
import { firstUsageRefusal, usageRefusalReply } from './usage.ts';
import type { LiveSessions } from './live-sessions.ts';

export interface ChatEngine {
  /** the sessions whose turn streams now, on any instance */
  live: LiveSessions;
}

/** How long a turn waits for the agents it runs, all together. */
const TURN_WAIT_MS = 15 * 60 * 1000;
const KEEP_ALIVE_MS = 15_000;

export function systemPrompt(tools: AgentTool[], enforced: SkillText[], drafts: SkillText[]): string {
  const parts = [
    'You are the chat assistant of this workspace. Answer the member directly.',
    tools.length
      ? "Tools named agent_* run the member's agents: call one with { input } when the member asks for what an agent does; its result is the run's output."
      : 'No agent can be run from this chat.',
  ];
  for (const s of enforced) parts.push(`## Skill ${s.packageId}@${s.version} (required in this space)\n\n${s.content}`);
  for (const s of drafts) parts.push(`## Skill ${s.packageId} (draft under test)\n\n${s.content}`);
  return parts.join('\n\n');
}

function historyOf(messages: Awaited<ReturnType<typeof listMessages>>): ModelMessage[] {
  return messages.map((m) => {
    if (m.role === 'tool') return { role: 'tool', content: m.content, tool_call_id: m.tool_call_id ?? '' };
    if (m.role === 'assistant' && m.tool_calls?.length) return { role: 'assistant', content: m.content || null, tool_calls: m.tool_calls };
    return { role: m.role, content: m.content };
  });
}

function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

interface TurnInput {
  ctx: RequestContext;
  deps: AppDeps;
  engine: ChatEngine;
  sessionId: string;
  content: string;
  req: Request;
  res: Response;
}

async function announce(deps: AppDeps, session: SessionRow, change: string): Promise<void> {
  await publishChatSessionUpdate(deps, { orgId: session.org_id, spaceId: session.space_id, userId: session.user_id, session: { ...toSessionWire(session), change } });
}

/** The value of a settled look-up, or its error thrown. */
function valueOf<T>(r: PromiseSettledResult<T>): T {
  if (r.status === 'rejected') throw r.reason;
  return r.value;
}

export async function postTurn(input: TurnInput): Promise<Reply> {
  const { ctx, deps, engine } = input;
  const scope = spaceScopeOf(ctx, deps.database);
  // Everything a turn reads is asked at once (one round trip's wait before the model is called);
  // errors still come in a fixed order: the session first. The default model is read on the guess
  // that the session names none, and read again when it does.
  const looked = await Promise.allSettled([
    getSessionRow(scope, input.sessionId),
    loadEnforcedSkills(scope),
    agentTools(scope, ctx.permissions),
    listMessages(scope, input.sessionId),
    resolveRunModel(scope, deps.secrets, null),
  ]);
  const session = valueOf(looked[0]);
  const refusal = await firstUsageRefusal(deps, { orgId: scope.orgId, spaceId: scope.spaceId, userId: scope.actor.userId, sessionId: session.id });
  if (refusal) return usageRefusalReply(deps.config.ERROR_TYPE_BASE, refusal);
  const place = await engine.live.take(session.id);
  try {
    const enforced = valueOf(looked[1]);
    const drafts = await loadInjectedDrafts(scope, session.injected_drafts);
    const model = session.model_id === null ? valueOf(looked[4]) : await resolveRunModel(scope, deps.secrets, session.model_id);
    const prepared: Prepared = { session, enforced, drafts, model, tools: valueOf(looked[2]), history: valueOf(looked[3]) };
    return await runTurn(input, scope, prepared, () => place.release());
  } finally {
    await place.release();
  }
}

interface Prepared {
  session: SessionRow;
  enforced: SkillText[];
  drafts: SkillText[];
  model: RunModel;
  tools: AgentTool[];
  history: Awaited<ReturnType<typeof listMessages>>;
}

/** `release` frees the session's place before the stream ends, so a client's next turn finds it free. */
async function runTurn(input: TurnInput, scope: SpaceScope, prepared: Prepared, release: () => Promise<void>): Promise<Reply> {
  const { ctx, deps, res } = input;
  const { session, enforced, drafts, model, tools, history } = prepared;
  const messages: ModelMessage[] = [{ role: 'system', content: systemPrompt(tools, enforced, drafts) }, ...historyOf(history), { role: 'user', content: input.content }];
  // The member's message is stored while the model is asked; the answer's own write waits for
  // it, so the answer's id sorts after it.
  const userStored = appendMessages(scope, session.id, [{ role: 'user', content: input.content }]);
  userStored.catch(() => {});
  let current = session;

  const stop = new AbortController();
  // the response's close: the client went away before the turn ended
  res.once('close', () => {
    if (!res.writableEnded) stop.abort();
  });
  res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache, no-transform', 'X-Accel-Buffering': 'no' });
  const send = (event: string, data: unknown) => {
    if (!res.writableEnded && !res.destroyed) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  const keepAlive = setInterval(() => {
    if (!res.writableEnded && !res.destroyed) res.write(': keep-alive\n\n');
  }, KEEP_ALIVE_MS);
  send('turn', toSessionWire(session));
  void announce(deps, session, 'turn_started');

  const byName = new Map(tools.map((t) => [t.name, t]));
  const egress = { allowInternalHosts: deps.config.EGRESS_ALLOW_INTERNAL_HOSTS, platformEndpoints: deps.platformEndpoints };
  const agentDeps = { launch: launchContext(ctx, deps), permissions: ctx.permissions, feed: deps.runFeed ?? null, caller: `user:${scope.actor.userId}` };
  const deadline = Date.now() + TURN_WAIT_MS;
  try {
    let stopReason = 'max_model_calls';
    let answer = '';
    for (let call = 0; call < deps.config.CHAT_MAX_MODEL_CALLS_PER_TURN; call++) {
      const completion = await streamCompletion(model, messages, tools.map((t) => t.tool), egress, (text) => send('token', { text }), stop.signal);
      current = await userStored;
      if (completion.toolCalls.length === 0) {
        answer = completion.content;
        current = await appendMessages(scope, session.id, [{ role: 'assistant', content: completion.content }]);
        stopReason = 'answered';
        break;
      }
      messages.push({ role: 'assistant', content: completion.content || null, tool_calls: completion.toolCalls });
      const stored: NewMessage[] = [{ role: 'assistant', content: completion.content, toolCalls: completion.toolCalls }];
      for (const tc of completion.toolCalls) {
        const tool = byName.get(tc.function.name);
        const args = parseArguments(tc.function.arguments);
        send('tool_call', { id: tc.id, name: tc.function.name, agent: tool?.packageId ?? null, input: (args as { input?: unknown } | undefined)?.input ?? null });
        const result = tool
          ? await callAgent(scope, agentDeps, tool.packageId, args, deadline, stop.signal)
          : { run_id: null, status: 'not_started', error: { code: 'unknown_tool', detail: `No tool ${tc.function.name} is offered in this chat.` } };
        send('tool_result', { id: tc.id, name: tc.function.name, agent: tool?.packageId ?? null, ...result });
        const text = JSON.stringify(result);
        messages.push({ role: 'tool', content: text, tool_call_id: tc.id });
        stored.push({ role: 'tool', content: text, toolCallId: tc.id });
      }
      current = await appendMessages(scope, session.id, stored);
      if (stop.signal.aborted) {
        stopReason = 'stopped';
        break;
      }
    }
    send('done', { content: answer, stop: stopReason, message_count: current.message_count });
  } catch (err) {
    const p: ProblemError = isProblem(err) ? err : problem('internal_error');
    if (!isProblem(err)) deps.log.error('chat turn failed', { sessionId: session.id, requestId: ctx.requestId, error: String(err) });
    send('error', problemBody(p, ctx.requestId, deps.config.ERROR_TYPE_BASE));
    current = await userStored.catch(() => current);
  } finally {
    clearInterval(keepAlive);
    await release();
    res.end();
  }
  await announce(deps, current, 'turn_finished');
  return handled();
}
