// One call of the LLM proxy to the model's provider, with the organization's key (only in the auth
// header), through the egress guard and the organization's default proxy. The provider's answer
// goes back as it is: an event stream relayed piece by piece (lib/event-stream-relay.ts), JSON
// written whole; the caller ends the response once the usage is in the ledger. An endpoint the
// provider does not offer (its adapter says so, or it answers 404) is 400 model_not_offered.
import type { IncomingMessage } from 'node:http';
import { EgressRefusal, guardedRequest } from '../../../lib/egress.ts';
import { relayEventStream } from '../../../lib/event-stream-relay.ts';
import { readBody } from '../../../lib/outbound-http.ts';
import { problem } from '../../../lib/problem.ts';
import { ProxyFailure } from '../../../lib/proxy-tunnel.ts';
import { proxyFailureProblem } from '../../modules/core-providers/proxies.ts';
import { providerAdapter, type ModelEndpoint } from '../../modules/core-providers/providers.ts';
import type { RunModel } from '../../modules/core-providers/resolve-model.ts';
import type { AppDeps } from '../../deps.ts';
import type { Response } from '../../http.ts';

export type ProxiedEndpoint = 'chat/completions' | ModelEndpoint;

export interface ProviderAnswer {
  /** the usage the answer carried (undefined for a refusal or an answer without one) */
  usage: unknown;
  /** a JSON answer's text, still to be written (res.end) once the ledger has it; undefined for a relayed stream */
  text: string | undefined;
}

const notOffered = (model: RunModel, endpoint: ProxiedEndpoint, detail: string) =>
  problem('model_not_offered', { detail: `${model.provider} (model ${model.model}) ${detail} /${endpoint}.` });

/** 400 model_not_offered when the model's provider does not serve the endpoint. */
export function requireOffered(model: RunModel, endpoint: ProxiedEndpoint): void {
  if (endpoint === 'chat/completions') return;
  if (!providerAdapter(model.provider)?.offers.includes(endpoint)) throw notOffered(model, endpoint, 'does not offer');
}

export async function callProvider(deps: AppDeps, model: RunModel, endpoint: ProxiedEndpoint, body: Record<string, unknown>, res: Response): Promise<ProviderAnswer> {
  const streaming = body.stream === true;
  const abort = new AbortController();
  res.on('close', () => abort.abort());
  let upstream: IncomingMessage;
  try {
    upstream = await guardedRequest(`${model.baseUrl}/${endpoint}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: streaming ? 'text/event-stream' : 'application/json', authorization: `Bearer ${model.apiKey}` },
      body: JSON.stringify(body),
      signal: abort.signal,
      timeoutMs: 600_000,
      // the organization's default proxy, when it has one (api/modules/core-providers/proxies.ts)
      proxy: model.proxy,
    }, { allowInternalHosts: deps.config.EGRESS_ALLOW_INTERNAL_HOSTS, platformEndpoints: deps.platformEndpoints });
  } catch (err) {
    if (err instanceof ProxyFailure) throw proxyFailureProblem(err);
    if (err instanceof EgressRefusal) {
      throw problem(err.kind === 'unresolvable' ? 'upstream_unresolvable' : 'blocked_target', { detail: `The model provider: ${err.message}` });
    }
    if (/timed out/i.test((err as Error).message)) throw problem('upstream_timeout', { detail: 'The model provider did not answer in time.' });
    throw problem('upstream_unreachable', { detail: 'The model provider could not be reached.' });
  }

  const status = upstream.statusCode ?? 502;
  const contentType = upstream.headers['content-type'] ?? '';
  if (status >= 200 && status < 300 && contentType.includes('text/event-stream')) {
    return { usage: await relayEventStream(upstream, res, 'the caller went away'), text: undefined };
  }
  // the provider's own answer, errors included: an OpenAI client reads them as it would the provider's
  const text = (await readBody(upstream)).toString('utf8');
  if (status === 404 && endpoint !== 'chat/completions') throw notOffered(model, endpoint, 'answered 404 (no such endpoint or model) for');
  res.writeHead(status, { 'content-type': contentType || 'application/json', 'content-length': Buffer.byteLength(text) });
  let usage: unknown;
  if (status >= 200 && status < 300) {
    try {
      usage = JSON.parse(text)?.usage;
    } catch {
      usage = undefined;
    }
  }
  return { usage, text };
}
