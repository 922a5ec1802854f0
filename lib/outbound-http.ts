// Outbound HTTP with node's own client (node:http, node:https). Programs that start often (the
// per-run sidecar) use it instead of fetch: fetch's implementation and its WebAssembly parser cost
// each process about 20 MB and their load time, node's client about 5.
import http, { type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { LookupFunction, Socket } from 'node:net';
import { Readable } from 'node:stream';

export interface OutboundInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** the connection's idle time limit; default 30 s */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** connection reuse; node's global agents (keep-alive) when absent, a new connection when false */
  agent?: http.Agent | false;
  /** name resolution for this request's connection (the egress guard pins the checked address) */
  lookup?: LookupFunction;
  /** an already open connection to use (a proxy tunnel); no agent is involved then */
  socket?: Socket;
  /** the authorities an https target's certificate is verified against; node's defaults when absent */
  ca?: string[];
}

/** One request; resolves with the response once its head arrives, its body still to be read. */
export function openRequest(target: URL | string, init: OutboundInit = {}): Promise<IncomingMessage> {
  const url = typeof target === 'string' ? new URL(target) : target;
  const client = url.protocol === 'https:' ? https : http;
  const timeoutMs = init.timeoutMs ?? 30_000;
  return new Promise((resolve, reject) => {
    const req = client.request(url, {
      method: init.method ?? 'GET',
      headers: init.headers,
      signal: init.signal,
      timeout: timeoutMs,
      ...(init.agent !== undefined ? { agent: init.agent } : {}),
      ...(init.lookup ? { lookup: init.lookup } : {}),
      ...(init.ca && url.protocol === 'https:' ? { ca: init.ca } : {}),
      ...(init.socket ? { createConnection: () => init.socket! } : {}),
    }, resolve);
    req.on('timeout', () => req.destroy(new Error(`The request to ${url.host} timed out after ${timeoutMs} ms.`)));
    req.on('error', reject);
    req.end(init.body);
  });
}

/** Reads a message body whole: a response's, or a request's a server received. */
export async function readBody(message: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of message) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** One request, its body read whole as text. */
export async function requestText(target: URL | string, init: OutboundInit = {}): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> {
  const res = await openRequest(target, init);
  const body = await readBody(res);
  return { status: res.statusCode ?? 502, headers: res.headers, text: body.toString('utf8') };
}

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/** An answer as a fetch Response (for clients that take a fetch function); `method` is the request's. */
export function responseOf(res: IncomingMessage, method: string | undefined): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else if (value !== undefined) headers.set(name, value);
  }
  const status = res.statusCode ?? 502;
  // Stryker disable next-line StringLiteral: a request without a method is a GET, and '' is no HEAD either
  const body = NULL_BODY_STATUSES.has(status) || (method ?? 'GET').toUpperCase() === 'HEAD' ? null : (Readable.toWeb(res) as ReadableStream);
  // Stryker disable next-line all: an answer without a body has no bytes to drain; resuming it frees the socket sooner, unobservably
  if (!body) res.resume();
  return new Response(body, { status, statusText: res.statusMessage, headers });
}
