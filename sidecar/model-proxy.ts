// The agent's OpenAI-compatible model endpoint: forwards chat completions to the assigned provider
// with the real key, forces the assigned model, and turns each call's usage into a metric event.
// Calls go through the egress guard (the provider's host must resolve to a public address unless
// the operator allowed it to be internal) and keep their connection alive across the run's turns
// (node's global agents keep connections alive).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { EgressRefusal, guardedRequest, type EgressOptions } from '../lib/egress.ts';
import { ProxyFailure } from '../lib/proxy-tunnel.ts';
import { readBody } from '../lib/outbound-http.ts';
import { checkModelSettings, layeredSettings } from '../lib/model-settings.ts';
import { isProblem } from '../lib/problem.ts';
import type { RunMetricData } from '../lib/run-events.ts';
import type { ModelAssignment } from './assignment.ts';
import type { EventPoster } from './event-poster.ts';
import type { ModelBudget } from './model-budget.ts';
import { relayEventStream } from '../lib/event-stream-relay.ts';
import type { RecordingSpan } from '../lib/tracing/records.ts';
import type { SidecarTracing } from './tracing.ts';

/**
 * How long a model call keeps trying to connect while its provider refuses connections (a local
 * model server reached through the worker's relays while that worker restarts; a provider's
 * endpoint coming back). Only failures to connect are tried again: nothing reached the provider.
 */
export const MODEL_CONNECT_RETRY_MS = 60_000;
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

async function connectPatiently(open: () => Promise<IncomingMessage>, signal: AbortSignal, budgetMs: number): Promise<IncomingMessage> {
  const until = Date.now() + budgetMs;
  let wait = 250;
  for (;;) {
    try {
      return await open();
    } catch (err) {
      const code = err instanceof ProxyFailure || err instanceof EgressRefusal ? undefined : (err as { code?: string }).code;
      if (signal.aborted || !code || !NOT_CONNECTED.has(code) || Date.now() + wait > until) throw err;
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, 4_000);
    }
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function openAiError(res: ServerResponse, status: number, type: string, message: string): void {
  sendJson(res, status, { error: { message, type, code: type } });
}

function metricFrom(usage: any, model: string): RunMetricData | undefined {
  if (!usage || typeof usage !== 'object') return undefined;
  const prompt = Number(usage.prompt_tokens) || 0;
  const completion = Number(usage.completion_tokens) || 0;
  const total = Number(usage.total_tokens) || prompt + completion;
  const metric: RunMetricData = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total, model };
  // some gateways (OpenRouter) report the price of the call
  if (typeof usage.cost === 'number') metric.cost_usd = usage.cost;
  return metric;
}

export function answerModels(res: ServerResponse, model: ModelAssignment | null): void {
  const data = model ? [{ id: model.model, object: 'model', created: 0, owned_by: 'sidecar' }] : [];
  sendJson(res, 200, { object: 'list', data });
}

/**
 * A call's temperature and reasoning effort: its own, else the run's; checked against what the
 * model accepts. Answers the refusal (reasoning_unsupported, reasoning_level_unsupported,
 * temperature_unsupported, temperature_with_reasoning_unsupported), or null once applied.
 */
function applyRunSettings(body: Record<string, unknown>, model: ModelAssignment): { code: string; message: string } | null {
  if (body.temperature != null && typeof body.temperature !== 'number') return { code: 'invalid_request', message: 'temperature must be a number.' };
  if (body.reasoning_effort != null && typeof body.reasoning_effort !== 'string') return { code: 'invalid_request', message: 'reasoning_effort must be a string.' };
  const settings = layeredSettings(
    { temperature: body.temperature as number | null | undefined, reasoningEffort: body.reasoning_effort as string | null | undefined },
    model.defaults,
  );
  if (model.accepts) {
    try {
      checkModelSettings(model.accepts, settings);
    } catch (err) {
      if (isProblem(err)) return { code: err.code, message: err.detail };
      throw err;
    }
  }
  if (settings.temperature !== null) body.temperature = settings.temperature;
  if (settings.reasoningEffort !== null) body.reasoning_effort = settings.reasoningEffort;
  return null;
}

/** Ends the run failed with the budget's code (once: a later end is not queued). */
function endOverBudget(events: EventPoster, reached: { code: string; message: string }): void {
  if (events.ended) return;
  events.emit('failed', { code: reached.code, message: reached.message });
}

export async function proxyChatCompletion(
  res: ServerResponse,
  rawBody: Buffer,
  model: ModelAssignment | null,
  events: EventPoster,
  egress: EgressOptions = { allowInternalHosts: [] },
  budget?: ModelBudget,
  connectRetryMs = MODEL_CONNECT_RETRY_MS,
  tracing?: SidecarTracing,
): Promise<void> {
  if (!model || !tracing?.recording) return forwardChatCompletion(res, rawBody, model, events, egress, budget, connectRetryMs, null, tracing);
  const span = tracing.start(`chat ${model.model}`, {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': tracing.provider,
    'gen_ai.request.model': model.model,
  }, 'client');
  try {
    await forwardChatCompletion(res, rawBody, model, events, egress, budget, connectRetryMs, span, tracing);
  } finally {
    span?.end();
  }
}

