// 503 starting until boot completes; 503 shutting_down for new writes while draining.
import type { NextFunction, Request, Response } from 'express';
import { problem } from '../../lib/problem.ts';
import type { Lifecycle } from '../lifecycle.ts';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function lifecycleGates(lc: Lifecycle) {
  return function gate(req: Request, res: Response, next: NextFunction): void {
    if (!lc.ready) return next(problem('starting', { retryAfter: 1, detail: 'The server is still starting.' }));
    if (lc.draining && !READS.has(req.method)) {
      return next(problem('shutting_down', { retryAfter: lc.drainSeconds, detail: 'The server is shutting down; retry against another instance.' }));
    }
    lc.enter();
    let left = false;
    const leave = () => {
      if (!left) {
        left = true;
        lc.leave();
      }
    };
    res.once('finish', leave);
    res.once('close', leave);
    next();
  };
}
