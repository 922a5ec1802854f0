// One streamed chat completion from the session's model, through the egress guard: text deltas are
// handed on as they arrive, tool calls are assembled from their pieces. The provider key goes only
// into the request's auth header and never into an answer or a log.
import type { IncomingMessage } from 'node:http';
import { EgressRefusal, guardedRequest, type EgressOptions } from '../../../lib/egress.ts';
import { isProblem, problem } from '../../../lib/problem.ts';
import type { RunModel } from '../core-providers/index.ts';
import { egressRefusalProblem } from '../core-providers/provider-client.ts';
import { normalizeBaseUrl, providerAdapter } from '../core-providers/providers.ts';
import type { ToolCall } from './sessions.ts';

export interface ModelMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

export interface ModelTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface Completion {
  content: string;
  toolCalls: ToolCall[];
  finishReason: string | null;
}

const FIRST_BYTE_TIMEOUT_MS = 60_000;
const MAX_ERROR_BYTES = 64 * 1024;
const MAX_ANSWER_CHARS = 1024 * 1024;

async function readError(res: IncomingMessage, apiKey: string): Promise<string> {
  let text = '';
  for await (const chunk of res) {
    text += chunk.toString('utf8');
    if (text.length > MAX_ERROR_BYTES) break;
  }
  res.destroy();
  let message = '';
  try {
    const j = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    message = typeof j.error === 'string' ? j.error : typeof j.error?.message === 'string' ? j.error.message : typeof j.message === 'string' ? j.message : '';
  } catch {
    // not JSON: say nothing of it
  }
  message = message.split(apiKey).join('[redacted]');
  return message.length > 300 ? `${message.slice(0, 300)}…` : message;
}

/** POST {base}/chat/completions with stream: true; onDelta gets each piece of text. */
export async function streamCompletion(
  model: RunModel,
  messages: ModelMessage[],
  tools: ModelTool[],
  egress: EgressOptions,
  onDelta: (text: string) => void,
  signal: AbortSignal,
): Promise<Completion> {
  const adapter = providerAdapter(model.provider);
  if (!adapter) throw problem('model_provider_unregistered', { detail: `The provider "${model.provider}" is not registered on this instance.` });
  const body: Record<string, unknown> = { model: model.model, messages, stream: true };
  if (tools.length) body.tools = tools;
  if (model.temperature != null) body.temperature = model.temperature;
  if (model.reasoningEffort != null) body.reasoning_effort = model.reasoningEffort;
  const payload = JSON.stringify(body);
  let res: IncomingMessage;
  try {
    res = await guardedRequest(`${normalizeBaseUrl(model.baseUrl)}/chat/completions`, {
      method: 'POST',
      headers: { accept: 'text/event-stream', 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)), ...adapter.authHeaders(model.apiKey) },
      body: payload,
      signal,
      timeoutMs: FIRST_BYTE_TIMEOUT_MS,
    }, egress);
  } catch (err) {
    if (err instanceof EgressRefusal) throw egressRefusalProblem(err);
    if (isProblem(err)) throw err;
    if (signal.aborted) throw problem('timeout', { detail: 'The chat turn was stopped.' });
    throw problem('network_error', { detail: `The model provider could not be reached (${(err as { code?: string }).code ?? 'connection failed'}).` });
  }
  const status = res.statusCode ?? 502;
  if (status < 200 || status >= 300) {
    const message = await readError(res, model.apiKey);
    throw problem('provider_error', { detail: `The provider answered ${status}${message ? `: ${message}` : '.'}`, extra: { provider_status: status } });
  }
  const type = String(res.headers['content-type'] ?? '');
  let content = '';
  let finishReason: string | null = null;
  const calls: Array<{ id: string; name: string; arguments: string }> = [];
  const take = (chunk: any) => {
    const choice = chunk?.choices?.[0];
    if (!choice) return;
    const delta = choice.delta ?? choice.message ?? {};
    if (typeof delta.content === 'string' && delta.content !== '') {
      if (content.length + delta.content.length > MAX_ANSWER_CHARS) throw problem('provider_error', { detail: 'The model answer is too long.' });
      content += delta.content;
      onDelta(delta.content);
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const [i, tc] of delta.tool_calls.entries()) {
        const index = typeof tc?.index === 'number' ? tc.index : i;
        const call = (calls[index] ??= { id: '', name: '', arguments: '' });
        if (typeof tc?.id === 'string') call.id = tc.id;
        if (typeof tc?.function?.name === 'string') call.name += tc.function.name;
        if (typeof tc?.function?.arguments === 'string') call.arguments += tc.function.arguments;
      }
    }
    if (typeof choice.finish_reason === 'string') finishReason = choice.finish_reason;
  };
  try {
    if (type.includes('text/event-stream')) {
      let buffered = '';
      for await (const chunk of res) {
        buffered += chunk.toString('utf8');
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl).replace(/\r$/, '');
          buffered = buffered.slice(nl + 1);
          if (!line.startsWith('data:')) continue;
          const data = line.slice(5).trim();
          if (data === '' || data === '[DONE]') continue;
          let parsed: unknown;
          try {
            parsed = JSON.parse(data);
          } catch {
            throw problem('provider_error', { detail: 'The provider sent a stream frame that is not JSON.' });
          }
          take(parsed);
        }
        if (buffered.length > MAX_ANSWER_CHARS) throw problem('provider_error', { detail: 'The provider sent an unterminated stream frame.' });
      }
    } else {
      // a provider that ignores stream: true answers one JSON completion
      let text = '';
      for await (const chunk of res) {
        text += chunk.toString('utf8');
        if (text.length > MAX_ANSWER_CHARS) throw problem('provider_error', { detail: 'The model answer is too long.' });
      }
      try {
        take(JSON.parse(text));
      } catch (err) {
        if (isProblem(err)) throw err;
        throw problem('provider_error', { detail: 'The provider answer is not a chat completion.' });
      }
    }
  } catch (err) {
    res.destroy();
    if (isProblem(err)) throw err;
    if (signal.aborted) throw problem('timeout', { detail: 'The chat turn was stopped.' });
    throw problem('network_error', { detail: 'The model provider closed the stream early.' });
  }
  const toolCalls: ToolCall[] = calls.filter((c) => c && c.name).map((c, i) => ({
    id: c.id || `call_${i}`, type: 'function', function: { name: c.name, arguments: c.arguments || '{}' },
  }));
  return { content, toolCalls, finishReason };
}
