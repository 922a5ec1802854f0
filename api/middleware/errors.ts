// The RFC 9457 error handler: every failure leaves as a problem document; internals never leak.
import type { Request, Response } from '../http.ts';
import { isProblem, problem, problemBody, type ProblemError } from '../../lib/problem.ts';
import type { Logger } from '../../lib/log.ts';

function fromForeign(err: unknown): ProblemError {
  const e = err as { type?: string; status?: number; statusCode?: number };
  if (e && e.type === 'entity.too.large') return problem('payload_too_large');
  if (e && e.type === 'entity.parse.failed') return problem('invalid_request', { detail: 'The request body is not valid JSON.' });
  return problem('internal_error', { detail: 'An unexpected error occurred. Quote the request id when reporting it.' });
}

const EXPECTED_503 = new Set(['starting', 'shutting_down']);

export function sendProblem(res: Response, err: ProblemError, requestId: string, typeBase: string): void {
  const body = problemBody(err, requestId, typeBase);
  res.statusCode = err.status;
  if (err.retryAfter !== undefined) res.setHeader('Retry-After', String(err.retryAfter));
  if (err.status === 401 && !res.getHeader('WWW-Authenticate')) res.setHeader('WWW-Authenticate', 'Bearer');
  if (err.headers) for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
  res.setHeader('Content-Type', 'application/problem+json; charset=utf-8');
  res.end(JSON.stringify(body));
}

export function errorHandler(typeBase: string, log: Logger) {
  return function handleError(err: unknown, req: Request, res: Response): void {
    const p = isProblem(err) ? err : fromForeign(err);
    // The lifecycle gates answer 503 by design, for every request of a boot or a drain: not failures.
    if (p.status >= 500 && !EXPECTED_503.has(p.code)) log.error('request failed', { request_id: req.ctx?.requestId, method: req.method, path: req.path, error: err });
    if (res.headersSent) {
      res.destroy();
      return;
    }
    // An unread request body is not worth draining after a refusal: the connection closes.
    if (p.status === 413) res.shouldKeepAlive = false;
    sendProblem(res, p, req.ctx?.requestId ?? 'unknown', typeBase);
  };
}
