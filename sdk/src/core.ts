// The SDK's engine, independent of any one document: credentials and context headers, problem
// documents as PlatformError, retries of 429 and 503 after Retry-After, an Idempotency-Key per
// logical call on the operations that honour one, long polls for a run's ending, Link paging.
import createClient, { type Client } from 'openapi-fetch';

export interface Credentials {
  /** an API key (apst_...): bound to its organization and space */
  apiKey?: string;
  /** a session cookie header value (<prefix>.session_token=...), for session-only operations */
  cookie?: string;
  /** organization and space, for sessions */
  orgId?: string;
  spaceId?: string;
}

export interface ClientOptions extends Credentials {
  baseUrl: string;
  /** retries of a 429 or 503 answer (default 3) */
  maxRetries?: number;
  /** longest wait honoured from Retry-After, in seconds (default 60) */
  maxRetryAfterSeconds?: number;
  fetch?: typeof fetch;
  /** operations that honour Idempotency-Key, as "METHOD /path/{template}" (generated from the document) */
  idempotentOperations?: readonly string[];
  /** makes idempotency keys; default crypto.randomUUID */
  newIdempotencyKey?: () => string;
}

export interface FieldError {
  field: string;
  code: string;
  message: string;
  [member: string]: unknown;
}

/** A problem document (RFC 9457) the API answered, or a transport failure with status 0. */
export class PlatformError extends Error {
  readonly status: number;
  readonly code: string;
  readonly request_id: string | undefined;
  readonly errors: FieldError[];
  readonly param: string | undefined;
  readonly retry_after: number | undefined;
  readonly problem: Record<string, unknown>;

  constructor(status: number, problem: Record<string, unknown>) {
    super(typeof problem.detail === 'string' ? problem.detail : `HTTP ${status}`);
    this.name = 'PlatformError';
    this.status = status;
    this.code = typeof problem.code === 'string' ? problem.code : `http_${status}`;
    this.request_id = typeof problem.request_id === 'string' ? problem.request_id : undefined;
    this.errors = Array.isArray(problem.errors) ? (problem.errors as FieldError[]) : [];
    this.param = typeof problem.param === 'string' ? problem.param : undefined;
    this.retry_after = typeof problem.retry_after === 'number' ? problem.retry_after : undefined;
    this.problem = problem;
  }
}

const TERMINAL = new Set(['success', 'failed', 'timeout', 'cancelled']);
const RETRIED = new Set([429, 503]);

/** The operations of a document that declare an Idempotency-Key parameter. */
export function idempotentOperationsOf(document: { paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string }> }>> }): string[] {
  const out: string[] = [];
  for (const [path, ops] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      if (op.parameters?.some((p) => p.in === 'header' && p.name === 'Idempotency-Key')) out.push(`${method.toUpperCase()} ${path}`);
    }
  }
  return out;
}

/** Seconds to wait before a retry: Retry-After (seconds or an HTTP date), else a short backoff. */
function retryDelayMs(res: Response, attempt: number, cap: number): number {
  const header = res.headers.get('retry-after');
  let seconds = header === null ? NaN : Number(header);
  if (header !== null && Number.isNaN(seconds)) seconds = (Date.parse(header) - Date.now()) / 1000;
  if (!Number.isFinite(seconds) || seconds < 0) seconds = Math.min(2 ** attempt * 0.25, cap);
  return Math.min(seconds, cap) * 1000;
}

async function problemOf(res: Response): Promise<PlatformError> {
  const text = await res.text();
  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object') body = parsed as Record<string, unknown>;
  } catch {
    body = { detail: text.slice(0, 500) };
  }
  if (body.request_id === undefined) body.request_id = res.headers.get('request-id') ?? undefined;
  return new PlatformError(res.status, body);
}

