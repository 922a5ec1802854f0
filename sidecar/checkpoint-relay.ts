// The agent's checkpoints on their way to the platform: the runtime holds no credential, so it
// hands each one to its sidecar, which checks it, signs it with the run's secret and posts it,
// answering only once the platform kept it (the agent's next step waits for that). A resumed run's
// runtime reads the checkpoint it starts from the same way.
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

/** POST /runtime/checkpoint: 204 once the platform kept it; 400 not a checkpoint; 502 the platform did not take it. */
export async function relayCheckpoint(res: ServerResponse, raw: Buffer, url: string | undefined, secret: string): Promise<void> {
  if (!url) return sendJson(res, 404, { error: 'this run records no checkpoints' });
  let body: string;
  try {
    // re-serialized from the checked shape: only what a checkpoint holds is forwarded
    body = JSON.stringify(parseCheckpointState(JSON.parse(raw.toString('utf8'))));
  } catch (err) {
    return sendJson(res, 400, { error: err instanceof SyntaxError ? 'body is not JSON' : (err as Error).message });
  }
  let last = 'the platform could not be reached';
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    try {
      // a fresh message id per attempt: the platform keeps the latest step, so a repeat is harmless
      const answer = await requestText(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...signedRunEventHeaders(secret, body) },
        body,
        timeoutMs: 60_000,
      });
      if (answer.status >= 200 && answer.status < 300) {
        res.writeHead(204).end();
        return;
      }
      last = `the platform answered ${answer.status}`;
      if (answer.status < 500 && answer.status !== 408 && answer.status !== 429) break;
    } catch {
      last = 'the platform could not be reached';
    }
    await sleep(250 * 2 ** attempt);
  }
  sendJson(res, 502, { error: `checkpoint not recorded: ${last}` });
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
