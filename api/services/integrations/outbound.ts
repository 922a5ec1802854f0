// The integration layer's own outbound requests (login, OAuth token calls, the credential proxy),
// all through the egress guard: connected to the checked address, or tunnelled through the
// organization's default proxy when it has one (every caller asks proxyRouteOf once per
// operation), no redirect followed, a deadline, a capped body. Refusals and failures map to the
// catalog.
import type { IncomingMessage } from 'node:http';
import { EgressRefusal, guardedRequest, type EgressOptions } from '../../../lib/egress.ts';
import { ProxyFailure, requestThroughProxy, type OutboundProxy } from '../../../lib/proxy-tunnel.ts';
import { defaultProxyOf, proxyFailureProblem } from '../../modules/core-providers/proxies.ts';
import { isProblem, problem, type ProblemError } from '../../../lib/problem.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import type { OrgScope } from '../../../db/tenant.ts';

export interface OutboundAnswer {
  status: number;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

export interface OutboundCall {
  method: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  timeoutMs: number;
  maxBytes: number;
  /** what a deadline overrun answers (504 timeout for a login, upstream_timeout for the proxy) */
  onTimeout: () => ProblemError;
  /** the organization's outbound proxy and the rules it answers to; null: direct */
  via: ProxyRoute | null;
}

/** A call's way through the organization's proxy: the proxy and the rules it answers to (the operator's, not the target's). */
export interface ProxyRoute {
  proxy: OutboundProxy;
  egress: EgressOptions;
}

/**
 * The organization's default proxy as a call's route, judged by `deps.egress` (the operator's
 * rules: never an integration's); null when it has none (its calls go direct).
 */
export async function proxyRouteOf(scope: Pick<OrgScope, 'pool' | 'orgId'>, deps: { secrets: SecretBox; egress: EgressOptions }): Promise<ProxyRoute | null> {
  const proxy = await defaultProxyOf(scope, deps);
  return proxy ? { proxy, egress: deps.egress } : null;
}

export function egressProblem(err: EgressRefusal): ProblemError {
  if (err.kind === 'unresolvable') return problem('upstream_unresolvable', { detail: err.message });
  if (err.kind === 'invalid_url') return problem('blocked_target', { detail: err.message });
  return problem('blocked_target', { detail: `${err.message} Internal hosts are reachable only when the integration names them literally in authorized_uris and the operator lists them in EGRESS_ALLOW_INTERNAL_HOSTS.` });
}

/** One guarded request whose body is read whole (up to maxBytes, else 502 upstream_unreachable). */
export async function outbound(url: string, call: OutboundCall, egress: EgressOptions): Promise<OutboundAnswer> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), call.timeoutMs);
  try {
    const init = { method: call.method, headers: call.headers, body: call.body, signal: deadline.signal, timeoutMs: call.timeoutMs + 1000 };
    const res = call.via
      ? await requestThroughProxy(url, init, call.via.proxy, { target: egress, proxy: call.via.egress })
      : await guardedRequest(url, { ...init, agent: false }, egress);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res) {
      size += (chunk as Buffer).length;
      if (size > call.maxBytes) {
        res.destroy();
        throw problem('upstream_unreachable', { detail: `The answer of ${new URL(url).host} exceeds ${call.maxBytes} bytes.` });
      }
      chunks.push(chunk as Buffer);
    }
    return { status: res.statusCode ?? 502, headers: res.headers, body: Buffer.concat(chunks) };
  } catch (err) {
    if (err instanceof EgressRefusal) throw egressProblem(err);
    if (isProblem(err)) throw err;
    if (deadline.signal.aborted) throw call.onTimeout();
    if (err instanceof ProxyFailure) throw proxyFailureProblem(err);
    const code = (err as { code?: string }).code;
    throw problem('upstream_unreachable', { detail: `${new URL(url).host} could not be reached${code ? ` (${code})` : ''}.` });
  } finally {
    clearTimeout(timer);
  }
}

/** The cookies a response set: name → value (attributes dropped). */
export function setCookies(headers: IncomingMessage['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of headers['set-cookie'] ?? []) {
    const pair = line.split(';', 1)[0];
    const eq = pair.indexOf('=');
    if (eq > 0) out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return out;
}

/** Header values as one string each (repeated headers joined), for the login evaluation. */
export function flatHeaders(headers: IncomingMessage['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}
