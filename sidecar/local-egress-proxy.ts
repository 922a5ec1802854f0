// The egress proxy of a run's local MCP servers (source.kind local): a forward proxy the sidecar
// serves on the run's MCP network, which each server is pointed at by the standard proxy variables.
// It takes plain HTTP requests in absolute form and HTTPS CONNECT tunnels. A server presents its own
// secret (the password of the proxy URL's userinfo): one without it is answered 407, so the proxy is
// each server's alone. A target must fall under that server's integration's literal authorized_uris
// (a CONNECT tunnel: its host and port), and then pass the egress guard (loopback, private and
// metadata addresses refused unless the operator allows the host, the platform's own endpoints
// always), connected to the address that was checked; through the organization's proxy when it has
// one. Redirects are the server's to follow: each one is a new request, judged the same way.
//
// A server whose integration's auth declares delivery.http never holds its credential: the proxy
// puts it on the server's requests to the hosts authorized_uris binds safely (the same path as
// api_call, integration-tools.ts's deliveredCredential: refreshed on a 401, once). Plain HTTP: on
// the forwarded request. HTTPS: the CONNECT tunnel ends here, TLS terminated with a certificate of
// the run's authority (run-ca.ts) which the server's runtime trusts, each request inside it sent on
// to the vendor over TLS the sidecar opens itself, the vendor's certificate verified as usual.
// Such a server's authorized_uris may hold {$credential.<field>} templates: rendered with the
// credential, as for api_call. Its answers come back with every form of the credential scrubbed
// from their headers and bodies (as api_call's), so a vendor echoing it does not hand it over.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Duplex, Readable } from 'node:stream';
import tls from 'node:tls';
import { authorizeCredentialTarget, literalAuthorizedHosts } from '../lib/afps/credential-delivery.ts';
import { matchesAuthorizedUri, parseAuthorizedUri, renderAuthorizedUri } from '../lib/afps/authorized-uri.ts';
import { checkEgressTarget, EgressRefusal, effectivePort, guardedRequest, type EgressOptions } from '../lib/egress.ts';
import { openTunnel, ProxyFailure, requestThroughProxy, type OutboundProxy } from '../lib/proxy-tunnel.ts';
import type { DeliveredCredential } from './integration-tools.ts';
import type { RunCertificateAuthority } from './run-ca.ts';
import { contentDecoders, secretScrubber } from './secret-scrubber.ts';

/** One local server the proxy serves. */
export interface LocalEgressClient {
  packageId: string;
  secret: string;
  /** where the server may go: its integration's literal authorized_uris (with a credential: its auth's, taken from the credential) */
  authorizedUris: string[];
  /** the credential the proxy puts on the server's requests (delivery.http); absent: the server's requests go out as they are */
  credential?: DeliveredCredential;
}

export interface LocalEgressProxyOptions {
  clients: LocalEgressClient[];
  /** the run's egress options: the operator's allowlist and the platform's endpoints */
  egress: EgressOptions;
  /** the organization's default outbound proxy; null: direct */
  proxy?: OutboundProxy | null;
  /** a line for the run's log (what was refused, never a secret) */
  note?: (message: string) => void;
  /** the run's certificate authority: needed when a client has a credential (its HTTPS is terminated here) */
  ca?: RunCertificateAuthority | null;
}

/** the header telling a server its credential could not be refreshed (the platform's code): as api_call's credential_refresh */
export const CREDENTIAL_REFRESH_HEADER = 'x-agent-platform-credential-refresh';

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

/** The client's entries a target is judged against: the literal ones, and with a credential the templated ones rendered with it. */
function entriesOf(client: LocalEgressClient): string[] {
  return client.authorizedUris.flatMap((uri) => {
    const parsed = parseAuthorizedUri(uri);
    if (typeof parsed === 'string') return [];
    if (parsed.literal) return [uri];
    const rendered = client.credential ? renderAuthorizedUri(uri, client.credential.current()) : null;
    return rendered === null ? [] : [rendered];
  });
}

