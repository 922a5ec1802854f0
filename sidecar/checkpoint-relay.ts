// The agent's checkpoints on their way to the platform: the runtime holds no credential, so it
// hands each one to its sidecar, which checks it and takes it at once; a forwarder signs it with
// the run's secret and posts it, the latest first, retrying through an outage of the platform or
// its database as the run's events are (the agent never waits on the database). The run's end is
// posted only after the last checkpoint was kept or given up, so a failed run's resume starts from
// its last completed step. A resumed run's runtime reads the checkpoint it starts from here too.
import type { ServerResponse } from 'node:http';
import { requestText } from '../lib/outbound-http.ts';
import { parseCheckpointState } from '../lib/run-checkpoints.ts';
import { signedRunEventHeaders } from '../lib/run-events.ts';

const ATTEMPTS = 4;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export interface CheckpointForwarderOptions {
  /** how long one checkpoint is retried (network errors, 408, 429, 5xx): as long as the run's events */
  retryBudgetMs?: number;
  maxBackoffMs?: number;
  warn?: (message: string) => void;
}

/** Posts a run's checkpoints one at a time; a newer one replaces one still waiting or being retried. */
export class CheckpointForwarder {
  private latest: string | null = null;
  private pumping: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly url: string, private readonly secret: string, private readonly opts: CheckpointForwarderOptions = {}) {}

  offer(body: string): void {
    if (this.closed) return;
    this.latest = body;
    this.pumping ??= this.pump().finally(() => (this.pumping = null));
  }

  /** Resolves once every checkpoint offered so far was kept by the platform or given up. */
  async settled(): Promise<void> {
    while (this.pumping) await this.pumping;
  }

  close(): void {
    this.closed = true;
  }

  private async pump(): Promise<void> {
    while (this.latest !== null && !this.closed) {
      const body = this.latest;
      this.latest = null;
      await this.post(body);
    }
  }

  private async post(body: string): Promise<void> {
    const deadline = Date.now() + (this.opts.retryBudgetMs ?? 600_000);
    const warn = this.opts.warn ?? (() => {});
    for (let attempt = 0; !this.closed; attempt++) {
      // a newer step's checkpoint holds everything this one does
      if (attempt > 0 && this.latest !== null) return;
      let last: string;
      try {
        // a fresh message id per attempt: the platform keeps the latest step, so a repeat is harmless
        const answer = await requestText(this.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...signedRunEventHeaders(this.secret, body) },
          body,
          timeoutMs: 10_000,
        });
        if (answer.status >= 200 && answer.status < 300) return;
        last = `the platform answered ${answer.status}`;
        if (answer.status < 500 && answer.status !== 408 && answer.status !== 429) {
          warn(`checkpoint not recorded: ${last}`);
          return;
        }
      } catch {
        last = 'the platform could not be reached';
      }
      if (Date.now() > deadline) {
        warn(`checkpoint not recorded: ${last}`);
        return;
      }
      await sleep(Math.min(this.opts.maxBackoffMs ?? 5_000, 250 * 2 ** attempt));
    }
  }
}

/** POST /runtime/checkpoint: 204 once checked and taken for posting; 400 not a checkpoint; 404 the run records none. */
export function relayCheckpoint(res: ServerResponse, raw: Buffer, forwarder: CheckpointForwarder | null): void {
  if (!forwarder) return sendJson(res, 404, { error: 'this run records no checkpoints' });
  let body: string;
  try {
    // re-serialized from the checked shape: only what a checkpoint holds is forwarded
    body = JSON.stringify(parseCheckpointState(JSON.parse(raw.toString('utf8'))));
  } catch (err) {
    return sendJson(res, 400, { error: err instanceof SyntaxError ? 'body is not JSON' : (err as Error).message });
  }
  forwarder.offer(body);
  res.writeHead(204).end();
}

/** GET /runtime/checkpoint: the checkpoint a resumed run starts from (200), or 204 when it starts afresh (url absent: the platform is not asked). */
export async function fetchResumeCheckpoint(res: ServerResponse, url: string | undefined, secret: string): Promise<void> {
  if (!url) {
    res.writeHead(204).end();
    return;
  }
  for (let attempt = 0; ; attempt++) {
    try {
      const answer = await requestText(url, { headers: { accept: 'application/json', ...signedRunEventHeaders(secret, '') }, timeoutMs: 60_000 });
      if (answer.status === 204) {
        res.writeHead(204).end();
        return;
      }
      if (answer.status === 200) {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer.text) });
        res.end(answer.text);
        return;
      }
      if (answer.status < 500 || attempt + 1 >= ATTEMPTS) return sendJson(res, 502, { error: `the platform answered ${answer.status}` });
    } catch {
      if (attempt + 1 >= ATTEMPTS) return sendJson(res, 502, { error: 'the platform could not be reached' });
    }
    await sleep(250 * 2 ** attempt);
  }
}
