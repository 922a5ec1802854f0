// Posts a run's events to the platform: numbered 1, 2, 3 ..., in order, one post at a time. The
// events ready together (those queued within a short window, or while the previous post was in
// flight) go in one post, a batch ({ events: [...] }); a lone event goes as itself. Each post is
// signed with a fresh message id that its retries keep (so the platform can refuse replays).
import {
  newRunEventId,
  signedRunEventHeaders,
  TERMINAL_RUN_EVENT_TYPES,
  type RunEventDataByType,
  type RunEventType,
} from '../lib/run-events.ts';
import { requestText } from '../lib/outbound-http.ts';
import { recordProblemCode } from '../lib/problem-log.ts';
import type { SpanRecord } from '../lib/tracing/records.ts';

export interface EventPosterOptions {
  eventsUrl: string;
  secret: string;
  /**
   * How long one event is retried on network errors, 408, 429 and 5xx before it is dropped: long,
   * so that an outage of the platform loses neither the run's output nor its end.
   */
  retryBudgetMs?: number;
  /** the same for a heartbeat, which the next one replaces */
  heartbeatBudgetMs?: number;
  attemptTimeoutMs?: number;
  /**
   * The longest pause between two attempts (5 s when absent). The sidecar keeps it within a
   * heartbeat, so a platform back from a restart hears from the run before it judges it silent.
   */
  maxBackoffMs?: number;
  /** the first event's sequence (1 when absent): a run woken from its park goes on from its last sandbox's */
  firstSequence?: number;
  /** awaited before the run's end is first sent (what must reach the platform before it: the last checkpoint) */
  beforeEnd?: () => Promise<void>;
  /** called once the run's end (completed or failed) is queued: from then on the sidecar holds it */
  onEnd?: () => void;
  /** called when the run's end was dropped: undeliverable within its budget, or refused */
  onEndUndelivered?: () => void;
  /** operator diagnostics; never receives the secret */
  warn?: (message: string) => void;
  /** the spans finished since the last call: each event carries those finished before it is first sent */
  spans?: () => SpanRecord[];
  /** the run's trace context, sent with every post so the platform's spans join the run's trace */
  traceparent?: string;
  /**
   * How long a post waits for more events to go with it (20 ms when absent; 0: none). The run's end
   * is sent at once, with whatever is queued before it, so a short run's start, output and end go
   * in one post.
   */
  batchWindowMs?: number;
  /**
   * How long the post carrying 'started' waits for more (250 ms when absent): a run that ends by
   * then is reported in one post, and the workflow hears only its end. flush() ends the wait.
   */
  startWindowMs?: number;
}

/** The most events, and about the most bytes, one post carries (the platform takes up to 500 and 1 MiB). */
const MAX_BATCH_EVENTS = 100;
const MAX_BATCH_BYTES = 512 * 1024;

interface Pending {
  sequence: number;
  type: RunEventType;
  event: object;
}

/** One post: its events, and the message id and signed bytes its retries keep. */
interface Batch {
  id: string;
  events: Pending[];
  /** fixed at the first attempt: every retry sends the same signed bytes */
  body?: string;
}

const isEnd = (e: Pending) => TERMINAL_RUN_EVENT_TYPES.includes(e.type);

type Outcome = 'delivered' | 'retry' | 'drop' | 'stop';