/** The model call's outcome on its span: the answer's model, the usage as reported, the content when opted in. */
function recordAnswer(span: RecordingSpan, tracing: SidecarTracing, answer: any, usage: any): void {
  if (typeof answer?.model === 'string') span.set({ 'gen_ai.response.model': answer.model });
  if (typeof answer?.id === 'string') span.set({ 'gen_ai.response.id': answer.id });
  const reasons = Array.isArray(answer?.choices) ? answer.choices.map((c: any) => c?.finish_reason).filter((r: unknown) => typeof r === 'string') : [];
  if (reasons.length) span.set({ 'gen_ai.response.finish_reasons': reasons.join(',') });
  if (usage && typeof usage === 'object') {
    if (Number.isFinite(Number(usage.prompt_tokens))) span.set({ 'gen_ai.usage.input_tokens': Number(usage.prompt_tokens) });
    if (Number.isFinite(Number(usage.completion_tokens))) span.set({ 'gen_ai.usage.output_tokens': Number(usage.completion_tokens) });
  }
  if (tracing.captureContent && Array.isArray(answer?.choices)) {
    span.set({ 'gen_ai.output.messages': JSON.stringify(answer.choices.map((c: any) => c?.message ?? null)) });
  }
  tracing.noteToolCalls(answer);
}

async function forwardChatCompletion(
  res: ServerResponse,
  rawBody: Buffer,
  model: ModelAssignment | null,
  events: EventPoster,
  egress: EgressOptions,
  budget: ModelBudget | undefined,
  connectRetryMs: number,
  span: RecordingSpan | null,
  tracing: SidecarTracing | undefined,
): Promise<void> {
  if (!model) return openAiError(res, 503, 'model_unavailable', 'No model is configured for this run.');
  const over = budget?.reached();
  if (over) {
    endOverBudget(events, over);
    return openAiError(res, 402, over.code, over.message);
  }
  let body: any;
  try {
    body = JSON.parse(rawBody.toString('utf8'));
  } catch {
    return openAiError(res, 400, 'invalid_request_error', 'The body is not JSON.');
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    return openAiError(res, 400, 'invalid_request_error', 'The body must be a JSON object.');
  }
  body.model = model.model;
  const refused = applyRunSettings(body, model);
  if (refused) return sendJson(res, 400, { error: { message: refused.message, type: 'invalid_request_error', code: refused.code } });
  if (span && tracing?.captureContent) span.set({ 'gen_ai.input.messages': JSON.stringify(body.messages ?? null) });
  const streaming = body.stream === true;
  if (streaming) body.stream_options = { ...(body.stream_options ?? {}), include_usage: true };

  const abort = new AbortController();
  res.on('close', () => abort.abort());
  const url = new URL(`${model.baseUrl}/chat/completions`);
  let upstream: IncomingMessage;
  try {
    const payload = JSON.stringify(body);
    upstream = await connectPatiently(() => guardedRequest(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: streaming ? 'text/event-stream' : 'application/json',
        authorization: `Bearer ${model.apiKey}`,
        ...(span ? { traceparent: span.traceparent } : {}),
      },
      body: payload,
      signal: abort.signal,
      // a model may think for minutes before its first byte
      timeoutMs: 600_000,
      proxy: model.proxy ?? null,
    }, egress), abort.signal, connectRetryMs);
  } catch (err) {
    span?.fail(err instanceof EgressRefusal ? 'egress_refused' : 'upstream_unreachable');
    if (abort.signal.aborted) return;
    if (err instanceof ProxyFailure) {
      events.emit('log', { level: 'warn', message: `the organization's proxy gave no tunnel: ${err.message}` });
      return openAiError(res, 502, 'upstream_error', 'The model provider could not be reached through the organization\'s proxy.');
    }
    if (err instanceof EgressRefusal) {
      events.emit('log', { level: 'warn', message: `model provider refused by the egress guard: ${err.message}` });
      return openAiError(res, 502, 'upstream_error', 'The model provider address is not allowed.');
    }
    events.emit('log', { level: 'warn', message: 'model provider unreachable' });
    return openAiError(res, 502, 'upstream_error', 'The model provider could not be reached.');
  }

  const status = upstream.statusCode ?? 502;
  if (status < 200 || status >= 300) {
    // the provider's error body is not relayed: it may quote request details
    upstream.resume();
    span?.fail(`http_${status}`);
    events.emit('log', { level: 'warn', message: `model provider answered ${status}` });
    return openAiError(res, 502, 'upstream_error', `The model provider answered ${status}.`);
  }

  try {
    const contentType = upstream.headers['content-type'] ?? '';
    let usage: unknown;
    let answer: unknown;
    if (contentType.includes('text/event-stream')) {
      usage = await relayEventStream(upstream, res, 'the agent closed the stream');
      res.end();
    } else {
      const text = (await readBody(upstream)).toString('utf8');
      res.writeHead(status, { 'content-type': contentType || 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
      try {
        answer = JSON.parse(text);
        usage = (answer as { usage?: unknown } | null)?.usage;
      } catch {
        usage = undefined;
      }
    }
    if (span && tracing) recordAnswer(span, tracing, answer, usage);
    const metric = metricFrom(usage, model.model);
    if (metric) {
      events.emit('metric', metric);
      budget?.count(metric);
      // the call that reached the budget was answered; the run ends with it
      const reached = budget?.reached();
      if (reached) endOverBudget(events, reached);
    }
  } catch {
    span?.fail('response_broke_off');
    if (!res.headersSent) openAiError(res, 502, 'upstream_error', 'The model provider response broke off.');
    else res.destroy();
  }
}
