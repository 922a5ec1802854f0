// A run's log, read once (GET /api/runs/{id}/logs, sequence-paged) or followed on the realtime
// stream (GET /api/realtime/runs/{id}, Server-Sent Events) until the run ends. The stream has no
// replay, so as the spec advises, every (re)connection is followed by a catch-up from
// /logs?since=<last sequence seen>; entries are printed once each, in sequence order.
import { PlatformError } from '../sdk/src/core.ts';
import { call, urlOf, type Session } from './session.ts';

export interface LogEntry {
  sequence: number;
  level: string;
  message: string;
  data?: unknown;
  createdAt: string;
}

export const TERMINAL = new Set(['success', 'failed', 'timeout', 'cancelled']);
/** the stream pings every 30 s; silence longer than this means a dead connection */
const IDLE_MS = 75_000;

/** Entries after `since`, every page of them; answers the last sequence. */
export async function readLogs(s: Session, runId: string, since: number, onEntry: (e: LogEntry) => void): Promise<number> {
  for (;;) {
    const page = await call<{ data: LogEntry[]; hasMore: boolean; next_since: number }>(s, 'GET', `/api/runs/${encodeURIComponent(runId)}/logs`, { query: { since, limit: 1000 } });
    for (const e of page.data) {
      if (e.sequence > since) {
        onEntry(e);
        since = e.sequence;
      }
    }
    if (!page.hasMore || page.data.length === 0) return since;
  }
}

interface Frame {
  event: string;
  data: string;
}

/** Frames of an event stream as they arrive. */
async function* framesOf(body: ReadableStream<Uint8Array>, signal: AbortSignal, idle: () => void): AsyncGenerator<Frame> {
  const decoder = new TextDecoder();
  let buffer = '';
  const reader = body.getReader();
  const onAbort = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      idle();
      buffer += decoder.decode(value, { stream: true });
      let end: RegExpExecArray | null;
      while ((end = /\r?\n\r?\n/.exec(buffer))) {
        const block = buffer.slice(0, end.index);
        buffer = buffer.slice(end.index + end[0].length);
        let event = 'message';
        const data: string[] = [];
        for (const line of block.split(/\r?\n/)) {
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'event') event = value;
          else if (field === 'data') data.push(value);
        }
        yield { event, data: data.join('\n') };
      }
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

export interface FollowOptions {
  onEntry(e: LogEntry): void;
  /** a status the run reached (from the stream) */
  onStatus?(status: string): void;
  /** a reconnection after a dropped stream */
  onReconnect?(attempt: number, reason: string): void;
}

/** Follows a run's log until the run ends; answers the run as GET /api/runs/{id} then shows it. */
export async function followRun(s: Session, runId: string, opts: FollowOptions): Promise<Record<string, unknown>> {
  let since = 0;
  let attempt = 0;
  const id = encodeURIComponent(runId);
  for (;;) {
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const idle = () => {
      clearTimeout(timer);
      timer = setTimeout(() => abort.abort(), IDLE_MS);
    };
    let reason = 'the stream ended';
    try {
      // a person's token names its organization and space as query parameters on streams
      const query = s.auth === 'oauth' ? { orgId: s.org, spaceId: s.space, channels: 'run_update,run_log' } : { channels: 'run_update,run_log' };
      const res = await s.fetch(urlOf(s, `/api/realtime/runs/${id}`, query), { headers: { accept: 'text/event-stream' }, signal: abort.signal });
      idle();
      attempt = 0;
      // what happened while no stream was open
      since = await readLogs(s, runId, since, opts.onEntry);
      let ended = false;
      for await (const frame of framesOf(res.body!, abort.signal, idle)) {
        if (frame.event === 'run_log') {
          const entry = JSON.parse(frame.data) as LogEntry;
          if (entry.sequence === since + 1) {
            opts.onEntry(entry);
            since = entry.sequence;
          } else if (entry.sequence > since) {
            since = await readLogs(s, runId, since, opts.onEntry);
          }
        } else if (frame.event === 'run_update') {
          const status = String((JSON.parse(frame.data) as { status?: unknown }).status);
          opts.onStatus?.(status);
          if (TERMINAL.has(status)) {
            ended = true;
            break;
          }
        }
      }
      if (ended) {
        abort.abort();
        await readLogs(s, runId, since, opts.onEntry);
        return await call(s, 'GET', `/api/runs/${id}`);
      }
    } catch (err) {
      // a refusal (not found, no permission) does not get better by reconnecting
      if (err instanceof PlatformError && err.status >= 400 && err.status < 500 && err.status !== 429) throw err;
      reason = abort.signal.aborted ? 'no event for a while' : (err as Error).message;
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
    // the stream dropped before the run ended: has it ended meanwhile?
    const run = await call<Record<string, unknown>>(s, 'GET', `/api/runs/${id}`).catch(() => null);
    if (run && TERMINAL.has(String(run.status))) {
      await readLogs(s, runId, since, opts.onEntry);
      return run;
    }
    attempt++;
    opts.onReconnect?.(attempt, reason);
    await new Promise((r) => setTimeout(r, Math.min(250 * 2 ** attempt, 5000)));
  }
}
