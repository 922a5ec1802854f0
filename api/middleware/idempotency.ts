// Idempotency-Key, per the spec's twelve rules. The key is held by an expiring lease while the
// first request runs, so a crashed owner cannot block it for 24 hours.
import { randomUUID, createHash } from 'node:crypto';
import type { Request, Response } from '../http.ts';
import type { CacheStore } from '../../lib/cache/store.ts';
import { problem } from '../../lib/problem.ts';
import { jsonOf, type Reply } from '../route.ts';

const TTL_MS = 24 * 60 * 60 * 1000;
const LEASE_MS = 30_000;
const MAX_STORED_CHARS = 1_048_576;
const MAX_KEY_CHARS = 255;
// Request-Id is part of the stored response: a replay is the first answer, and its header names the
// same request as a problem body's request_id and instance (spec: Idempotency rules 2 and 3).
const REPLAYED_HEADERS = ['content-type', 'location', 'etag', 'link', 'request-id'];

interface InProgress {
  state: 'in_progress';
  fp: string;
  lease: string;
}
interface Done {
  state: 'done';
  fp: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}
type Record_ = InProgress | Done;

export function idempotencyKeyOf(req: Request): string | undefined {
  const v = req.headers['idempotency-key'];
  return typeof v === 'string' ? v : undefined;
}

/** Rule 11: writes carrying the header to an operation that does not declare it. */
export function refuseUnsupportedIdempotencyKey(req: Request): void {
  if (idempotencyKeyOf(req) === undefined) return;
  if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return;
  throw problem('idempotency_not_supported', { param: 'Idempotency-Key', detail: 'This operation does not honor Idempotency-Key.' });
}

function fingerprint(req: Request, rawBody: Buffer): string {
  const q = req.originalUrl.indexOf('?');
  const query = q >= 0 ? req.originalUrl.slice(q + 1) : '';
  return createHash('sha256').update(`${req.method}\n${req.path}\n${query}\n`).update(rawBody).digest('hex');
}

export interface IdempotencyOutcome {
  /** a stored response to send as it is */
  replay?: Reply;
  /** call with the finished reply (or the thrown error) to store or release the key */
  settle?: (reply: Reply | null) => Promise<void>;
}

export interface IdempotencyOptions {
  /** how long an in-progress key survives without renewal (its owner died) */
  leaseMs?: number;
}

export function createIdempotency(store: CacheStore, opts: IdempotencyOptions = {}) {
  const leaseMs = opts.leaseMs ?? LEASE_MS;
  return async function begin(req: Request, res: Response, rawBody: Buffer): Promise<IdempotencyOutcome> {
    const key = idempotencyKeyOf(req);
    if (key === undefined) return {};
    if (key.length === 0 || key.length > MAX_KEY_CHARS) {
      throw problem('invalid_idempotency_key', { param: 'Idempotency-Key', detail: `Idempotency-Key must be 1 to ${MAX_KEY_CHARS} characters.` });
    }
    const ctx = req.ctx;
    const storeKey = `idem:${ctx.org?.id ?? '-'}:${ctx.space?.id ?? '-'}:${createHash('sha256').update(key).digest('hex')}`;
    const fp = fingerprint(req, rawBody);
    const lease = randomUUID();
    const mine: InProgress = { state: 'in_progress', fp, lease };
    const mineText = JSON.stringify(mine);

    if (!(await store.setIfAbsent(storeKey, mineText, leaseMs))) {
      const existingText = await store.get(storeKey);
      if (existingText === null) {
        // expired between the two calls: try once more
        if (!(await store.setIfAbsent(storeKey, mineText, leaseMs))) throw problem('idempotency_in_progress');
      } else {
        const existing = JSON.parse(existingText) as Record_;
        if (existing.fp !== fp) {
          throw problem('idempotency_conflict', { detail: 'This Idempotency-Key was used with a different request.' });
        }
        if (existing.state === 'in_progress') {
          throw problem('idempotency_in_progress', { detail: 'A request with this Idempotency-Key is still being processed.' });
        }
        const body = existing.body === '' ? undefined : JSON.parse(existing.body);
        const headers: Record<string, string> = { ...existing.headers, 'Idempotent-Replayed': 'true' };
        // a record stored before Request-Id was kept: a problem body still names its request
        if (headers['request-id'] === undefined && typeof body?.request_id === 'string') headers['request-id'] = body.request_id;
        return { replay: { status: existing.status, body, headers } };
      }
    }

    // Keep the lease alive while the handler runs.
    const renew = setInterval(() => {
      void store.get(storeKey).then((cur) => (cur === mineText ? store.set(storeKey, mineText, leaseMs) : undefined)).catch(() => {});
    }, leaseMs / 3);
    renew.unref();

    return {
      settle: async (reply) => {
        clearInterval(renew);
        const current = await store.get(storeKey);
        if (current !== mineText) return;
        const ok = reply && reply.status < 500 && !reply.handled;
        const body = ok && reply.body !== undefined ? jsonOf(reply.body) : '';
        if (!ok || body.length > MAX_STORED_CHARS) {
          await store.deleteIfEquals(storeKey, mineText);
          return;
        }
        // Header names are case-insensitive: a reply may spell ETag or etag.
        const given = new Map(Object.entries(reply.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
        const headers: Record<string, string> = {};
        for (const h of REPLAYED_HEADERS) {
          const v = given.get(h) ?? res.getHeader(h);
          if (typeof v === 'string') headers[h] = v;
        }
        const done: Done = { state: 'done', fp, status: reply.status, headers, body };
        await store.set(storeKey, JSON.stringify(done), TTL_MS);
      },
    };
  };
}
