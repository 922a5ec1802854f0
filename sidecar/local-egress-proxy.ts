// The egress proxy of a run's local MCP servers (source.kind local): a forward proxy the sidecar
// serves on the run's MCP network, which each server is pointed at by the standard proxy variables.
// It takes plain HTTP requests in absolute form and HTTPS CONNECT tunnels. A server presents its own
// secret (the password of the proxy URL's userinfo): one without it is answered 407, so the proxy is
// each server's alone. A target must fall under that server's integration's literal authorized_uris
// (a CONNECT tunnel: its host and port), and then pass the egress guard (loopback, private and
// metadata addresses refused unless the operator allows the host, the platform's own endpoints
// always), connected to the address that was checked; through the organization's proxy when it has
// one. Redirects are the server's to follow: each one is a new request, judged the same way.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { literalAuthorizedHosts } from '../lib/afps/credential-delivery.ts';
import { matchesAuthorizedUri, parseAuthorizedUri } from '../lib/afps/authorized-uri.ts';
import { checkEgressTarget, EgressRefusal, effectivePort, guardedRequest, type EgressOptions } from '../lib/egress.ts';
import { openTunnel, ProxyFailure, requestThroughProxy, type OutboundProxy } from '../lib/proxy-tunnel.ts';

/** One local server the proxy serves. */
export interface LocalEgressClient {
  packageId: string;
  secret: string;
  authorizedUris: string[];
}

export interface LocalEgressProxyOptions {
  clients: LocalEgressClient[];
  /** the run's egress options: the operator's allowlist and the platform's endpoints */
  egress: EgressOptions;
  /** the organization's default outbound proxy; null: direct */
  proxy?: OutboundProxy | null;
  /** a line for the run's log (what was refused, never a secret) */
  note?: (message: string) => void;
}

/** a request body the proxy forwards at most */
const MAX_BODY_BYTES = 32 * 1024 * 1024;
const UPSTREAM_TIMEOUT_MS = 60_000;
/** headers of one hop only: never forwarded */
const HOP_HEADERS = new Set(['proxy-authorization', 'proxy-connection', 'connection', 'keep-alive', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'content-length']);

const digest = (s: string) => createHash('sha256').update(s).digest();

/** The client whose secret the request presents, or null. */
function authenticate(headers: IncomingHttpHeaders, clients: Array<LocalEgressClient & { digest: Buffer }>): (LocalEgressClient & { digest: Buffer }) | null {
  const header = headers['proxy-authorization'];
  const match = typeof header === 'string' ? /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header.trim()) : null;
  if (!match) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const presented = digest(decoded.slice(decoded.indexOf(':') + 1));
  // every client compared, in constant time each
  let found: (LocalEgressClient & { digest: Buffer }) | null = null;
  for (const client of clients) if (timingSafeEqual(presented, client.digest) && found === null) found = client;
  return found;
}

/** Whether a tunnel to host:port falls under one of the literal entries (any path; either scheme's port). */
function tunnelAuthorized(authorizedUris: string[], host: string, port: number): boolean {
  const hostPart = net.isIPv6(host) ? `[${host}]` : host;
  return authorizedUris.some((uri) => {
    const parsed = parseAuthorizedUri(uri);
    if (typeof parsed === 'string' || !parsed.literal) return false;
    const anyPath = `${parsed.scheme}://${parsed.host}${parsed.port === undefined ? '' : `:${parsed.port}`}/*`;
    return matchesAuthorizedUri(anyPath, `${parsed.scheme}://${hostPart}:${port}/`);
  });
}

/** host:port of a CONNECT request, or null. */
function connectAuthority(target: string | undefined): { host: string; port: number } | null {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:[\]/@]+)):(\d{1,5})$/.exec(target ?? '');
  if (!match) return null;
  const port = Number(match[3]);
  if (port < 1 || port > 65535) return null;
  return { host: (match[1] ?? match[2]).toLowerCase(), port };
}

/** Why the proxy did not reach a target: its status and its one-line reason. */
function failureOf(err: unknown, host: string): { status: number; reason: string } {
  if (err instanceof EgressRefusal) {
    if (err.kind === 'unresolvable') return { status: 502, reason: `upstream_unresolvable: the host ${host} does not resolve` };
    return { status: 403, reason: `blocked_target: ${err.message}` };
  }
  if (err instanceof ProxyFailure) {
    if (err.kind === 'blocked') return { status: 403, reason: `blocked_target: the organization's proxy: ${err.message}` };
    if (err.kind === 'timeout') return { status: 504, reason: `upstream_timeout: the organization's proxy: ${err.message}` };
    return { status: 502, reason: `upstream_unreachable: ${host} through the organization's proxy: ${err.message}` };
  }
  if (/timed out/i.test((err as Error)?.message ?? '')) return { status: 504, reason: `upstream_timeout: ${host} did not answer in time` };
  return { status: 502, reason: `upstream_unreachable: ${host} could not be reached` };
}

function answer(res: ServerResponse, status: number, reason: string, extra: Record<string, string> = {}): void {
  if (res.headersSent) return void res.destroy();
  const body = `${reason}\n`;
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close', ...extra });
  res.end(body);
}