/** Whether a request to `url` is the client's to make. */
function requestAuthorized(client: LocalEgressClient, url: URL): boolean {
  if (client.credential) return authorizeCredentialTarget(client.authorizedUris, client.credential.current(), url.href) !== 'unauthorized_target';
  return client.authorizedUris.some((uri) => matchesAuthorizedUri(uri, url.href));
}

/** Whether a tunnel to host:port falls under one of the client's entries (any path; either scheme's port). */
function tunnelAuthorized(client: LocalEgressClient, host: string, port: number): boolean {
  const hostPart = net.isIPv6(host) ? `[${host}]` : host;
  return entriesOf(client).some((uri) => {
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

type Client = LocalEgressClient & { digest: Buffer };
/** what one request to the vendor came to: its answer, or why it was not sent */
type Sent = { upstream: IncomingMessage } | { status: number; reason: string };

export function localEgressProxy(opts: LocalEgressProxyOptions): LocalEgressProxy {
  // a server with a credential goes where its auth's authorized_uris say (templates rendered with it), as api_call does
  const clients: Client[] = opts.clients.map((c) => ({ ...c, authorizedUris: c.credential ? c.credential.integration.authorizedUris : c.authorizedUris, digest: digest(c.secret) }));
  if (clients.some((c) => c.credential) && !opts.ca) throw new Error("a server's credential is injected over HTTPS with the run's certificate authority: none given");
  const egressOf = (client: LocalEgressClient): EgressOptions => ({ ...opts.egress, authorizedHosts: literalAuthorizedHosts(client.authorizedUris) });
  const refused = (client: LocalEgressClient, reason: string) => opts.note?.(`the local MCP server of ${client.packageId}: ${reason}`);

  /** One request of a server to `url`, judged, its credential put on it when it has one; answered on `res`. */
  const forward = async (client: Client, url: URL, req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (!requestAuthorized(client, url)) {
      req.resume();
      const reason = `unauthorized_target: ${url.origin} is not under the integration's authorized_uris`;
      refused(client, reason);
      return answer(res, 403, reason);
    }
    const body = await readCapped(req);
    if (body === null) return answer(res, 413, `payload_too_large: request bodies are limited to ${MAX_BODY_BYTES} bytes`);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      // Host is the URL's (set from it), whatever the client wrote; the credential's header is the proxy's to set
      if (value === undefined || HOP_HEADERS.has(name) || name === 'host' || name === client.credential?.headerName) continue;
      headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    // the answer is searched for the credential before the server sees it: asked for unencoded
    if (client.credential) headers['accept-encoding'] = 'identity';
    const base = { method: req.method, body: body.length || !['GET', 'HEAD'].includes(req.method ?? 'GET') ? body : undefined, timeoutMs: UPSTREAM_TIMEOUT_MS };
    const send = async (credentials: Record<string, string> | null): Promise<Sent> => {
      const sent = { ...headers };
      if (client.credential && credentials) {
        const authorized = client.credential.authorize(credentials, url);
        if ('header' in authorized) {
          if (authorized.header) sent[authorized.header[0].toLowerCase()] = authorized.header[1];
        } else if (authorized.code === 'credential_exfiltration_refused') {
          // under authorized_uris, but no entry binds the host: the request goes without the credential
          refused(client, `${url.origin}: sent without the credential (${authorized.code}: ${authorized.message})`);
        } else {
          return { status: 403, reason: `${authorized.code}: ${authorized.message}` };
        }
      }
      try {
        const init = { ...base, headers: sent };
        return {
          upstream: opts.proxy
            ? await requestThroughProxy(url, init, opts.proxy, { target: egressOf(client), proxy: opts.egress })
            : await guardedRequest(url, { ...init, agent: false }, egressOf(client)),
        };
      } catch (err) {
        return failureOf(err, url.host);
      }
    };
    let outcome: Sent;
    let refusedRefresh: string | undefined;
    if (client.credential) {
      ({ answer: outcome, refusedRefresh } = await client.credential.withRefresh(
        send,
        (a) => 'upstream' in a && a.upstream.statusCode === 401,
        (a) => void ('upstream' in a && a.upstream.resume()),
      ));
    } else {
      outcome = await send(null);
    }
    if (!('upstream' in outcome)) {
      refused(client, outcome.reason);
      return answer(res, outcome.status, outcome.reason);
    }
    const upstream = outcome.upstream;
    // a server with an injected credential never receives it back, whatever the vendor echoes
    const scrubber = client.credential ? secretScrubber(client.credential.secrets()) : null;
    const out: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(upstream.headers)) {
      if (value === undefined || HOP_HEADERS.has(name)) continue;
      out[name] = !scrubber ? value : Array.isArray(value) ? value.map(scrubber.text) : scrubber.text(value);
    }
    if (refusedRefresh !== undefined) out[CREDENTIAL_REFRESH_HEADER] = `refused: ${refusedRefresh}`;
    let answered: Readable = upstream;
    if (scrubber) {
      // asked for an unencoded answer; an encoded one is decoded first, so it can be searched
      const decoders = contentDecoders(upstream.headers['content-encoding']);
      if (!decoders) {
        upstream.resume();
        const reason = `upstream_unreachable: the answer of ${url.host} is in a content coding the proxy cannot read (${upstream.headers['content-encoding']}); it is not passed on`;
        refused(client, reason);
        return answer(res, 502, reason);
      }
      delete out['content-encoding'];
      for (const decoder of decoders) {
        decoder.on('error', () => res.destroy());
        answered = answered.pipe(decoder);
      }
      answered = answered.pipe(scrubber.stream());
    }
    res.writeHead(upstream.statusCode ?? 502, out);
    answered.pipe(res);
    upstream.on('error', () => res.destroy());
  };

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
      await forward(client, url, req, res);
    })().catch(() => answer(res, 502, 'upstream_unreachable: the proxy failed'));
  };

  /** the tunnels whose TLS ends here: whose they are and where they lead */
  const terminated = new WeakMap<Duplex, { client: Client; origin: string }>();
  /** the requests inside terminated tunnels (origin-form, as to the vendor) */
  const inner = createServer((req, res) => {
    void (async () => {
      const tunnel = terminated.get(req.socket);
      if (!tunnel) return answer(res, 502, 'upstream_unreachable: the tunnel is gone');
      if (!(req.url ?? '').startsWith('/')) {
        req.resume();
        return answer(res, 400, 'invalid_request: a request in a tunnel names a path');
      }
      await forward(tunnel.client, new URL(`${tunnel.origin}${req.url}`), req, res);
    })().catch(() => answer(res, 502, 'upstream_unreachable: the proxy failed'));
  });

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
      if (!tunnelAuthorized(client, host, port)) {
        const reason = `unauthorized_target: ${req.url} is not under the integration's authorized_uris`;
        refused(client, reason);
        return answerSocket(socket, 403, reason);
      }
      const hostPart = net.isIPv6(host) ? `[${host}]` : host;
      let target: Awaited<ReturnType<typeof checkEgressTarget>>;
      try {
        // judged as the tunnel's URL before it opens (each request in a terminated one is judged again)
        target = await checkEgressTarget(`http://${hostPart}:${port}/`, egressOf(client));
      } catch (err) {
        const { status, reason } = failureOf(err, `${host}:${port}`);
        refused(client, reason);
        return answerSocket(socket, status, reason);
      }
      if (client.credential) {
        // the server's TLS ends here, with the run authority's certificate for the host it asked for
        socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length) socket.unshift(head);
        const secure = new tls.TLSSocket(socket as net.Socket, { isServer: true, secureContext: opts.ca!.contextFor(host), ALPNProtocols: ['http/1.1'] });
        secure.on('error', () => socket.destroy());
        tunnels.add(secure);
        secure.on('close', () => tunnels.delete(secure));
        terminated.set(secure, { client, origin: `https://${hostPart}:${port}` });
        inner.emit('connection', secure);
        return;
      }
      let upstream: net.Socket;
      try {
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
      inner.closeAllConnections();
      for (const socket of tunnels) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
