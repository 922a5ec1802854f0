// CORS for the origins listed in TRUSTED_ORIGINS; other origins get no CORS headers at all.
import type { Request, Response } from '../http.ts';

const EXPOSED = [
  'Request-Id', 'Service-Version', 'RateLimit', 'RateLimit-Policy', 'Retry-After', 'Link', 'ETag',
  'Idempotent-Replayed', 'Location', 'Proxy-Status', 'WWW-Authenticate', 'traceparent',
].join(', ');
const ALLOWED_HEADERS = [
  'Authorization', 'Content-Type', 'X-Org-Id', 'X-Space-Id', 'Service-User', 'Service-Version', 'Idempotency-Key',
  'If-Match', 'If-None-Match', 'X-View-As', 'traceparent', 'X-Run-Id', 'X-Integration-Id', 'X-Target', 'X-Session-Id', 'X-Connection-Id',
].join(', ');

export function cors(trustedOrigins: readonly string[]) {
  const trusted = new Set(trustedOrigins.map((o) => o.replace(/\/+$/, '')));
  /** Sets the CORS headers for a trusted origin; answers a preflight itself (true). */
  return function corsStage(req: Request, res: Response): boolean {
    const origin = req.headers.origin;
    if (!origin || !trusted.has(origin)) return false;
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    res.setHeader('Access-Control-Expose-Headers', EXPOSED);
    res.appendHeader('Vary', 'Origin');
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
      res.setHeader('Access-Control-Allow-Methods', 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
      res.setHeader('Access-Control-Max-Age', '600');
      res.statusCode = 204;
      res.end();
      return true;
    }
    return false;
  };
}
