// The HTTP layer under the pipeline: Node's own request and response objects, decorated once with
// what the stages read (ctx, params, query, path), and a route table matched by path segments.
// A general-purpose framework spent most of each request on itself (prototype swaps, a walk over
// every mounted layer, a regular expression per route); the platform declares its routes, so a
// lookup by method and path shape is all the matching it needs.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import querystring from 'node:querystring';
import type { RequestContext } from './context.ts';

export type Query = Record<string, string | string[] | undefined>;

export interface Request extends IncomingMessage {
  method: string;
  url: string;
  ctx: RequestContext;
  /** the body's bytes once read (idempotency fingerprints and signature checks need them) */
  rawBody?: Buffer;
  /** path parameters of the matched route, percent-decoded */
  params: Record<string, string>;
  /** the query string, parsed as node:querystring does (repeated names give arrays) */
  query: Query;
  /** the path without the query string */
  path: string;
  /** the request target as received (path and query) */
  originalUrl: string;
  /** the template of the route that answered (/api/runs/{id}), for metrics; never the raw path */
  route?: string;
}

export type Response = ServerResponse<IncomingMessage>;

const EMPTY_QUERY: Query = Object.freeze(Object.create(null));

/** Fills path, originalUrl and query from the request target; params start empty. */
export function decorate(raw: IncomingMessage): Request {
  const req = raw as Request;
  const target = req.url || '/';
  const q = target.indexOf('?');
  req.originalUrl = target;
  req.path = q < 0 ? target : target.slice(0, q);
  req.query = q < 0 || q === target.length - 1 ? EMPTY_QUERY : (querystring.parse(target.slice(q + 1)) as Query);
  req.params = {};
  return req;
}

// ------------------------------------------------------------------ client address

export type TrustFn = (addr: string, hop: number) => boolean;
interface ProxyAddr {
  (req: IncomingMessage, trust: TrustFn): string;
  compile(list: string[]): TrustFn;
}
const proxyaddr = createRequire(import.meta.url)('proxy-addr') as ProxyAddr;

/**
 * TRUST_PROXY as a predicate over (address, hop): false trusts no proxy (the socket's peer is the
 * client), true trusts every hop (the left-most X-Forwarded-For entry), a number trusts that many
 * hops, a list trusts those addresses, subnets and names (loopback, linklocal, uniquelocal).
 */
export function compileTrust(value: boolean | number | string[]): TrustFn | null {
  if (value === false) return null;
  if (value === true) return () => true;
  if (typeof value === 'number') return (_a, hop) => hop < value;
  return proxyaddr.compile(value);
}

export function clientIp(req: IncomingMessage, trust: TrustFn | null): string {
  if (!trust) return req.socket.remoteAddress ?? '';
  return proxyaddr(req, trust);
}

// ------------------------------------------------------------------ routing

interface Entry<T> {
  /** literal segments, or null where a parameter sits */
  segments: Array<string | null>;
  names: string[];
  value: T;
  pattern: string;
}

export interface Match<T> {
  value: T;
  params: Record<string, string>;
  pattern: string;
}

/**
 * A route table: exact paths by one map lookup, parameterised ones by segment count, in the
 * order they were added. An exact path wins over a parameterised one (/api/runs/inline before
 * /api/runs/{id}).
 */
export class RouteTable<T> {
  private exact = new Map<string, Entry<T>>();
  private shaped = new Map<string, Entry<T>[]>();

  /** `pattern` in OpenAPI form: /api/end-users/{id} */
  add(method: string, pattern: string, value: T): void {
    const parts = pattern.split('/').slice(1);
    const names: string[] = [];
    const segments = parts.map((p) => {
      const m = /^\{([a-zA-Z_][a-zA-Z0-9_]*)\}$/.exec(p);
      if (!m) return p;
      names.push(m[1]);
      return null;
    });
    const entry: Entry<T> = { segments, names, value, pattern };
    const m = method.toUpperCase();
    if (!names.length) {
      const key = `${m} ${pattern}`;
      if (!this.exact.has(key)) this.exact.set(key, entry);
      return;
    }
    const key = `${m} ${segments.length}`;
    const list = this.shaped.get(key) ?? [];
    list.push(entry);
    this.shaped.set(key, list);
  }

  /**
   * The route for a method and path (HEAD falls back to GET; one trailing slash is ignored).
   * Throws URIError when a parameter is not valid percent-encoding.
   */
  match(method: string, path: string): Match<T> | null {
    const found = this.lookup(method, path);
    if (found || method !== 'HEAD') return found;
    return this.lookup('GET', path);
  }

  /** Whether any method serves this path (to answer OPTIONS with what is allowed). */
  methodsFor(path: string): string[] {
    return ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => this.lookup(m, path));
  }

  private lookup(method: string, rawPath: string): Match<T> | null {
    const path = rawPath.length > 1 && rawPath.endsWith('/') ? rawPath.slice(0, -1) : rawPath;
    const exact = this.exact.get(`${method} ${path}`);
    if (exact) return { value: exact.value, params: {}, pattern: exact.pattern };
    const parts = path.split('/');
    const list = this.shaped.get(`${method} ${parts.length - 1}`);
    if (!list) return null;
    next: for (const e of list) {
      for (let i = 0; i < e.segments.length; i++) {
        const s = e.segments[i];
        const p = parts[i + 1];
        if (s === null ? p === '' : s !== p) continue next;
      }
      const params: Record<string, string> = {};
      let n = 0;
      for (let i = 0; i < e.segments.length; i++) {
        if (e.segments[i] === null) params[e.names[n++]] = decodeURIComponent(parts[i + 1]);
      }
      return { value: e.value, params, pattern: e.pattern };
    }
    return null;
  }
}
