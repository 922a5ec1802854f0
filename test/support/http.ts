// A small client for tests: acts as an integrator would, asserts on the wire.
import { request } from 'node:http';
import http2 from 'node:http2';
export interface CallOptions {
  key?: string;
  cookie?: string;
  org?: string;
  space?: string;
  headers?: Record<string, string>;
  body?: unknown;
  rawBody?: string | Buffer;
}

export interface WireResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export async function call<T = any>(base: string, method: string, path: string, opts: CallOptions = {}): Promise<WireResponse<T>> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.cookie) headers.cookie = opts.cookie;
  if (opts.org) headers['x-org-id'] = opts.org;
  if (opts.space) headers['x-space-id'] = opts.space;
  let body: string | Buffer | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

/** The links of a response's Link header (RFC 8288), by rel; a part that is not `<href>; rel="x"` fails the test. */
export function linksOf(res: Pick<WireResponse, 'headers'>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (res.headers.get('link') ?? '').split(/,\s*(?=<)/).filter(Boolean)) {
    const m = /^<([^>]+)>;\s*rel="([^"]+)"$/.exec(part.trim());
    if (!m) throw new Error(`not a Link part: ${part}`);
    out[m[2]] = m[1];
  }
  return out;
}

export function client(base: string, defaults: CallOptions = {}) {
  const go = <T = any>(method: string, path: string, opts: CallOptions = {}) =>
    call<T>(base, method, path, { ...defaults, ...opts, headers: { ...(defaults.headers ?? {}), ...(opts.headers ?? {}) } });
  return {
    get: <T = any>(path: string, opts?: CallOptions) => go<T>('GET', path, opts),
    post: <T = any>(path: string, body?: unknown, opts?: CallOptions) => go<T>('POST', path, { ...opts, body }),
    put: <T = any>(path: string, body?: unknown, opts?: CallOptions) => go<T>('PUT', path, { ...opts, body }),
    patch: <T = any>(path: string, body?: unknown, opts?: CallOptions) => go<T>('PATCH', path, { ...opts, body }),
    delete: <T = any>(path: string, opts?: CallOptions) => go<T>('DELETE', path, opts),
  };
}

/** The status an HTTP/2 server (a Restate workflow endpoint) answers one request with. */
export function http2Status(base: string, method: string, path: string, headers: Record<string, string> = {}): Promise<number> {
  const session = http2.connect(base);
  return new Promise<number>((resolve, reject) => {
    session.on('error', reject);
    const req = session.request({ ':method': method, ':path': path, ...headers });
    req.on('response', (h) => resolve(Number(h[':status'])));
    req.on('error', reject);
    req.end();
  }).finally(() => session.close());
}

/**
 * A request over node:http, which (unlike fetch) sends the Host header it is given: for forging
 * Host and X-Forwarded-* as a hostile caller would.
 */
export function rawCall(base: string, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; text: string; body: any; headers: Record<string, string | string[] | undefined> }> {
  const u = new URL(base);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request({
      host: u.hostname, port: u.port, path, method,
      headers: { ...headers, ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        if ((res.headers['content-type'] ?? '').includes('json') && text) parsed = JSON.parse(text);
        resolve({ status: res.statusCode!, text, body: parsed, headers: res.headers });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}
