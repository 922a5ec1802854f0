// Parking a run that waits for a person's approval: the agent runtime hands its sidecar the state
// of the model turn whose calls are outstanding (the conversation with the assistant message that
// made them, the results already in, the workspace, the calls still waiting) each time it changes;
// when the platform asks (it reads `park: true` with the request), the sidecar posts that state as
// the run's checkpoint, signed like the events. Once it was kept, the held call is never made by
// this sandbox: the platform stops it, and a fresh one makes the call with the decision.
import type { ServerResponse } from 'node:http';
import { requestText } from '../lib/outbound-http.ts';
import { parseCheckpointState } from '../lib/run-checkpoints.ts';
import { signedRunEventHeaders } from '../lib/run-events.ts';

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export class ParkHandover {
  private latest: string | null = null;
  private handedOver = false;

  constructor(private readonly checkpointUrl: string | undefined, private readonly secret: string) {}

  /** POST /runtime/pending: 204 taken; 400 not a checkpoint with pending calls; 404 the run records no checkpoints. */
  accept(res: ServerResponse, raw: Buffer): void {
    if (!this.checkpointUrl) return sendJson(res, 404, { error: 'this run records no checkpoints' });
    let body: string;
    try {
      const state = parseCheckpointState(JSON.parse(raw.toString('utf8')));
      if (!state.pending?.length) throw new Error('invalid checkpoint: pending must name at least one call');
      body = JSON.stringify(state);
    } catch (err) {
      return sendJson(res, 400, { error: err instanceof SyntaxError ? 'body is not JSON' : (err as Error).message });
    }
    // once handed over, the sandbox is on its way out: what the runtime does after is not kept
    if (!this.handedOver) this.latest = body;
    res.writeHead(204).end();
  }

  /** Whether the run's pending state was kept by the platform (the run parks; nothing more is made here). */
  get done(): boolean {
    return this.handedOver;
  }

  /** Posts the latest pending state as the run's checkpoint; true once the platform kept it. */
  async handOver(): Promise<boolean> {
    if (this.handedOver) return true;
    if (!this.checkpointUrl || this.latest === null) return false;
    try {
      const answer = await requestText(this.checkpointUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...signedRunEventHeaders(this.secret, this.latest) },
        body: this.latest,
        timeoutMs: 30_000,
      });
      if (answer.status >= 200 && answer.status < 300) this.handedOver = true;
    } catch { /* asked again at the next read of the request */ }
    return this.handedOver;
  }
}