function answerSocket(socket: Duplex, status: number, reason: string, extra: Record<string, string> = {}): void {
  const body = `${reason}\n`;
  const head = [`HTTP/1.1 ${status} ${status === 407 ? 'Proxy Authentication Required' : status === 403 ? 'Forbidden' : 'Bad Gateway'}`,
    'content-type: text/plain; charset=utf-8', `content-length: ${Buffer.byteLength(body)}`, 'connection: close',
    ...Object.entries(extra).map(([k, v]) => `${k}: ${v}`)];
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
}

const CHALLENGE = { 'proxy-authenticate': 'Basic realm="local-integration"' };

async function readCapped(req: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export interface LocalEgressProxy {
  readonly server: Server;
  listen(host: string, port: number): Promise<number>;
  close(): Promise<void>;
}

export function localEgressProxy(opts: LocalEgressProxyOptions): LocalEgressProxy {
  const clients = opts.clients.map((c) => ({ ...c, digest: digest(c.secret) }));
  const egressOf = (client: LocalEgressClient): EgressOptions => ({ ...opts.egress, authorizedHosts: literalAuthorizedHosts(client.authorizedUris) });
  const refused = (client: LocalEgressClient, reason: string) => opts.note?.(`the local MCP server of ${client.packageId}: ${reason}`);

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    void (async () => {
      const client = authenticate(req.headers, clients);
      if (!client) {
        req.resume();
        return answer(res, 407, 'proxy_authentication_required: present the proxy URL your environment names', CHALLENGE);
      }
      let url: URL;
      try {
        url = new URL(req.url ?? '');
      } catch {
        req.resume();
        return answer(res, 400, 'invalid_request: a proxy request names an absolute http(s) URL');
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        req.resume();
        return answer(res, 400, 'invalid_request: a proxy request names an absolute http(s) URL');
      }
      if (!client.authorizedUris.some((uri) => matchesAuthorizedUri(uri, url.href))) {
        req.resume();
        const reason = `unauthorized_target: ${url.origin} is not under the integration's authorized_uris`;
        refused(client, reason);
        return answer(res, 403, reason);
      }
      const body = await readCapped(req);
      if (body === null) return answer(res, 413, `payload_too_large: request bodies are limited to ${MAX_BODY_BYTES} bytes`);
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        // Host is the URL's (set from it), whatever the client wrote
        if (value === undefined || HOP_HEADERS.has(name) || name === 'host') continue;
        headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      const init = { method: req.method, headers, body: body.length || !['GET', 'HEAD'].includes(req.method ?? 'GET') ? body : undefined, timeoutMs: UPSTREAM_TIMEOUT_MS };
      let upstream: IncomingMessage;
      try {
        upstream = opts.proxy
          ? await requestThroughProxy(url, init, opts.proxy, { target: egressOf(client), proxy: opts.egress })
          : await guardedRequest(url, { ...init, agent: false }, egressOf(client));
      } catch (err) {
        const { status, reason } = failureOf(err, url.host);
        refused(client, reason);
        return answer(res, status, reason);
      }
      const out: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(upstream.headers)) {
        if (value !== undefined && !HOP_HEADERS.has(name)) out[name] = value;
      }
      res.writeHead(upstream.statusCode ?? 502, out);
      upstream.pipe(res);
      upstream.on('error', () => res.destroy());
    })().catch(() => answer(res, 502, 'upstream_unreachable: the proxy failed'));
  };

  const tunnels = new Set<Duplex>();
  const onConnect = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => undefined);
    tunnels.add(socket);
    socket.on('close', () => tunnels.delete(socket));
    void (async () => {
      const client = authenticate(req.headers, clients);
      if (!client) return answerSocket(socket, 407, 'proxy_authentication_required: present the proxy URL your environment names', CHALLENGE);
      const authority = connectAuthority(req.url);
      if (!authority) return answerSocket(socket, 400, 'invalid_request: CONNECT names host:port');
      const { host, port } = authority;
      if (!tunnelAuthorized(client.authorizedUris, host, port)) {
        const reason = `unauthorized_target: ${req.url} is not under the integration's authorized_uris`;
        refused(client, reason);
        return answerSocket(socket, 403, reason);
      }
      let upstream: net.Socket;
      try {
        // judged as the tunnel's URL; the connection goes to the checked address
        const target = await checkEgressTarget(`http://${net.isIPv6(host) ? `[${host}]` : host}:${port}/`, egressOf(client));
        upstream = opts.proxy
          ? await openTunnel(opts.proxy, target, opts.egress, { timeoutMs: UPSTREAM_TIMEOUT_MS })
          : await new Promise<net.Socket>((resolve, reject) => {
            const s = net.connect({ host: target.addresses[0], port: effectivePort(target.url), timeout: UPSTREAM_TIMEOUT_MS });
            s.once('connect', () => {
              s.setTimeout(0);
              resolve(s);
            });
            s.once('timeout', () => s.destroy(new Error(`the connection to ${host} timed out`)));
            s.once('error', reject);
          });
      } catch (err) {
        const { status, reason } = failureOf(err, `${host}:${port}`);
        refused(client, reason);
        return answerSocket(socket, status, reason);
      }
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
      socket.on('close', () => upstream.destroy());
      upstream.on('close', () => socket.destroy());
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      socket.pipe(upstream);
      upstream.pipe(socket);
    })().catch(() => socket.destroy());
  };

  const server = createServer(onRequest);
  server.on('connect', onConnect);
  return {
    server,
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
      });
    },
    close() {
      server.closeAllConnections();
      for (const socket of tunnels) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
