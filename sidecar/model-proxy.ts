// The agent's OpenAI-compatible model endpoint: forwards chat completions, and the Responses API and
// embeddings where the provider offers them, to the assigned provider with the real key; forces the
// assigned model (embeddings: one of the models the run may embed with), and turns each call's usage
// into a metric event counted against the run's budget.
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
import type { ModelAssignment, SidecarModelEndpoint } from './assignment.ts';
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
  // chat completions and embeddings say prompt/completion, the Responses API input/output
  const prompt = Number(usage.prompt_tokens ?? usage.input_tokens) || 0;
  const completion = Number(usage.completion_tokens ?? usage.output_tokens) || 0;
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

type Refusal = { code: string; message: string };

/**
 * A call's temperature and reasoning effort: its own, else the run's; checked against what the
 * model accepts. Answers the refusal (reasoning_unsupported, reasoning_level_unsupported,
 * temperature_unsupported, temperature_with_reasoning_unsupported), or the settings to send.
 */
function runSettings(given: { temperature: unknown; reasoningEffort: unknown }, model: ModelAssignment): Refusal | { temperature: number | null; reasoningEffort: string | null } {
  if (given.temperature != null && typeof given.temperature !== 'number') return { code: 'invalid_request', message: 'temperature must be a number.' };
  if (given.reasoningEffort != null && typeof given.reasoningEffort !== 'string') return { code: 'invalid_request', message: 'The reasoning effort must be a string.' };
  const settings = layeredSettings(
    { temperature: given.temperature as number | null | undefined, reasoningEffort: given.reasoningEffort as string | null | undefined },
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
  return { temperature: settings.temperature ?? null, reasoningEffort: settings.reasoningEffort ?? null };
}

const isRefusal = (v: object): v is Refusal => 'code' in v;

/** What the endpoint asks of a call's body; makes it ready for the provider, answers the model called or a refusal. */
interface EndpointRules {
  /** the body is a request of this endpoint (else its invalid_request message) */
  shapeError(body: Record<string, any>): string | null;
  prepare(body: Record<string, any>, model: ModelAssignment): Refusal | { model: string };
}

const ENDPOINTS: Record<ModelEndpointPath, EndpointRules> = {
  'chat/completions': {
    shapeError: () => null,
    prepare(body, model) {
      body.model = model.model;
      const settings = runSettings({ temperature: body.temperature, reasoningEffort: body.reasoning_effort }, model);
      if (isRefusal(settings)) return settings;
      if (settings.temperature !== null) body.temperature = settings.temperature;
      if (settings.reasoningEffort !== null) body.reasoning_effort = settings.reasoningEffort;
      // the usage of a streamed answer comes in its last chunk only when asked for
      if (body.stream === true) body.stream_options = { ...(body.stream_options ?? {}), include_usage: true };
      return { model: model.model };
    },
  },
  responses: {
    shapeError(body) {
      if (typeof body.input !== 'string' && !Array.isArray(body.input)) return 'The body must be a Responses API request with input (a string or an array of items).';
      if (body.reasoning != null && (typeof body.reasoning !== 'object' || Array.isArray(body.reasoning))) return 'reasoning must be an object.';
      return null;
    },
    prepare(body, model) {
      body.model = model.model;
      const reasoning = body.reasoning ?? {};
      const settings = runSettings({ temperature: body.temperature, reasoningEffort: reasoning.effort }, model);
      if (isRefusal(settings)) return settings;
      if (settings.temperature !== null) body.temperature = settings.temperature;
      if (settings.reasoningEffort !== null) body.reasoning = { ...reasoning, effort: settings.reasoningEffort };
      return { model: model.model };
    },
  },
  embeddings: {
    shapeError(body) {
      const input = body.input;
      if (typeof input !== 'string' && !(Array.isArray(input) && input.length > 0)) return 'The body must be an embeddings request with input (a string or a non-empty array).';
      if (body.model !== undefined && typeof body.model !== 'string') return 'model must be a string.';
      return null;
    },
    prepare(body, model) {
      // the model the body names among those the run may embed with (same credential), else the run's
      const named = body.model;
      if (named === undefined || named === model.model) {
        body.model = model.model;
        return { model: model.model };
      }
      if (!(model.embeddingModels ?? []).includes(named)) {
        return { code: 'model_not_configured', message: `The run cannot embed with ${JSON.stringify(named)}: name the run's model or a model of the organization on the same credential.` };
      }
      return { model: named };
    },
  },
};

export type ModelEndpointPath = 'chat/completions' | SidecarModelEndpoint;

/** Ends the run failed with the budget's code (once: a later end is not queued). */
function endOverBudget(events: EventPoster, reached: { code: string; message: string }): void {
  if (events.ended) return;
  events.emit('failed', { code: reached.code, message: reached.message });
}

/**
 * One model call of the agent, to `endpoint` of the assigned provider. An endpoint other than chat
 * completions that the provider does not offer (the assignment's offers, or a 404 from it) is
 * 400 model_not_offered.
 */
export async function proxyModelCall(
  res: ServerResponse,
  endpoint: ModelEndpointPath,
  rawBody: Buffer,
  model: ModelAssignment | null,
  events: EventPoster,
  egress: EgressOptions = { allowInternalHosts: [] },
  budget?: ModelBudget,
  connectRetryMs = MODEL_CONNECT_RETRY_MS,
  tracing?: SidecarTracing,
): Promise<void> {
  if (!model || !tracing?.recording) return forwardModelCall(res, endpoint, rawBody, model, events, egress, budget, connectRetryMs, null, tracing);
  const operation = endpoint === 'embeddings' ? 'embeddings' : 'chat';
  const span = tracing.start(`${operation} ${model.model}`, {
    'gen_ai.operation.name': operation,
    'gen_ai.provider.name': tracing.provider,
    'gen_ai.request.model': model.model,
  }, 'client');
  try {
    await forwardModelCall(res, endpoint, rawBody, model, events, egress, budget, connectRetryMs, span, tracing);
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
    // chat completions say prompt/completion tokens, the Responses API input/output tokens
    const input = Number(usage.prompt_tokens ?? usage.input_tokens);
    const output = Number(usage.completion_tokens ?? usage.output_tokens);
    if (Number.isFinite(input)) span.set({ 'gen_ai.usage.input_tokens': input });
    if (Number.isFinite(output)) span.set({ 'gen_ai.usage.output_tokens': output });
  }
  if (tracing.captureContent && Array.isArray(answer?.choices)) {
    span.set({ 'gen_ai.output.messages': JSON.stringify(answer.choices.map((c: any) => c?.message ?? null)) });
  }
  tracing.noteToolCalls(answer);
}

async function forwardModelCall(
  res: ServerResponse,
  endpoint: ModelEndpointPath,
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
  if (endpoint !== 'chat/completions' && !(model.offers ?? []).includes(endpoint)) {
    return sendJson(res, 400, { error: { message: `The run's model provider does not offer /${endpoint}.`, type: 'invalid_request_error', code: 'model_not_offered' } });
  }
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
  const rules = ENDPOINTS[endpoint];
  const shapeError = rules.shapeError(body);
  if (shapeError) return openAiError(res, 400, 'invalid_request_error', shapeError);
  const prepared = rules.prepare(body, model);
  if (isRefusal(prepared)) return sendJson(res, 400, { error: { message: prepared.message, type: 'invalid_request_error', code: prepared.code } });
  if (span && tracing?.captureContent) span.set({ 'gen_ai.input.messages': JSON.stringify(body.messages ?? body.input ?? null) });
  const streaming = body.stream === true;

  const abort = new AbortController();
  res.on('close', () => abort.abort());
  const url = new URL(`${model.baseUrl}/${endpoint}`);
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
  if (status === 404 && endpoint !== 'chat/completions') {
    // an OpenAI-compatible server without the endpoint, or without it for this model
    upstream.resume();
    span?.fail('model_not_offered');
    return sendJson(res, 400, { error: { message: `The run's model provider answered 404 for /${endpoint} (no such endpoint or model).`, type: 'invalid_request_error', code: 'model_not_offered' } });
  }
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
    const metric = metricFrom(usage, prepared.model);
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
