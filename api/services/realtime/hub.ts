// The streams of one API process and what feeds them: committed run status changes from the run
// status feed (one LISTEN connection per process), logs, metrics and connection changes from the
// realtime bus (one subscription per process). Each event is serialized once per variant (brief,
// verbose) and written to the streams that may see it (spec, Realtime stream events, rules 1-5).
import type { Socket } from 'node:net';
import type pg from 'pg';
import { randomBase62 } from '../../../lib/ids.ts';
import type { Logger } from '../../../lib/log.ts';
import type { Permission } from '../../../lib/permissions.ts';
import type { Response } from '../../http.ts';
import type { AuthCache } from '../auth-cache.ts';
import type { RunStatusChange, RunStatusFeed } from '../runs/status-feed.ts';
import type { RealtimeBus, RealtimeMessage } from './bus.ts';

export const EVENT_NAMES = ['run_update', 'run_log', 'run_metric', 'connection_update', 'chat_session_update', 'ping'] as const;
export type EventName = (typeof EVENT_NAMES)[number];

/** Rule 3: a client that stops reading is dropped once about this many frames wait for it. */
export const MAX_QUEUED_FRAMES = 2000;
const META_CACHE_MAX = 20_000;

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

interface RunMeta {
  id: string;
  orgId: string;
  spaceId: string;
  agentId: string;
  actorUserId: string | null;
  endUserId: string | null;
}

export interface RealtimeStats {
  streams: number;
  /** frames waiting in this process for clients that read slower than events come */
  queuedFrames: number;
  dropped: number;
}

export interface RealtimeHub {
  open(res: Response, opts: StreamOptions): Stream;
  /** publishes through the bus to every instance */
  publish(message: RealtimeMessage): Promise<void>;
  stats(): RealtimeStats;
  /** graceful shutdown: every stream gets a final event and is closed, so clients reconnect elsewhere */
  closeStreams(): void;
  close(): Promise<void>;
}

const STATUS_RANK: Record<string, number> = { pending: 0, running: 1 };
const rank = (status: unknown) => STATUS_RANK[String(status)] ?? 2;

/** Rule 1: every run of the space with runs:read-all, else the caller's own; an end-user only theirs. */
export function mayRead(a: StreamAudience, run: RunMeta): boolean {
  if (run.orgId !== a.orgId || run.spaceId !== a.spaceId) return false;
  if (a.endUserId) return run.endUserId === a.endUserId;
  if (a.permissions.has('runs:read-all')) return true;
  return run.actorUserId === a.userId && run.endUserId === null;
}

/** run_update without verbose: status and timing. */
export function briefRun(wire: Record<string, unknown>): Record<string, unknown> {
  return {
    id: wire.id, object: 'run', status: wire.status, packageId: wire.packageId, spaceId: wire.spaceId,
    createdAt: wire.createdAt, started_at: wire.started_at, finished_at: wire.finished_at, duration_ms: wire.duration_ms,
  };
}

export class Stream {
  readonly id = randomBase62(12);
  private n = 0;
  private queue: string[] = [];
  private head = 0;
  private held: Array<() => void> | null = [];
  private lastRank = -1;
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
    if (snapshot) this.runUpdate(snapshot.status, JSON.stringify(this.opts.verbose ? snapshot : briefRun(snapshot)), true);
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

