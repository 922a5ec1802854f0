// Calls to a model provider: its model list and a one-token chat completion. Every call goes
// through the egress guard and has a deadline; failures become the catalog's codes
// (network_error, provider_error, timeout, model_not_offered, blocked_url). The API key never
// appears in an answer: provider messages are cut short and scrubbed of it.
import { performance } from 'node:perf_hooks';
import { EgressRefusal, guardedFetch, type EgressOptions } from '../../../lib/egress.ts';
import { isProblem, problem } from '../../../lib/problem.ts';
import { ProxyFailure, type OutboundProxy } from '../../../lib/proxy-tunnel.ts';
import { normalizeBaseUrl, providerAdapter } from './providers.ts';

export interface ProviderTarget {
  provider: string;
  baseUrl: string;
  apiKey: string | null;
}

export interface ProviderCallOptions {
  egress: EgressOptions;
  /** deadline of the whole call, answer included */
  timeoutMs?: number;
  /** the organization's default proxy: the call goes through it */
  proxy?: OutboundProxy | null;
}

export interface OfferedModel {
  id: string;
  owned_by: string | null;
  /** given by catalogs such as OpenRouter's */
  name: string | null;
  context_length: number | null;
}

export interface ChatSettings {
  temperature?: number | null;
  reasoningEffort?: string | null;
}

const LIST_TIMEOUT_MS = 10_000;
const CHAT_TIMEOUT_MS = 30_000;
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
const MAX_MESSAGE_CHARS = 300;

interface ProviderAnswer {
  status: number;
  json: unknown;
  latencyMs: number;
}

async function readCapped(res: Response): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_ANSWER_BYTES) {
      await reader.cancel().catch(() => {});
      throw problem('provider_error', { detail: 'The provider answer is too large.', extra: { provider_status: res.status } });
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The provider's own error message, short and without the key. */
function providerMessage(json: unknown, apiKey: string | null): string {
  const j = json as { error?: unknown; message?: unknown } | undefined;
  const err = j?.error as { message?: unknown } | string | undefined;
  let text = typeof err === 'string' ? err : typeof err?.message === 'string' ? err.message : typeof j?.message === 'string' ? j.message : '';
  if (apiKey) text = text.split(apiKey).join('[redacted]');
  return text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}…` : text;
}

/** The catalog problem for a refused outbound target. */
export function egressRefusalProblem(err: EgressRefusal) {
  if (err.kind === 'unresolvable') return problem('network_error', { detail: `The provider could not be reached: ${err.message}` });
  if (err.kind === 'invalid_url') {
    return problem('validation_failed', { detail: err.message, errors: [{ field: 'base_url', code: 'invalid_format', message: err.message }] });
  }
  return problem('blocked_url', {
    detail: `${err.message} Internal hosts are reachable only when the operator lists them in EGRESS_ALLOW_INTERNAL_HOSTS.`,
    errors: [{ field: 'base_url', code: 'invalid_value', message: 'Resolves to a private or reserved address.' }],
  });
}

async function send(target: ProviderTarget, path: string, body: unknown, opts: ProviderCallOptions, defaultTimeoutMs: number): Promise<ProviderAnswer> {
  const adapter = providerAdapter(target.provider);
  if (!adapter) throw problem('model_provider_unregistered', { detail: `The provider "${target.provider}" is not registered on this instance.` });
  const timeoutMs = opts.timeoutMs ?? defaultTimeoutMs;
  const url = `${normalizeBaseUrl(target.baseUrl)}${path}`;
  const headers: Record<string, string> = { accept: 'application/json', ...(target.apiKey ? adapter.authHeaders(target.apiKey) : {}) };
  let payload: string | undefined;
  if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['content-type'] = 'application/json';
  }
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  const started = performance.now();
  try {
    const res = await guardedFetch(url, {
      method: body === undefined ? 'GET' : 'POST',
      headers,
      body: payload,
      signal: deadline.signal,
      // the socket's idle timer stays behind the deadline, so a slow answer reads as a timeout
      timeoutMs: timeoutMs + 1_000,
      maxRedirects: 2,
      proxy: opts.proxy ?? null,
    }, opts.egress);
    const text = await readCapped(res);
    return { status: res.status, json: parseJson(text), latencyMs: Math.round(performance.now() - started) };
  } catch (err) {
    if (err instanceof EgressRefusal) throw egressRefusalProblem(err);
    if (err instanceof ProxyFailure) {
      if (err.kind === 'timeout' || deadline.signal.aborted) throw problem('timeout', { detail: `The provider did not answer within ${Math.round(timeoutMs / 100) / 10} s (through the organization's proxy).` });
      throw problem('network_error', { detail: `The provider could not be reached through the organization's default proxy: ${err.message}` });
    }
    if (isProblem(err)) throw err;
    if (deadline.signal.aborted) throw problem('timeout', { detail: `The provider did not answer within ${Math.round(timeoutMs / 100) / 10} s.` });
    const code = (err as { code?: string }).code ?? (err as { cause?: { code?: string } }).cause?.code;
    throw problem('network_error', { detail: `The provider at ${new URL(url).host} could not be reached${code ? ` (${code})` : ''}.` });
  } finally {
    clearTimeout(timer);
  }
}