/** fetch with credentials, retries, and problem documents thrown as PlatformError. */
export function platformFetch(opts: ClientOptions): typeof fetch {
  const base = opts.fetch ?? globalThis.fetch;
  const maxRetries = opts.maxRetries ?? 3;
  const cap = opts.maxRetryAfterSeconds ?? 60;

  return async (input, init) => {
    const request = new Request(input, init);
    if (opts.apiKey && !request.headers.has('authorization')) request.headers.set('authorization', `Bearer ${opts.apiKey}`);
    if (opts.cookie && !request.headers.has('cookie')) request.headers.set('cookie', opts.cookie);
    if (opts.orgId && !request.headers.has('x-org-id')) request.headers.set('x-org-id', opts.orgId);
    if (opts.spaceId && !request.headers.has('x-space-id')) request.headers.set('x-space-id', opts.spaceId);
    for (let attempt = 0; ; attempt++) {
      const res = await base(request.clone());
      if (RETRIED.has(res.status) && attempt < maxRetries) {
        await res.body?.cancel();
        await new Promise((r) => setTimeout(r, retryDelayMs(res, attempt, cap)));
        continue;
      }
      if (res.status >= 400) throw await problemOf(res);
      return res;
    }
  };
}

/** The body of a successful call (errors are thrown as PlatformError before this point). */
export async function unwrap<T>(call: Promise<{ data?: T; response: Response }>): Promise<T> {
  const { data, response } = await call;
  if (data === undefined) throw new PlatformError(response.status, { code: 'no_body', detail: `HTTP ${response.status} carried no body.`, request_id: response.headers.get('request-id') ?? undefined });
  return data;
}

/** The URL of rel="next" in a Link header (RFC 8288), if any. */
export function nextLink(header: string | null): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(/,(?=\s*<)/)) {
    const m = /^\s*<([^>]*)>\s*;(.*)$/.exec(part);
    if (m && /\brel="?([^";]*\s)?next(\s[^";]*)?"?/.test(m[2])) return m[1];
  }
  return undefined;
}

export interface Helpers {
  /** the run once it has ended (success, failed, timeout, cancelled), long-polling up to 55 s a call */
  waitForRun(id: string, options?: { timeoutMs?: number }): Promise<Record<string, unknown>>;
  /** every item of a list, page after page, following Link rel="next" */
  paginate(path: string, query?: Record<string, string | number | undefined>): AsyncGenerator<Record<string, unknown>>;
}

export function createHelpers(opts: ClientOptions, fetchImpl: typeof fetch): Helpers {
  const base = opts.baseUrl.replace(/\/$/, '');
  const getJson = (url: string) => fetchImpl(url, { headers: { accept: 'application/json' } });

  return {
    async waitForRun(id, options = {}) {
      const deadline = Date.now() + (options.timeoutMs ?? 10 * 60_000);
      for (;;) {
        const left = Math.ceil((deadline - Date.now()) / 1000);
        const res = await getJson(`${base}/api/runs/${encodeURIComponent(id)}?wait=${Math.max(0, Math.min(55, left))}`);
        const run = (await res.json()) as Record<string, unknown>;
        if (TERMINAL.has(String(run.status))) return run;
        if (Date.now() >= deadline) throw new PlatformError(0, { code: 'wait_timeout', detail: `Run ${id} is still ${String(run.status)}.` });
      }
    },
    async *paginate(path, query = {}) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
      let url: string | undefined = `${base}${path}${params.size ? `?${params}` : ''}`;
      while (url) {
        const res = await getJson(url);
        const page = (await res.json()) as { data: Record<string, unknown>[] };
        yield* page.data;
        const next = nextLink(res.headers.get('link'));
        // links are paths on this server; a base URL with a path prefix keeps it
        url = next === undefined ? undefined : next.startsWith('/') ? `${base}${next}` : next;
      }
    },
  };
}

/** A typed client for a document's paths, with the helpers. */
export function createCoreClient<Paths extends {}>(opts: ClientOptions): Client<Paths> & Helpers {
  const fetchImpl = platformFetch(opts);
  const client = createClient<Paths>({ baseUrl: opts.baseUrl, fetch: fetchImpl });
  const idempotent = new Set(opts.idempotentOperations ?? []);
  const newKey = opts.newIdempotencyKey ?? (() => crypto.randomUUID());
  client.use({
    // set before the first attempt, so every retry of this call carries the same key
    onRequest({ request, schemaPath }) {
      if (idempotent.has(`${request.method} ${schemaPath}`) && !request.headers.has('idempotency-key')) request.headers.set('idempotency-key', newKey());
      return request;
    },
  });
  return Object.assign(client, createHelpers(opts, fetchImpl));
}