  runUpdate(status: unknown, data: string, now = false): void {
    if (this.held && !now) {
      this.held.push(() => this.runUpdate(status, data));
      return;
    }
    // a single-run stream never goes back: an announcement its snapshot already shows is skipped
    if (this.opts.runId !== undefined) {
      if (rank(status) <= this.lastRank) return;
      this.lastRank = rank(status);
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

export interface HubDeps {
  pool: pg.Pool;
  feed: RunStatusFeed;
  bus: RealtimeBus;
  authCache: AuthCache;
  log: Logger;
  /** keep-alive: a ping after this long without another frame */
  pingMs: number;
}

export function createRealtimeHub(deps: HubDeps): RealtimeHub {
  const { pool, log } = deps;
  const bySpace = new Map<string, Set<Stream>>();
  const metas = new Map<string, RunMeta>();
  let dropped = 0;
  let streamCount = 0;

  const remember = (m: RunMeta) => {
    if (metas.size >= META_CACHE_MAX && !metas.has(m.id)) metas.delete(metas.keys().next().value!);
    metas.set(m.id, m);
  };
  const metaOf = async (runId: string): Promise<RunMeta | null> => {
    const known = metas.get(runId);
    if (known) return known;
    const { rows } = await pool.query<{ org_id: string; space_id: string; agent_id: string; actor_user_id: string | null; end_user_id: string | null }>(
      'SELECT org_id, space_id, agent_id, actor_user_id, end_user_id FROM runs WHERE id = $1',
      [runId],
    );
    const r = rows[0];
    if (!r) return null;
    const m = { id: runId, orgId: r.org_id, spaceId: r.space_id, agentId: r.agent_id, actorUserId: r.actor_user_id, endUserId: r.end_user_id };
    remember(m);
    return m;
  };
  const streamsOf = (spaceId: string) => bySpace.get(spaceId);

  // ---- run_update: committed status changes, in commit order
  let statusChain = Promise.resolve();
  const onStatus = async (c: RunStatusChange) => {
    if (!c.status || !streamsOf(c.space_id)?.size) return;
    const meta: RunMeta | null = c.agent_id !== undefined
      ? { id: c.id, orgId: c.org_id, spaceId: c.space_id, agentId: c.agent_id, actorUserId: c.actor_user_id ?? null, endUserId: c.end_user_id ?? null }
      : await metaOf(c.id);
    if (!meta) return;
    remember(meta);
    const audience = [...(streamsOf(c.space_id) ?? [])].filter((s) => s.covers(meta) && s.wants('run_update'));
    if (!audience.length) return;
    let wire = c.wire;
    if (!wire) {
      // too large for the notification: read by reference; the status is the one announced
      const { rows } = await pool.query<{ wire: Record<string, unknown> }>('SELECT run_wire(runs) AS wire FROM runs WHERE id = $1', [c.id]);
      if (!rows[0]) return;
      wire = { ...rows[0].wire, status: c.status };
    }
    let brief: string | undefined;
    let full: string | undefined;
    for (const s of audience) {
      if (s.opts.verbose) s.runUpdate(c.status, (full ??= JSON.stringify(wire)));
      else s.runUpdate(c.status, (brief ??= JSON.stringify(briefRun(wire))));
    }
  };
  const stopStatus = deps.feed.on((c) => {
    statusChain = statusChain.then(() => onStatus(c)).catch((err) => log.warn('realtime run_update failed', { error: String(err) }));
  });

  // ---- run_log, run_metric, connection_update from the bus, in delivery order
  let busChain = Promise.resolve();
  const onMessage = async (m: RealtimeMessage) => {
    const streams = streamsOf(m.spaceId);
    if (!streams?.size) return;
    if (m.kind === 'connection_update') {
      const data = JSON.stringify(m.connection);
      for (const s of streams) {
        const a = s.opts.audience;
        if (a.orgId !== m.orgId) continue;
        const own = a.endUserId ? m.endUserId === a.endUserId : m.endUserId === null && m.userId === a.userId;
        if (own) s.send('connection_update', data);
      }
      return;
    }
    if (m.kind === 'chat_session_update') {
      // the owner's own streams, and only those opened with a session cookie (spec: needs a session)
      const data = JSON.stringify(m.session);
      for (const s of streams) {
        const a = s.opts.audience;
        if (a.orgId === m.orgId && a.userId === m.userId && a.endUserId === null && s.opts.credentialKey.startsWith('s:')) s.send('chat_session_update', data);
      }
      return;
    }
    const meta = await metaOf(m.runId);
    if (!meta || meta.spaceId !== m.spaceId) return;
    if (m.kind === 'run_metric') {
      const data = JSON.stringify({ runId: m.runId, cost: m.cost });
      for (const s of streams) if (s.covers(meta)) s.send('run_metric', data);
      return;
    }
    const { data: payload, ...entry } = m.entry;
    const debug = entry.level === 'debug';
    let brief: string | undefined;
    let full: string | undefined;
    for (const s of streams) {
      if (!s.covers(meta) || !s.wants('run_log')) continue;
      if (debug && !s.opts.audience.permissions.has('runs:delete')) continue;
      if (s.opts.verbose) s.send('run_log', (full ??= JSON.stringify({ runId: m.runId, ...entry, data: payload ?? null })));
      else s.send('run_log', (brief ??= JSON.stringify({ runId: m.runId, ...entry })));
    }
  };
  const stopBus = deps.bus.subscribe((m) => {
    busChain = busChain.then(() => onMessage(m)).catch((err) => log.warn('realtime event failed', { error: String(err) }));
  });

  // ---- permissions re-checked when identity data changes (revocation, role, membership)
  let recheckTimer: NodeJS.Timeout | null = null;
  let rechecking: Promise<void> | null = null;
  const recheckAll = async () => {
    const groups = new Map<string, Stream[]>();
    for (const set of bySpace.values()) {
      for (const s of set) {
        const g = groups.get(s.opts.credentialKey);
        if (g) g.push(s);
        else groups.set(s.opts.credentialKey, [s]);
      }
    }
    for (const streams of groups.values()) {
      let permissions: ReadonlySet<Permission> | null;
      try {
        permissions = await streams[0].opts.recheck();
      } catch (err) {
        log.warn('realtime permission re-check failed; streams kept', { error: String(err) });
        continue;
      }
      for (const s of streams) {
        if (s.closed) continue;
        if (!permissions || !permissions.has('runs:read')) {
          s.end();
          continue;
        }
        s.opts.audience.permissions = permissions;
        const runId = s.opts.runId;
        const meta = runId !== undefined ? await metaOf(runId).catch(() => null) : undefined;
        if (meta !== undefined && (!meta || !mayRead(s.opts.audience, meta))) s.end();
      }
    }
  };
  const scheduleRecheck = () => {
    if (recheckTimer || !streamCount) return;
    recheckTimer = setTimeout(() => {
      recheckTimer = null;
      const previous = rechecking ?? Promise.resolve();
      rechecking = previous.then(recheckAll).finally(() => (rechecking = null));
    }, 20);
    recheckTimer.unref();
  };
  const stopAuth = deps.authCache.onChange(scheduleRecheck);

  // ---- keep-alive
  const pingTimer = setInterval(() => {
    const due = Date.now() - deps.pingMs;
    for (const set of bySpace.values()) for (const s of set) if (s.lastWrite <= due) s.send('ping', '{}');
  }, Math.min(1000, Math.max(50, Math.floor(deps.pingMs / 4))));
  pingTimer.unref();

  const remove = (s: Stream) => {
    const set = bySpace.get(s.opts.audience.spaceId);
    if (set?.delete(s)) streamCount--;
    if (set && !set.size) bySpace.delete(s.opts.audience.spaceId);
  };

  return {
    open(res, opts) {
      const stream = new Stream(res, opts, () => dropped++);
      let set = bySpace.get(opts.audience.spaceId);
      if (!set) bySpace.set(opts.audience.spaceId, (set = new Set()));
      set.add(stream);
      streamCount++;
      res.once('close', () => {
        stream.closed = true;
        remove(stream);
      });
      return stream;
    },
    publish: (message) => deps.bus.publish(message),
    stats() {
      let queuedFrames = 0;
      for (const set of bySpace.values()) for (const s of set) queuedFrames += s.queued;
      return { streams: streamCount, queuedFrames, dropped };
    },
    closeStreams() {
      for (const set of bySpace.values()) for (const s of set) s.end({ data: '{"reason":"shutting_down"}', retryMs: 1000 });
    },
    async close() {
      clearInterval(pingTimer);
      if (recheckTimer) clearTimeout(recheckTimer);
      stopStatus();
      stopBus();
      stopAuth();
      for (const set of bySpace.values()) for (const s of set) s.end();
      await deps.bus.close();
    },
  };
}
