// The fetch the agent reaches its sidecar with: node's http client, over TCP or over a unix
// socket. A confined agent has its own network namespace (its own loopback), so a socket bound
// into its sandbox is its only way out; node's bundled undici cannot be given a socket path (it
// is not importable). Over TCP too this skips undici's WebAssembly HTTP parser: ~10 MiB less.
// Every request carries the run's sidecar token: the sidecar answers nothing else.
import { Readable } from 'node:stream';

const NULL_BODY_STATUS = new Set([101, 204, 205, 304]);

/**
 * node's http client, loaded when a process first needs it rather than with this module: node
 * cannot write its HTTP parser into a startup snapshot, and the runtime is built into one
 * (activities/sandbox/startup-snapshot.ts). The runtime's main calls this before it says it is ready.
 */
export function loadHttpClient(): typeof import('node:http') {
  return process.getBuiltinModule('node:http');
}

/** token: the run's sidecar token; socketPath: the sidecar's unix socket, absent, the URL's host and port. */
export function sidecarFetch(token: string, socketPath?: string): typeof fetch {
  const authorization = `Bearer ${token}`;
  const { request } = loadHttpClient();
  return async (input, init) => {
    const req = new Request(input, init);
    // the sidecar's token replaces any the caller set (the model client sets none of its own)
    req.headers.set('authorization', authorization);
    if (!socketPath && new URL(req.url).protocol !== 'http:') return fetch(req);
    const body = req.body ? Buffer.from(await req.arrayBuffer()) : undefined;
    const url = new URL(req.url);
    const headers: Record<string, string> = { host: url.host };
    req.headers.forEach((value, key) => (headers[key] = value));
    if (body) headers['content-length'] = String(body.length);
    return new Promise<Response>((resolve, reject) => {
      const target = socketPath ? { socketPath } : { hostname: url.hostname.replace(/^\[|\]$/g, ''), port: url.port || 80 };
      const outgoing = request({ ...target, method: req.method, path: url.pathname + url.search, headers, signal: req.signal }, (res) => {
        const responseHeaders = new Headers();
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) responseHeaders.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
        const status = res.statusCode ?? 502;
        const hasBody = !NULL_BODY_STATUS.has(status) && req.method !== 'HEAD';
        if (!hasBody) res.resume();
        const stream = hasBody ? (Readable.toWeb(res) as ReadableStream<Uint8Array>) : null;
        resolve(new Response(stream, { status, statusText: res.statusMessage, headers: responseHeaders }));
      });
      // the same error shape as fetch, so callers' retry logic treats it as a network failure
      outgoing.on('error', (err) => reject(req.signal.aborted ? req.signal.reason : new TypeError('fetch failed', { cause: err })));
      outgoing.end(body);
    });
  };
}
