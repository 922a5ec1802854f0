// A realtime stream as an integrator reads it: the `eventsource` npm client (not our code), with
// every named event collected in arrival order and a way to wait for what is expected.
import { EventSource } from 'eventsource';

export const STREAM_EVENTS = ['run_update', 'run_log', 'run_metric', 'connection_update', 'chat_session_update', 'ping'] as const;

export interface Frame {
  event: string;
  id: string;
  data: any;
}

export interface Listener {
  frames: Frame[];
  /** the HTTP status of a refused (re)connection, once one happened */
  refusedWith: number | null;
  /** resolves once `done(frames)` holds */
  until(done: (frames: Frame[]) => boolean, what: string, ms?: number): Promise<Frame[]>;
  /** resolves once `n` frames of `event` arrived */
  count(event: string, n: number, ms?: number): Promise<Frame[]>;
  of(event: string): Frame[];
  close(): void;
}

/** `keep` shapes what is kept of each event's data (a test holding thousands of frames keeps little). */
export function listen(url: string, headers: Record<string, string> = {}, keep: (data: any) => any = (d) => d): Listener {
  const frames: Frame[] = [];
  let wake: (() => void) | null = null;
  const es = new EventSource(url, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }),
  });
  const l: Listener = {
    frames,
    refusedWith: null,
    async until(done, what, ms = 20_000) {
      const started = Date.now();
      while (!done(frames)) {
        if (Date.now() - started > ms) throw new Error(`waited ${ms} ms for ${what}; got ${JSON.stringify(frames.map((f) => [f.event, f.data?.status ?? f.data?.level ?? '']))}`);
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 50);
        });
      }
      return frames;
    },
    count(event, n, ms) {
      return l.until((f) => f.filter((x) => x.event === event).length >= n, `${n} ${event} frames`, ms);
    },
    of: (event) => frames.filter((f) => f.event === event),
    close: () => es.close(),
  };
  for (const name of STREAM_EVENTS) {
    es.addEventListener(name, (e) => {
      frames.push({ event: name, id: e.lastEventId, data: keep(JSON.parse(e.data)) });
      wake?.();
    });
  }
  es.addEventListener('error', (e) => {
    const code = (e as unknown as { code?: number }).code;
    if (typeof code === 'number' && code >= 400) {
      l.refusedWith = code;
      wake?.();
    }
  });
  return l;
}
