// Per-route, per-caller fixed-window limits over the shared cache (Redis when configured).
// Bucket key = method + matched route pattern + identity; no bypass for anyone.
import type { Request, Response } from '../http.ts';
import type { CacheStore } from '../../lib/cache/store.ts';
import type { Config } from '../../lib/config.ts';
import { problem } from '../../lib/problem.ts';
import type { RateLimitRow } from '../route.ts';

const WINDOW_MS = 60_000;

export function rateLimitIdentity(req: Request, by: RateLimitRow['by']): string {
  const ctx = req.ctx;
  if (by === 'ip') return `ip:${ctx.ip}`;
  if (by === 'run') return `run:${req.params.id ?? req.params.runId ?? ''}`;
  const p = ctx.principal;
  if (!p) return `ip:${ctx.ip}`;
  if (p.kind === 'api_key') return `apikey:${p.apiKeyId}`;
  return `user:${p.userId}`;
}

export function createRateLimiter(store: CacheStore, config: Config) {
  return async function limit(req: Request, res: Response, row: RateLimitRow, method: string, pattern: string): Promise<void> {
    const max = typeof row.perMinute === 'function' ? row.perMinute(config) : row.perMinute;
    const key = `rl:${method}:${pattern}:${rateLimitIdentity(req, row.by)}`;
    const { count, resetMs } = await store.increment(key, WINDOW_MS);
    const reset = Math.max(1, Math.ceil(resetMs / 1000));
    const remaining = Math.max(0, max - count);
    res.setHeader('RateLimit', `limit=${max}, remaining=${remaining}, reset=${reset}`);
    res.setHeader('RateLimit-Policy', `${max};w=${WINDOW_MS / 1000}`);
    if (count > max) {
      throw problem('rate_limited', { retryAfter: reset, detail: `Limit of ${max} requests per minute reached for this route.` });
    }
  };
}
