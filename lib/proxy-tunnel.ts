// Tunnels through an organization's outbound HTTP proxy (HTTP CONNECT). The egress guard judges
// both ends: the proxy's own address, and the target, which was checked before the tunnel opens;
// the proxy is asked to connect to the target's checked address (never to a name it would
// resolve itself), and TLS to an https target runs end to end inside the tunnel, verified
// against the target's host name.
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import { checkEgressTarget, effectivePort, EgressRefusal, trustedCa, type CheckedTarget, type EgressOptions } from './egress.ts';
import { openRequest, responseOf, type OutboundInit } from './outbound-http.ts';

/** An HTTP CONNECT proxy: http://host:port, and its Basic credentials when it takes some. */
export interface OutboundProxy {
  url: string;
  username?: string | null;
  password?: string | null;
}

export type ProxyFailureKind = 'blocked' | 'unresolvable' | 'unreachable' | 'refused' | 'auth_required' | 'timeout';

/** The proxy could not give a tunnel: refused by the egress guard, down, or it said no. */
export class ProxyFailure extends Error {
  readonly kind: ProxyFailureKind;
  /** the proxy's answer to CONNECT, when it gave one */
  readonly status?: number;
  constructor(kind: ProxyFailureKind, message: string, status?: number) {
    super(message);
    this.name = 'ProxyFailure';
    this.kind = kind;
    this.status = status;
  }
}

const MAX_HEAD_BYTES = 16 * 1024;

function authority(address: string, port: number): string {
  return `${net.isIPv6(address) ? `[${address}]` : address}:${port}`;
}

/** Reads the proxy's answer to CONNECT: its status. */
function readConnectAnswer(socket: net.Socket): Promise<number> {
  return new Promise((resolve, reject) => {
    let head = Buffer.alloc(0);
    const done = (err: Error | null, status?: number) => {
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      if (err) reject(err);
      else resolve(status!);
    };
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > MAX_HEAD_BYTES) done(new ProxyFailure('refused', 'The proxy answered CONNECT with an oversized head.'));
        return;
      }
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(head.subarray(0, end).toString('latin1'));
      if (!match) return done(new ProxyFailure('refused', 'The proxy did not answer CONNECT with HTTP.'));
      // the client speaks first in the tunnel (a request, or a TLS hello): nothing may precede it
      if (head.length > end + 4) return done(new ProxyFailure('refused', 'The proxy sent data before the tunnel was used.'));
      done(null, Number(match[1]));
    };
    const onError = (err: Error) => done(new ProxyFailure('unreachable', `The proxy connection failed: ${(err as { code?: string }).code ?? err.message}.`));
    const onClose = () => done(new ProxyFailure('unreachable', 'The proxy closed the connection before answering CONNECT.'));
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
  });
}

/**
 * A socket to the checked target through the proxy (TLS already up for https targets). Throws
 * ProxyFailure; the target itself must have passed checkEgressTarget.
 */
export async function openTunnel(
  proxy: OutboundProxy,
  target: CheckedTarget,
  egress: EgressOptions,
  init: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<net.Socket> {
  let proxyTarget: CheckedTarget;
  try {
    proxyTarget = await checkEgressTarget(proxy.url, egress);
  } catch (err) {
    if (!(err instanceof EgressRefusal)) throw err;
    throw new ProxyFailure(err.kind === 'unresolvable' ? 'unresolvable' : 'blocked', `The proxy: ${err.message}`);
  }
  const timeoutMs = init.timeoutMs ?? 30_000;
  const proxyPort = effectivePort(proxyTarget.url);
  const socket = net.connect({ host: proxyTarget.addresses[0], port: proxyPort });
  const timer = setTimeout(() => socket.destroy(new ProxyFailure('timeout', `The proxy did not open a tunnel within ${timeoutMs} ms.`)), timeoutMs);
  const onAbort = () => socket.destroy(new ProxyFailure('timeout', 'The call was abandoned before the tunnel opened.'));
  init.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const to = authority(target.addresses[0], effectivePort(target.url));
    const headers = [`CONNECT ${to} HTTP/1.1`, `Host: ${to}`];
    if (proxy.username) headers.push(`Proxy-Authorization: Basic ${Buffer.from(`${proxy.username}:${proxy.password ?? ''}`).toString('base64')}`);
    socket.write(`${headers.join('\r\n')}\r\n\r\n`);
    let status: number;
    try {
      status = await readConnectAnswer(socket);
    } catch (err) {
      // a destroy() for the deadline or the abort carries its own reason
      const reason = (socket as { errored?: unknown }).errored;
      throw reason instanceof ProxyFailure ? reason : err;
    }
    if (status === 407) throw new ProxyFailure('auth_required', 'The proxy refused the credentials (407).', 407);
    if (status < 200 || status >= 300) throw new ProxyFailure('refused', `The proxy refused the tunnel (${status}).`, status);
    if (target.url.protocol !== 'https:') return socket;
    const host = target.url.hostname.replace(/^\[(.*)\]$/, '$1');
    const ca = trustedCa(egress);
    const secure = tls.connect({ socket, servername: net.isIP(host) ? undefined : host, ALPNProtocols: ['http/1.1'], ...(ca ? { ca } : {}) });
    await new Promise<void>((resolve, reject) => {
      secure.once('secureConnect', () => resolve());
      secure.once('error', (err) => reject(new ProxyFailure('unreachable', `TLS through the proxy failed: ${(err as { code?: string }).code ?? err.message}.`)));
    });
    return secure;
  } catch (err) {
    socket.destroy();
    throw err;
  } finally {
    clearTimeout(timer);
    init.signal?.removeEventListener('abort', onAbort);
  }
}

/** The rules each end of a proxied call answers to. */
export interface ProxiedEgress {
  /** the target's: an integration's also require an internal host to be named in its authorized_uris */
  target: EgressOptions;
  /** the proxy's: the organization's proxy answers to the operator's rules only */
  proxy: EgressOptions;
}

/**
 * One request through the proxy, the target and the proxy judged by their own rules: the target is
 * checked first, so a target the guard refuses never reaches the proxy. No redirect is followed.
 */
export async function requestThroughProxy(
  rawUrl: string | URL,
  init: Omit<OutboundInit, 'lookup' | 'socket' | 'agent'>,
  proxy: OutboundProxy,
  egress: ProxiedEgress,
): Promise<IncomingMessage> {
  const target = await checkEgressTarget(rawUrl, egress.target);
  const socket = await openTunnel(proxy, target, egress.proxy, init);
  return openRequest(target.url, { ...init, socket });
}

/** requestThroughProxy answered as a fetch Response (for clients that take a fetch function). */
export async function fetchThroughProxy(
  rawUrl: string | URL,
  init: Omit<OutboundInit, 'lookup' | 'socket' | 'agent'>,
  proxy: OutboundProxy,
  egress: ProxiedEgress,
): Promise<Response> {
  return responseOf(await requestThroughProxy(rawUrl, init, proxy, egress), init.method);
}
