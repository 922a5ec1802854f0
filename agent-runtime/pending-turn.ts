// The model turn whose tool calls are still being made, as a parked run needs it: while a call
// that waits for a person's decision is outstanding, the sidecar holds the conversation with the
// turn's assistant message, the results already in and the calls still waiting, so the platform
// can park the run (stop its sandbox) and a fresh sandbox can make those calls and go on. The
// assistant message is the model's last answer, taken as it passes (a model middleware): the AI
// SDK hands a tool the turn's prompt only.
import type { LanguageModelV2, LanguageModelV2Content, LanguageModelV2Middleware } from '@ai-sdk/provider';
import { wrapLanguageModel, type AssistantModelMessage, type ModelMessage, type ToolResultPart, type ToolSet } from 'ai';
import type { PendingToolCall } from '../lib/run-checkpoints.ts';

interface Turn {
  /** the conversation up to and with the turn's assistant message */
  base: ModelMessage[];
  /** the prompt the turn answered (its identity names the turn) */
  prompt: ModelMessage[];
  calls: Map<string, PendingToolCall>;
  results: ToolResultPart[];
  gatedOutstanding: Set<string>;
}

export interface PendingTurnOptions {
  /** tools whose calls wait for a person's decision */
  gated: ReadonlySet<string>;
  /** hands the sidecar the turn's state; resolves whether it was taken */
  handOver: (messages: ModelMessage[], pending: PendingToolCall[]) => Promise<boolean>;
}

/** The assistant message the AI SDK keeps for a model answer: its text, reasoning and tool calls. */
export function assistantMessageOf(content: LanguageModelV2Content[]): AssistantModelMessage {
  const parts: Exclude<AssistantModelMessage['content'], string> = [];
  for (const c of content) {
    if (c.type === 'text' && c.text !== '') parts.push({ type: 'text', text: c.text });
    else if (c.type === 'reasoning' && c.text !== '') parts.push({ type: 'reasoning', text: c.text });
    else if (c.type === 'tool-call' && !c.providerExecuted) {
      let input: unknown;
      try {
        input = JSON.parse(c.input || '{}');
      } catch {
        input = c.input;
      }
      parts.push({ type: 'tool-call', toolCallId: c.toolCallId, toolName: c.toolName, input });
    }
  }
  return { role: 'assistant', content: parts };
}

/** A tool's answer as the conversation keeps it (what the AI SDK makes of it). */
export function toolResultOf(call: PendingToolCall, outcome: { value: unknown } | { error: unknown }): ToolResultPart {
  if ('error' in outcome) {
    const message = outcome.error instanceof Error ? outcome.error.message : String(outcome.error);
    return { type: 'tool-result', toolCallId: call.tool_call_id, toolName: call.tool_name, output: { type: 'error-text', value: message } };
  }
  const v = outcome.value;
  return {
    type: 'tool-result', toolCallId: call.tool_call_id, toolName: call.tool_name,
    output: typeof v === 'string' ? { type: 'text', value: v } : { type: 'json', value: (v ?? null) as never },
  };
}

export class PendingTurn {
  private lastAnswer: LanguageModelV2Content[] = [];
  private turn: Turn | null = null;

  constructor(private readonly opts: PendingTurnOptions) {}

  /** The model, its answers noted as they pass. */
  watch(model: LanguageModelV2): LanguageModelV2 {
    const middleware: LanguageModelV2Middleware = {
      wrapGenerate: async ({ doGenerate }) => {
        const result = await doGenerate();
        this.lastAnswer = result.content;
        return result;
      },
    };
    return wrapLanguageModel({ model, middleware });
  }

  /** The tools, each call noted in its turn (a gated one hands the turn's state over while it waits). */
  wrap(tools: ToolSet): ToolSet {
    const out: ToolSet = {};
    for (const [name, t] of Object.entries(tools)) {
      const execute = t.execute;
      if (!execute) {
        out[name] = t;
        continue;
      }
      out[name] = {
        ...t,
        execute: async (input: unknown, options: { toolCallId: string; messages: ModelMessage[] }) => {
          const turn = this.turnOf(options.messages);
          const call: PendingToolCall = { tool_call_id: options.toolCallId, tool_name: name, input: input ?? {} };
          return this.make(turn, call, () => (execute as (i: unknown, o: unknown) => Promise<unknown>)(input, options));
        },
      } as typeof t;
    }
    return out;
  }

  /**
   * A woken run's held calls: made again through the given tools (a gated one takes the decision
   * made while the run was parked), in the turn the checkpoint holds. Answers the tool message of
   * their results.
   */
  async resume(messages: ModelMessage[], pending: PendingToolCall[], tools: ToolSet): Promise<ModelMessage> {
    const turn: Turn = { base: messages, prompt: messages, calls: new Map(pending.map((c) => [c.tool_call_id, c])), results: [], gatedOutstanding: new Set() };
    this.turn = turn;
    const results = await Promise.all(pending.map((call) => this.make(turn, call, async () => {
      const t = tools[call.tool_name];
      if (!t?.execute) throw new Error(`tool ${call.tool_name} is not offered`);
      return (t.execute as (i: unknown, o: unknown) => Promise<unknown>)(call.input, { toolCallId: call.tool_call_id, messages });
    }).then((value) => toolResultOf(call, { value }), (error) => toolResultOf(call, { error }))));
    this.turn = null;
    return { role: 'tool', content: results };
  }

  private turnOf(prompt: ModelMessage[]): Turn {
    if (this.turn?.prompt === prompt) return this.turn;
    const assistant = assistantMessageOf(this.lastAnswer);
    // every call of the answer is the turn's, also one whose making has not begun yet
    const calls = new Map<string, PendingToolCall>();
    for (const part of assistant.content as Exclude<AssistantModelMessage['content'], string>) {
      if (part.type === 'tool-call') calls.set(part.toolCallId, { tool_call_id: part.toolCallId, tool_name: part.toolName, input: part.input ?? {} });
    }
    this.turn = { base: [...prompt, assistant], prompt, calls, results: [], gatedOutstanding: new Set() };
    return this.turn;
  }

  private async make(turn: Turn, call: PendingToolCall, run: () => Promise<unknown>): Promise<unknown> {
    turn.calls.set(call.tool_call_id, call);
    if (this.opts.gated.has(call.tool_name)) {
      turn.gatedOutstanding.add(call.tool_call_id);
      await this.handOver(turn);
    }
    let outcome: { value: unknown } | { error: unknown };
    try {
      outcome = { value: await run() };
    } catch (error) {
      outcome = { error };
    }
    turn.results.push(toolResultOf(call, outcome));
    turn.gatedOutstanding.delete(call.tool_call_id);
    // another call of the turn still waits: what the sidecar holds gains this result
    if (turn.gatedOutstanding.size > 0) await this.handOver(turn);
    if ('error' in outcome) throw outcome.error;
    return outcome.value;
  }

  private async handOver(turn: Turn): Promise<void> {
    const answered = new Set(turn.results.map((r) => r.toolCallId));
    const pending = [...turn.calls.values()].filter((c) => !answered.has(c.tool_call_id));
    if (pending.length === 0) return;
    const messages: ModelMessage[] = turn.results.length > 0 ? [...turn.base, { role: 'tool', content: [...turn.results] }] : turn.base;
    await this.opts.handOver(messages, pending).catch(() => false);
  }
}
