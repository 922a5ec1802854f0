// An operation invoked through MCP is an HTTP request into this same server, carrying the caller's
// own credential and context: authentication, permissions, rate limits, idempotency and problems
// are the pipeline's, never re-implemented here.
import http from 'node:http';
import type { Request } from '../../http.ts';
import { DISPATCH_PROOF_HEADER, dispatchProof } from '../../services/mcp-dispatch-proof.ts';

/** Response bodies past this are cut (an MCP tool result is read by a model). */
export const MAX_BODY_CHARS = 256 * 1024;

export interface Caller {
  /** the address the MCP request reached: the app's own listener */
  hostname: string;
  port: number;
  /** forwarded as they came: credential and context */
  headers: Record<string, string>;
}

// credential and context headers of the MCP request that every invoked operation receives
const FORWARDED = ['authorization', 'cookie', 'x-org-id', 'service-user', 'service-version', 'x-view-as', 'host'];

export function callerOf(req: Request, org: string): Caller {
  const headers: Record<string, string> = {};
  for (const name of FORWARDED) {
    const v = req.headers[name];
    if (typeof v === 'string') headers[name] = v;
  }
  headers['x-org-id'] = org;
  // an OIDC token bound to this endpoint's resource is honored by the inner request on this proof
  if (headers.authorization) headers[DISPATCH_PROOF_HEADER] = dispatchProof(org, headers.authorization);
  headers['user-agent'] = `mcp-endpoint (${typeof req.headers['user-agent'] === 'string' ? req.headers['user-agent'].slice(0, 200) : 'unknown client'})`;
  const local = req.socket.localAddress ?? '127.0.0.1';
  return { hostname: local.startsWith('::ffff:') ? local.slice(7) : local, port: req.socket.localPort ?? 0, headers };
}

export interface Invocation {
  method: string;
  /** path and query string */
  target: string;
  body?: unknown;
  spaceId?: string;
  idempotencyKey?: string;
  /** bodies past this are cut (default MAX_BODY_CHARS) */
  maxBytes?: number;
}

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

// response headers worth showing a client; the rest are transport details
const SHOWN = ['location', 'ratelimit', 'ratelimit-policy', 'retry-after', 'idempotent-replayed', 'link', 'etag', 'request-id', 'content-type'];

export function dispatch(caller: Caller, inv: Invocation): Promise<Answer> {
  const headers: Record<string, string> = { ...caller.headers };
  if (inv.spaceId) headers['x-space-id'] = inv.spaceId;
  if (inv.idempotencyKey) headers['idempotency-key'] = inv.idempotencyKey;
  let payload: Buffer | undefined;
  if (inv.body !== undefined) {
    payload = Buffer.from(JSON.stringify(inv.body));
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(payload.length);
  }
  const max = inv.maxBytes ?? MAX_BODY_CHARS;
  return new Promise((resolve, reject) => {
    const out = http.request({ hostname: caller.hostname, port: caller.port, method: inv.method, path: inv.target, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size <= max) chunks.push(c);
        size += c.length;
      });
      res.on('error', reject);
      res.on('end', () => {
        const shown: Record<string, string> = {};
        for (const name of SHOWN) {
          const v = res.headers[name];
          if (typeof v === 'string') shown[name] = v;
        }
        resolve({ status: res.statusCode ?? 0, headers: shown, body: bodyOf(Buffer.concat(chunks), String(res.headers['content-type'] ?? ''), size, max) });
      });
    });
    out.on('error', reject);
    out.end(payload);
  });
}

function bodyOf(raw: Buffer, type: string, size: number, max: number): unknown {
  if (raw.length === 0) return null;
  if (size > max) return { truncated: true, bytes: size, text: raw.subarray(0, max).toString('utf8') };
  if (/json/i.test(type)) {
    try {
      return JSON.parse(raw.toString('utf8'));
    } catch {
      return raw.toString('utf8');
    }
  }
  if (/^text\/|xml|yaml|javascript/i.test(type)) return raw.toString('utf8');
  return { binary: true, bytes: size, content_type: type || 'application/octet-stream' };
}
