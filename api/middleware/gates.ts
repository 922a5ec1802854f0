// 503 starting until boot completes; 503 shutting_down for new writes while draining.
import type { Request, Response } from '../http.ts';
import { problem } from '../../lib/problem.ts';
import type { Lifecycle } from '../lifecycle.ts';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function lifecycleGates(lc: Lifecycle) {
  return function gate(req: Request, res: Response): void {
    if (!lc.ready) throw problem('starting', { retryAfter: 1, detail: 'The server is still starting.' });
    if (lc.draining && !READS.has(req.method)) {
      throw problem('shutting_down', { retryAfter: lc.drainSeconds, detail: 'The server is shutting down; retry against another instance.' });
    }
    lc.enter();
    // A response emits 'close' once, whether it finished or the connection dropped first.
    res.once('close', () => lc.leave());
  };
}
