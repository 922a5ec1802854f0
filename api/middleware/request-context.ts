// First stage: a request id on every response, the W3C traceparent echoed when valid, the client IP.
import type { NextFunction, Request, Response } from 'express';
import { newRequestId } from '../../lib/ids.ts';
import type { RequestContext } from '../context.ts';

const EMPTY = new Set<never>();
const TRACEPARENT = /^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

export function requestContext(req: Request, res: Response, next: NextFunction): void {
  const requestId = newRequestId();
  // The client IP (proxy-aware, so not free) is worked out only when something reads it.
  const ctx = { requestId, userAgent: req.headers['user-agent'], permissions: EMPTY } as unknown as RequestContext;
  let ip: string | undefined;
  Object.defineProperty(ctx, 'ip', { enumerable: true, get: () => (ip ??= req.ip ?? '') });
  req.ctx = ctx;
  res.setHeader('Request-Id', requestId);
  const tp = req.headers.traceparent;
  if (typeof tp === 'string' && tp.length === 55 && TRACEPARENT.test(tp) && !tp.startsWith('ff')) {
    res.setHeader('traceparent', tp);
  }
  next();
}
