// Posts a run's events to the platform: numbered 1, 2, 3 ..., one at a time and in order, each
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
}

interface Pending {
  id: string;
  sequence: number;
  type: RunEventType;
  event: object;
  /** fixed at the first attempt: every retry sends the same signed bytes */
  body?: string;
}

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
    this.queue.push({ id: newRunEventId(), sequence: this.sequence, type, event });
    if (this.terminal) this.opts.onEnd?.();
    this.kick();
    return this.sequence;
  }

  startHeartbeat(seconds: number): void {
    this.stopHeartbeat();
    this.heartbeat = setInterval(() => {
      // a heartbeat still waiting behind a slow delivery says the same thing as a new one
      if (!this.queue.some((e) => e.type === 'heartbeat')) this.emit('heartbeat', {});
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
      const event = this.queue[0];
      const outcome = await this.deliver(event);
      this.queue.shift();
      if (outcome === 'stop') {
        if (this.stopped) break; // closed by its owner: nothing to say
        this.stopped = true;
        this.stopHeartbeat();
        this.queue.length = 0;
        this.warn(`platform closed the run's event sink at event ${event.sequence}; posting stopped`);
      } else if (outcome !== 'delivered') {
        this.warn(`event ${event.sequence} (${event.type}) dropped`);
        if (TERMINAL_RUN_EVENT_TYPES.includes(event.type)) this.opts.onEndUndelivered?.();
      }
    }
  }

  /** The event's bytes, with the spans finished by now (the run's end waits a turn for the spans ending with it). */
  private async bodyOf(event: Pending): Promise<string> {
    if (event.body !== undefined) return event.body;
    if (TERMINAL_RUN_EVENT_TYPES.includes(event.type)) await this.opts.beforeEnd?.().catch(() => undefined);
    const take = this.opts.spans;
    if (take && TERMINAL_RUN_EVENT_TYPES.includes(event.type)) await new Promise((r) => setImmediate(r));
    const spans = take?.() ?? [];
    event.body = JSON.stringify(spans.length ? { ...event.event, spans } : event.event);
    return event.body;
  }

  private async deliver(event: Pending): Promise<Outcome> {
    const deadline = Date.now() + (event.type === 'heartbeat' ? this.heartbeatBudgetMs : this.retryBudgetMs);
    const body = await this.bodyOf(event);
    const traceHeader: Record<string, string> = this.opts.traceparent ? { traceparent: this.opts.traceparent } : {};
    for (let attempt = 0; ; attempt++) {
      let outcome: Outcome;
      let retryAfterMs = 0;
      try {
        const res = await requestText(this.opts.eventsUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...traceHeader, ...signedRunEventHeaders(this.opts.secret, body, { id: event.id }) },
          body,
          timeoutMs: this.attemptTimeoutMs,
        });
        outcome = classify(res.status);
        if (outcome === 'drop') this.warn(`event ${event.sequence} (${event.type}) refused with status ${res.status}`);
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
