// One client's realtime stream and who may read what on it (spec, Realtime stream events, rules
// 1-5): the audience a stream was opened for, the run facts an event is judged by, and the frame
// queue that drops a client which stops reading.
import type { Socket } from 'node:net';
import { randomBase62 } from '../../../lib/ids.ts';
import type { Permission } from '../../../lib/permissions.ts';
import type { Response } from '../../http.ts';

export const EVENT_NAMES = ['run_update', 'run_log', 'run_metric', 'connection_update', 'chat_session_update', 'ping'] as const;
export type EventName = (typeof EVENT_NAMES)[number];

/** Rule 3: a client that stops reading is dropped once about this many frames wait for it. */
export const MAX_QUEUED_FRAMES = 2000;

export interface StreamAudience {
  orgId: string;
  spaceId: string;
  userId: string;
  /** an API key acting for an end-user (Service-User) sees only that end-user's runs */
  endUserId: string | null;
  permissions: ReadonlySet<Permission>;
}

export interface StreamOptions {
  audience: StreamAudience;
  /** one run (its stream opens with a snapshot), or every run of an agent, or (neither) the space */
  runId?: string;
  agentId?: string;
  /** event names asked for; null: every event */
  channels: ReadonlySet<string> | null;
  verbose: boolean;
  /** groups streams holding the same credential, re-checked once per identity change */
  credentialKey: string;
  /** the caller's permissions now, or null when the credential no longer works */
  recheck: () => Promise<ReadonlySet<Permission> | null>;
}

export interface RunMeta {
  id: string;
  orgId: string;
  spaceId: string;
  agentId: string;
  actorUserId: string | null;
  endUserId: string | null;
}

const STATUS_RANK: Record<string, number> = { pending: 0, running: 1 };
const rank = (status: unknown) => STATUS_RANK[String(status)] ?? 2;

/** What a run waits for, as one word for comparing announcements ('' when nothing is awaited). */
export function awaitingOf(wire: Record<string, unknown>): string {
  const a = wire.awaiting as { approval_id?: unknown } | null | undefined;
  return a && typeof a.approval_id === 'string' ? a.approval_id : '';
}

/** Rule 1: every run of the space with runs:read-all, else the caller's own; an end-user only theirs. */
export function mayRead(a: StreamAudience, run: RunMeta): boolean {
  if (run.orgId !== a.orgId || run.spaceId !== a.spaceId) return false;
  if (a.endUserId) return run.endUserId === a.endUserId;
  if (a.permissions.has('runs:read-all')) return true;
  return run.actorUserId === a.userId && run.endUserId === null;
}

/** run_update without verbose: status and timing, and what the run awaits while it does. */
export function briefRun(wire: Record<string, unknown>): Record<string, unknown> {
  return {
    id: wire.id, object: 'run', status: wire.status, packageId: wire.packageId, spaceId: wire.spaceId,
    createdAt: wire.createdAt, started_at: wire.started_at, finished_at: wire.finished_at, duration_ms: wire.duration_ms,
    ...(wire.awaiting === undefined ? {} : { awaiting: wire.awaiting }),
  };
}

export class Stream {
  readonly id = randomBase62(12);
  private n = 0;
  private queue: string[] = [];
  private head = 0;
  private held: Array<() => void> | null = [];
  private lastRank = -1;
  private lastAwaiting = '';
  /** the connection, once the response's head is out: frames are written to it directly */
  private wire: Socket | null = null;
  private readonly onDrain = () => this.flush();
  lastWrite = Date.now();
  closed = false;

  constructor(
    readonly res: Response,
    readonly opts: StreamOptions,
    private readonly onDrop: () => void,
  ) {
    res.on('drain', this.onDrain);
  }

  get queued(): number {
    return this.queue.length - this.head;
  }

  wants(event: string): boolean {
    return event === 'ping' || !this.opts.channels || this.opts.channels.has(event);
  }

  covers(run: RunMeta): boolean {
    if (this.opts.runId !== undefined && this.opts.runId !== run.id) return false;
    if (this.opts.agentId !== undefined && this.opts.agentId !== run.agentId) return false;
    return mayRead(this.opts.audience, run);
  }

  /**
   * Writes the opening frames (the run's snapshot, read after the stream was registered, then a
   * ping), then whatever arrived meanwhile.
   */
  start(snapshot?: Record<string, unknown>): void {
    if (this.closed) return;
    this.res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache, no-transform', 'X-Accel-Buffering': 'no' });
    if (snapshot) this.runUpdate(snapshot.status, JSON.stringify(this.opts.verbose ? snapshot : briefRun(snapshot)), true, awaitingOf(snapshot));
    this.send('ping', '{}', true);
    // the head went out with the first frame; from here on each frame is one write of one
    // ready-framed chunk to the connection (a fan-out writes to every subscriber: the response's own
    // write costs four buffers, a cork and a tick per frame)
    const socket = this.res.socket;
    if (socket && this.res.headersSent && !this.closed) {
      this.wire = socket;
      socket.on('drain', this.onDrain);
    }
    const held = this.held!;
    this.held = null;
    for (const f of held) f();
  }

  /** `awaiting`: what the run waits for (awaitingOf), so a running run's approval coming and going is announced. */
  runUpdate(status: unknown, data: string, now = false, awaiting = ''): void {
    if (this.held && !now) {
      this.held.push(() => this.runUpdate(status, data, false, awaiting));
      return;
    }
    // a single-run stream never goes back: an announcement its snapshot already shows is skipped
    // (the same status waiting for the same thing; a status it has passed)
    if (this.opts.runId !== undefined) {
      const r = rank(status);
      if (r < this.lastRank || (r === this.lastRank && awaiting === this.lastAwaiting)) return;
      this.lastRank = r;
      this.lastAwaiting = awaiting;
    }
    this.send('run_update', data, true);
  }

  send(event: EventName, data: string, now = false, extra = ''): void {
    if (this.closed || !this.wants(event)) return;
    if (this.held && !now) {
      this.held.push(() => this.send(event, data));
      return;
    }
    const frame = `id: ${this.id}:${++this.n}\nevent: ${event}\n${extra}data: ${data}\n\n`;
    this.lastWrite = Date.now();
    if (this.queued === 0 && !this.needsDrain()) {
      this.put(frame);
      return;
    }
    this.queue.push(frame);
    if (this.queued >= MAX_QUEUED_FRAMES) this.drop();
  }

  private flush(): void {
    while (this.queued > 0 && !this.needsDrain() && !this.closed) this.put(this.queue[this.head++]);
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  private needsDrain(): boolean {
    return this.wire ? this.wire.writableNeedDrain : this.res.writableNeedDrain;
  }

  private put(frame: string): void {
    const w = this.wire;
    if (!w) this.res.write(frame);
    else if (this.res.chunkedEncoding) w.write(`${Buffer.byteLength(frame).toString(16)}\r\n${frame}\r\n`);
    else w.write(frame);
  }

  private release(): void {
    this.closed = true;
    // the connection may serve other requests after this stream (keep-alive)
    this.wire?.off('drain', this.onDrain);
    this.queue = [];
    this.head = 0;
  }

  drop(): void {
    if (this.closed) return;
    this.release();
    this.onDrop();
    this.res.destroy();
  }

  /** Ends the stream after a last frame (shutdown) or none (access gone). */
  end(finalFrame?: { data: string; retryMs: number }): void {
    if (this.closed) return;
    if (finalFrame) this.send('ping', finalFrame.data, true, `retry: ${finalFrame.retryMs}\n`);
    this.release();
    this.res.end();
  }
}
