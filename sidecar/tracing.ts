// The sidecar's spans: model calls (chat), tool calls (execute_tool) and upstream requests, kept as
// plain records (lib/tracing/records.ts) and sent to the platform with the run's events. The
// OpenTelemetry SDK is never loaded here: a sidecar is started for every run. Prompts and
// completions are recorded only when the operator opted in; credentials never are.
import { SpanRecorder, type RecordingSpan, type SpanAttributes } from '../lib/tracing/records.ts';
import type { TraceAssignment } from './assignment.ts';
import type { SidecarTool, ToolAnswer } from './tool.ts';

/** tool call ids the model asked for, by tool name, waiting for their call (bounded) */
const MAX_PENDING_CALLS = 256;

export class SidecarTracing {
  readonly recorder: SpanRecorder;
  readonly provider: string;
  readonly captureContent: boolean;
  private readonly pendingCalls = new Map<string, string[]>();
  private pending = 0;

  constructor(trace: TraceAssignment | undefined) {
    this.recorder = new SpanRecorder(trace?.traceparent, trace?.agentName ? { 'gen_ai.agent.name': trace.agentName } : {});
    this.provider = trace?.provider ?? 'openai';
    this.captureContent = trace?.captureMessageContent === true;
  }

  get recording(): boolean {
    return this.recorder.recording;
  }

  start(name: string, attributes: SpanAttributes, kind: 'internal' | 'client' = 'internal'): RecordingSpan | null {
    return this.recorder.start(name, attributes, kind);
  }

  /** An upstream request an integration tool makes: method and host only (paths and queries can carry secrets). */
  upstreamSpan(method: string, target: URL): RecordingSpan | null {
    return this.start(`${method} ${target.host}`, {
      'http.request.method': method, 'server.address': target.hostname, 'server.port': Number(target.port || (target.protocol === 'https:' ? 443 : 80)),
    }, 'client');
  }

  /** The tool calls of a model's answer (OpenAI chat shape): their ids name the tool spans that follow. */
  noteToolCalls(answer: unknown): void {
    if (!this.recording) return;
    const choices = (answer as { choices?: unknown })?.choices;
    if (!Array.isArray(choices)) return;
    for (const choice of choices) {
      const calls = (choice as { message?: { tool_calls?: unknown } })?.message?.tool_calls;
      if (!Array.isArray(calls)) continue;
      for (const call of calls) {
        const id = (call as { id?: unknown })?.id;
        const name = (call as { function?: { name?: unknown } })?.function?.name;
        if (typeof id !== 'string' || typeof name !== 'string' || this.pending >= MAX_PENDING_CALLS) continue;
        const queue = this.pendingCalls.get(name) ?? [];
        queue.push(id);
        this.pendingCalls.set(name, queue);
        this.pending += 1;
      }
    }
  }

  private takeToolCallId(name: string): string | undefined {
    const queue = this.pendingCalls.get(name);
    const id = queue?.shift();
    if (id !== undefined) this.pending -= 1;
    if (queue && queue.length === 0) this.pendingCalls.delete(name);
    return id;
  }

  /** The tools, each call in an execute_tool span. */
  traceTools(tools: SidecarTool[]): SidecarTool[] {
    if (!this.recording) return tools;
    return tools.map((tool) => ({
      ...tool,
      call: async (args: Record<string, unknown>): Promise<ToolAnswer> => {
        const callId = this.takeToolCallId(tool.name);
        const span = this.start(`execute_tool ${tool.name}`, {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': tool.name,
          'gen_ai.tool.type': 'function',
          ...(callId ? { 'gen_ai.tool.call.id': callId } : {}),
          ...(this.captureContent ? { 'gen_ai.tool.call.arguments': JSON.stringify(args) } : {}),
        });
        try {
          const answer = await tool.call(args);
          if (answer.isError) span?.fail('tool_error');
          if (this.captureContent) span?.set({ 'gen_ai.tool.call.result': answer.text });
          return answer;
        } catch (err) {
          span?.fail((err as Error).name || 'error');
          throw err;
        } finally {
          span?.end();
        }
      },
    }));
  }
}