function classify(status: number): Outcome {
  if (status >= 200 && status < 300) return 'delivered';
  // 409 message_replayed: an earlier attempt of this very message was stored
  if (status === 409) return 'delivered';
  if (status === 410) return 'stop';
  if (status === 408 || status === 429 || status >= 500) return 'retry';
  return 'drop';
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class EventPoster {
  private sequence = 0;
  private readonly queue: Pending[] = [];
  /** the post under way (a heartbeat in it stands for a new one) */
  private inFlight: Batch | null = null;
  /** ends the wait for more events early (the run's end was queued) */
  private wake: (() => void) | null = null;
  private readonly batchWindowMs: number;
  private readonly startWindowMs: number;
  /** callers of flush(), each waiting for the events queued before it to be posted */
  private flushes: Array<{ upTo: number; resolve: () => void }> = [];
  private draining: Promise<void> | null = null;
  private stopped = false;
  private terminal = false;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly retryBudgetMs: number;
  private readonly heartbeatBudgetMs: number;
  private readonly attemptTimeoutMs: number;
  private readonly maxBackoffMs: number;
  private readonly warn: (message: string) => void;

  constructor(private readonly opts: EventPosterOptions) {
    this.sequence = Math.max(1, opts.firstSequence ?? 1) - 1;
    this.retryBudgetMs = opts.retryBudgetMs ?? 600_000;
    this.heartbeatBudgetMs = opts.heartbeatBudgetMs ?? 30_000;
    this.attemptTimeoutMs = opts.attemptTimeoutMs ?? 10_000;
    this.maxBackoffMs = opts.maxBackoffMs ?? 5_000;
    this.batchWindowMs = opts.batchWindowMs ?? 20;
    this.startWindowMs = opts.startWindowMs ?? 250;
    this.warn = opts.warn ?? ((m) => process.stderr.write(`sidecar: ${m}\n`));
  }

  /** True once the platform answered 410: nothing more is posted. */
  get closed(): boolean {
    return this.stopped;
  }

  /** True once completed or failed has been queued. */
  get ended(): boolean {
    return this.terminal;
  }

  /** Queues one event; returns its sequence number, or undefined when the run no longer takes events. */
  emit<K extends RunEventType>(type: K, data: RunEventDataByType[K]): number | undefined {
    if (this.stopped || this.terminal) return undefined;
    if (TERMINAL_RUN_EVENT_TYPES.includes(type)) {
      this.terminal = true;
      this.stopHeartbeat();
    }
    this.sequence += 1;
    if (type === 'failed') recordProblemCode((data as { code: string }).code);
    const event = { sequence: this.sequence, type, at: new Date().toISOString(), data };
    this.queue.push({ sequence: this.sequence, type, event });
    if (this.terminal) {
      this.opts.onEnd?.();
      this.wake?.();
    }
    this.kick();
    return this.sequence;
  }

  /**
   * Resolves once every event queued so far was posted (or given up): what must reach the
   * platform before another of the run's requests (an approval is asked of a running run only).
   */
  flush(): Promise<void> {
    if (this.queue.length === 0 && !this.inFlight) return Promise.resolve();
    const flushed = new Promise<void>((resolve) => this.flushes.push({ upTo: this.sequence, resolve }));
    this.wake?.();
    return flushed;
  }

  private settleFlushes(): void {
    const posted = this.stopped || this.queue.length === 0 ? Infinity : this.queue[0].sequence - 1;
    const done = this.flushes.filter((f) => f.upTo <= posted);
    this.flushes = this.flushes.filter((f) => f.upTo > posted);
    for (const f of done) f.resolve();
  }

  startHeartbeat(seconds: number): void {
    this.stopHeartbeat();
    this.heartbeat = setInterval(() => {
      // a heartbeat still waiting behind a slow delivery says the same thing as a new one
      const waiting = [...this.queue, ...(this.inFlight?.events ?? [])];
      if (!waiting.some((e) => e.type === 'heartbeat')) this.emit('heartbeat', {});
    }, seconds * 1000);
  }

  stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  /** Posts nothing more and forgets what is queued (the run's session ended; its secret goes with it). */
  close(): void {
    this.stopped = true;
    this.stopHeartbeat();
    this.queue.length = 0;
  }

  private kick(): void {
    if (this.draining) return;
    this.draining = this.drain().finally(() => {
      this.draining = null;
      if (this.queue.length > 0 && !this.stopped) this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0 && !this.stopped) {
      await this.gather();
      // closed while it gathered (the run's session ended): the queue went with it
      if (this.stopped || this.queue.length === 0) break;
      const batch: Batch = { id: newRunEventId(), events: this.take() };
      this.inFlight = batch;
      const outcome = await this.deliver(batch);
      this.inFlight = null;
      const first = batch.events[0];
      const last = batch.events[batch.events.length - 1];
      const which = batch.events.length === 1 ? `event ${first.sequence} (${first.type})` : `events ${first.sequence}-${last.sequence}`;
      if (outcome === 'stop') {
        if (this.stopped) break; // closed by its owner: nothing to say
        this.stopped = true;
        this.stopHeartbeat();
        this.queue.length = 0;
        this.warn(`platform closed the run's event sink at event ${first.sequence}; posting stopped`);
      } else if (outcome !== 'delivered') {
        this.warn(`${which} dropped`);
        if (batch.events.some(isEnd)) this.opts.onEndUndelivered?.();
      }
      this.settleFlushes();
    }
    this.settleFlushes();
  }

  /**
   * Waits the batch window for more events (the start window when 'started' is queued), unless the
   * run's end is queued (it goes at once), a flush is asked for, or a post is full.
   */
  private async gather(): Promise<void> {
    const windowMs = this.queue.some((e) => e.type === 'started') ? this.startWindowMs : this.batchWindowMs;
    if (windowMs <= 0 || this.flushes.length > 0 || this.queue.some(isEnd) || this.queue.length >= MAX_BATCH_EVENTS) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, windowMs);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wake = null;
  }

  /** Takes the events of the next post off the queue: in order, within the post's bounds (at least one). */
  private take(): Pending[] {
    let bytes = 0;
    let count = 0;
    for (const e of this.queue) {
      const size = JSON.stringify(e.event).length;
      if (count > 0 && (count >= MAX_BATCH_EVENTS || bytes + size > MAX_BATCH_BYTES)) break;
      bytes += size;
      count += 1;
    }
    return this.queue.splice(0, count);
  }

  /** The post's bytes, with the spans finished by now (the run's end waits a turn for the spans ending with it). */
  private async bodyOf(batch: Batch): Promise<string> {
    if (batch.body !== undefined) return batch.body;
    const ending = batch.events.some(isEnd);
    if (ending) await this.opts.beforeEnd?.().catch(() => undefined);
    const take = this.opts.spans;
    if (take && ending) await new Promise((r) => setImmediate(r));
    const spans = take?.() ?? [];
    const withSpans = spans.length ? { spans } : {};
    batch.body = JSON.stringify(batch.events.length === 1 ? { ...batch.events[0].event, ...withSpans } : { events: batch.events.map((e) => e.event), ...withSpans });
    return batch.body;
  }

  private async deliver(batch: Batch): Promise<Outcome> {
    const onlyHeartbeats = batch.events.every((e) => e.type === 'heartbeat');
    const deadline = Date.now() + (onlyHeartbeats ? this.heartbeatBudgetMs : this.retryBudgetMs);
    const body = await this.bodyOf(batch);
    const traceHeader: Record<string, string> = this.opts.traceparent ? { traceparent: this.opts.traceparent } : {};
    for (let attempt = 0; ; attempt++) {
      let outcome: Outcome;
      let retryAfterMs = 0;
      try {
        const res = await requestText(this.opts.eventsUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...traceHeader, ...signedRunEventHeaders(this.opts.secret, body, { id: batch.id }) },
          body,
          timeoutMs: this.attemptTimeoutMs,
        });
        outcome = classify(res.status);
        if (outcome === 'drop') {
          const first = batch.events[0];
          const which = batch.events.length === 1 ? `event ${first.sequence} (${first.type})` : `events ${first.sequence}-${batch.events[batch.events.length - 1].sequence}`;
          this.warn(`${which} refused with status ${res.status}`);
        }
        const retryAfter = Number(res.headers['retry-after']);
        if (Number.isFinite(retryAfter) && retryAfter > 0) retryAfterMs = retryAfter * 1000;
      } catch {
        outcome = 'retry';
      }
      if (outcome !== 'retry') return outcome;
      if (this.stopped) return 'stop';
      const backoff = Math.max(retryAfterMs, Math.min(200 * 2 ** attempt, this.maxBackoffMs) * (0.75 + Math.random() / 2));
      if (Date.now() + backoff > deadline) return 'drop';
      await sleep(backoff);
      if (this.stopped) return 'stop';
    }
  }
}
