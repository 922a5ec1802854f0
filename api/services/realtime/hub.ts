// The streams of one API process and what feeds them: committed run status changes from the run
// status feed (one LISTEN connection per process), logs, metrics and connection changes from the
// realtime bus (one subscription per process). Each event is serialized once per variant (brief,
// verbose) and written to the streams that may see it (stream.ts holds one stream and its rules).
import type pg from 'pg';
import type { Logger } from '../../../lib/log.ts';
import type { Permission } from '../../../lib/permissions.ts';
import type { Response } from '../../http.ts';
import type { AuthCache } from '../auth-cache.ts';
import type { RunStatusChange, RunStatusFeed } from '../runs/status-feed.ts';
import type { RealtimeBus, RealtimeMessage } from './bus.ts';
import { awaitingOf, briefRun, mayRead, Stream, type RunMeta, type StreamOptions } from './stream.ts';

const META_CACHE_MAX = 20_000;

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
    const awaiting = awaitingOf(wire);
    for (const s of audience) {
      if (s.opts.verbose) s.runUpdate(c.status, (full ??= JSON.stringify(wire)), false, awaiting);
      else s.runUpdate(c.status, (brief ??= JSON.stringify(briefRun(wire))), false, awaiting);
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