function providerError(answer: ProviderAnswer, apiKey: string | null) {
  const message = providerMessage(answer.json, apiKey);
  return problem('provider_error', {
    detail: `The provider answered ${answer.status}${message ? `: ${message}` : '.'}`,
    extra: { provider_status: answer.status },
  });
}

/** A 404, or a 400 that names a missing model: the provider does not offer it. */
function isModelNotFound(answer: ProviderAnswer): boolean {
  if (answer.status !== 404 && answer.status !== 400) return false;
  const err = (answer.json as { error?: { code?: unknown; type?: unknown } } | undefined)?.error;
  if (err && typeof err === 'object' && (err.code === 'model_not_found' || err.type === 'model_not_found')) return true;
  const message = providerMessage(answer.json, null).toLowerCase();
  return message.includes('model') && /not found|does not exist|not exist|unknown model|no such model/.test(message);
}

function modelsPath(provider: string): string {
  // Anthropic pages its list at 20 by default
  return provider === 'anthropic' ? '/models?limit=1000' : '/models';
}

/** GET {base}/models: the models the credential offers, sorted by id. */
export async function listProviderModels(target: ProviderTarget, opts: ProviderCallOptions): Promise<{ models: OfferedModel[]; latencyMs: number }> {
  const answer = await send(target, modelsPath(target.provider), undefined, opts, LIST_TIMEOUT_MS);
  if (answer.status < 200 || answer.status >= 300) throw providerError(answer, target.apiKey);
  const json = answer.json as { data?: unknown } | unknown[] | undefined;
  const list = Array.isArray(json) ? json : Array.isArray((json as { data?: unknown })?.data) ? ((json as { data: unknown[] }).data) : null;
  if (!list) throw problem('provider_error', { detail: 'The provider answer is not a model list.', extra: { provider_status: answer.status } });
  const models: OfferedModel[] = [];
  for (const entry of list) {
    const e = entry as { id?: unknown; owned_by?: unknown; name?: unknown; display_name?: unknown; context_length?: unknown };
    if (typeof e?.id !== 'string' || e.id === '') continue;
    const name = typeof e.name === 'string' ? e.name : typeof e.display_name === 'string' ? e.display_name : null;
    models.push({
      id: e.id,
      owned_by: typeof e.owned_by === 'string' ? e.owned_by : null,
      name,
      context_length: typeof e.context_length === 'number' ? e.context_length : null,
    });
  }
  models.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { models, latencyMs: answer.latencyMs };
}

/** POST {base}/chat/completions capped at one token: proves the key, the model and the settings. */
export async function probeChatCompletion(
  target: ProviderTarget,
  model: string,
  settings: ChatSettings,
  opts: ProviderCallOptions,
): Promise<{ latencyMs: number; finishReason: string | null }> {
  const adapter = providerAdapter(target.provider);
  const body: Record<string, unknown> = {
    model,
    messages: [{ role: 'user', content: 'Reply with one word.' }],
    [adapter?.maxTokensField ?? 'max_tokens']: 1,
    stream: false,
  };
  if (settings.temperature != null) body.temperature = settings.temperature;
  if (settings.reasoningEffort != null) body.reasoning_effort = settings.reasoningEffort;
  const answer = await send(target, '/chat/completions', body, opts, CHAT_TIMEOUT_MS);
  if (answer.status < 200 || answer.status >= 300) {
    if (isModelNotFound(answer)) {
      throw problem('model_not_offered', { detail: `The provider does not offer the model "${model}".`, extra: { provider_status: answer.status } });
    }
    throw providerError(answer, target.apiKey);
  }
  const choice = (answer.json as { choices?: Array<{ finish_reason?: unknown }> } | undefined)?.choices?.[0];
  if (!choice) throw problem('provider_error', { detail: 'The provider answer is not a chat completion.', extra: { provider_status: answer.status } });
  return { latencyMs: answer.latencyMs, finishReason: typeof choice.finish_reason === 'string' ? choice.finish_reason : null };
}
