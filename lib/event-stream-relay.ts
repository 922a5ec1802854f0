// Passes a model provider's event stream (SSE) on to the caller piece by piece, as it comes, and
// remembers the last `usage` an event carried: a chat completion chunk's `usage`, or the
// `response.usage` of a Responses API event (response.completed). Shared by the API's model proxy
// and the sidecar's.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Writes the upstream's status and body to `res` (not ended); resolves to the last usage seen. */
export async function relayEventStream(upstream: IncomingMessage, res: ServerResponse, goneMessage: string): Promise<unknown> {
  res.writeHead(upstream.statusCode ?? 200, {
    'content-type': upstream.headers['content-type'] ?? 'text/event-stream',
    'cache-control': 'no-cache',
  });
  let usage: unknown;
  let pending = '';
  const decoder = new TextDecoder();
  const inspect = (line: string) => {
    if (!line.startsWith('data:')) return;
    const payload = line.slice(5).trim();
    if (payload === '' || payload === '[DONE]') return;
    try {
      const chunk = JSON.parse(payload);
      const carried = chunk?.usage ?? chunk?.response?.usage;
      if (carried) usage = carried;
    } catch {
      // not JSON: passed on untouched
    }
  };
  for await (const piece of upstream as AsyncIterable<Buffer>) {
    if (!res.write(piece)) {
      // wait for the caller to read, or give up when it went away
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.once('drain', done);
        res.once('close', done);
      });
    }
    if (res.destroyed) throw new Error(goneMessage);
    pending += decoder.decode(piece, { stream: true });
    const lines = pending.split(/\r?\n/);
    pending = lines.pop() ?? '';
    for (const line of lines) inspect(line);
  }
  inspect(pending);
  return usage;
}
