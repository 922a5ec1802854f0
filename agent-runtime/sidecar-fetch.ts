// The fetch the agent reaches its sidecar with: HTTP/1.1 on node:net (sidecar-http.ts), over TCP
// or over a unix socket. A confined agent has its own network namespace (its own loopback), so a
// socket bound into its sandbox is its only way out; node's bundled undici cannot be given a
// socket path (it is not importable). Every request carries the run's sidecar token: the sidecar
// answers nothing else.
// The requests the runtime makes (a URL, a method, headers, a text or bytes body, a signal) are
// read here and answered with a SidecarResponse, so a run never loads undici (fetch-headers.ts);
// a request of any other form is read by node's own Request, exactly as node would read it.
import { FetchHeaders } from './fetch-headers.ts';
import { SidecarHttp, type SidecarTarget } from './sidecar-http.ts';
import { SidecarResponse } from './sidecar-response.ts';

const NULL_BODY_STATUS = new Set([101, 204, 205, 304]);
/** node sends an empty request's Content-Length: 0, except for these methods */
const NO_DEFAULT_LENGTH = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);

/** a request as it goes out: what node's Request would have made of the caller's arguments */
interface Outgoing {
  url: URL;
  method: string;
  headers: FetchHeaders;
  body: Buffer | undefined;
  signal: AbortSignal | undefined;
}

/** the methods node's Request takes as they are or upper-cases (its normalization), by their given spelling */
const PLAIN_METHODS: Record<string, string> = Object.assign(Object.create(null), {
  delete: 'DELETE', DELETE: 'DELETE', get: 'GET', GET: 'GET', head: 'HEAD', HEAD: 'HEAD',
  options: 'OPTIONS', OPTIONS: 'OPTIONS', post: 'POST', POST: 'POST', put: 'PUT', PUT: 'PUT',
  patch: 'patch', PATCH: 'PATCH',
});
const PLAIN_INIT_KEYS = new Set(['method', 'headers', 'body', 'signal']);

/** an object literal naming nothing but a method, headers, a body and a signal */
function isPlainInit(init: unknown): boolean {
  if (init === null || typeof init !== 'object') return false;
  const proto = Object.getPrototypeOf(init);
  return (proto === Object.prototype || proto === null) && Object.keys(init).every((k) => PLAIN_INIT_KEYS.has(k));
}

/**
 * The request when it has the plain form the runtime's callers give it, read as node's Request
 * reads it; undefined for any other form (node's Request then reads it, errors included).
 */
function plainRequest(input: Parameters<typeof fetch>[0], init: RequestInit | undefined): Outgoing | undefined {
  if (typeof input !== 'string' && !(input instanceof URL)) return undefined;
  if (init !== undefined && !isPlainInit(init)) return undefined;
  let url: URL;
  try {
    url = new URL(String(input));
  } catch {
    return undefined;
  }
  if (url.username !== '' || url.password !== '') return undefined;
  const method = init?.method === undefined ? 'GET' : PLAIN_METHODS[init.method];
  if (method === undefined) return undefined;
  const signal = init?.signal ?? undefined;
  if (signal !== undefined && !(signal instanceof AbortSignal)) return undefined;
  let headers: FetchHeaders;
  try {
    headers = new FetchHeaders(init?.headers);
  } catch {
    return undefined;
  }
  const given = init?.body ?? null;
  let body: Buffer | undefined;
  if (given === null) body = undefined;
  else if (method === 'GET' || method === 'HEAD') return undefined;
  else if (typeof given === 'string') {
    body = Buffer.from(given, 'utf8');
    if (!headers.has('content-type')) headers.append('content-type', 'text/plain;charset=UTF-8');
  } else if (ArrayBuffer.isView(given)) body = Buffer.from(new Uint8Array(given.buffer, given.byteOffset, given.byteLength));
  else if (given instanceof ArrayBuffer) body = Buffer.from(new Uint8Array(given));
  else return undefined;
  return { url, method, headers, body, signal };
}

/** token: the run's sidecar token; socketPath: the sidecar's unix socket, absent, the URL's host and port. */
export function sidecarFetch(token: string, socketPath?: string): typeof fetch {
  const authorization = `Bearer ${token}`;
  // one set of kept sockets per target
  const connections = new Map<string, SidecarHttp>();
  const connectionsTo = (target: SidecarTarget): SidecarHttp => {
    const key = 'socketPath' in target ? `unix:${target.socketPath}` : `tcp:${target.host}:${target.port}`;
    let http = connections.get(key);
    if (!http) connections.set(key, (http = new SidecarHttp(target)));
    return http;
  };
  const fetchOverHttp = async (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
    let outgoing = plainRequest(input, init);
    if (!outgoing || (!socketPath && outgoing.url.protocol !== 'http:')) {
      const req = new Request(input, init);
      // the sidecar's token replaces any the caller set (the model client sets none of its own)
      req.headers.set('authorization', authorization);
      if (!socketPath && new URL(req.url).protocol !== 'http:') return fetch(req);
      const body = req.body ? Buffer.from(await req.arrayBuffer()) : undefined;
      outgoing = { url: new URL(req.url), method: req.method, headers: new FetchHeaders(req.headers), body, signal: req.signal };
    }
    outgoing.headers.set('authorization', authorization);
    const { url, method, body, signal } = outgoing;
    // as node's http client sends them: host first, the caller's headers, then the body's length
    const headers = new Map<string, string>([['host', url.host]]);
    outgoing.headers.forEach((value, key) => headers.set(key, value));
    if (body) headers.set('content-length', String(body.length));
    else if (!NO_DEFAULT_LENGTH.has(method.toUpperCase()) && !headers.has('content-length')) headers.set('content-length', '0');
    const target: SidecarTarget = socketPath ? { socketPath } : { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80) };
    let answer;
    try {
      answer = await connectionsTo(target).request({ method: method.toUpperCase(), path: url.pathname + url.search, headers: [...headers], body }, signal);
    } catch (err) {
      // the same error shape as fetch, so callers' retry logic treats it as a network failure
      throw signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: err });
    }
    const { status, statusText, rawHeaders } = answer;
    try {
      if (status < 200 || status > 599) throw new RangeError('init["status"] must be in the range of 200 to 599, inclusive.');
      const responseHeaders = new FetchHeaders();
      for (let i = 0; i + 1 < rawHeaders.length; i += 2) responseHeaders.append(rawHeaders[i], rawHeaders[i + 1]);
      const hasBody = !NULL_BODY_STATUS.has(status) && method !== 'HEAD';
      if (!hasBody) answer.body?.resume();
      return new SidecarResponse(status, statusText, responseHeaders, hasBody ? answer.body : null) as unknown as Response;
    } catch (err) {
      answer.body?.destroy();
      throw err;
    }
  };
  return fetchOverHttp as typeof fetch;
}
