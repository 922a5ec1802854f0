// What the runs benchmark drives runs with: API keys handed out so none passes the launch
// route's per-caller limit, one launch call, and a watcher of run status changes (LISTEN
// run_status, the NOTIFY the platform sends in the committing transaction, with a slow sweep of
// the table behind it in case a notification is missed).
import pg from 'pg';
import { aKey, type BuiltOrg } from '../../test/support/builders.ts';
import { send } from '../support.ts';

/** The launch route allows 20 per minute per caller: each key launches at most this many runs. */
const LAUNCHES_PER_KEY = 18;
const TERMINAL = new Set(['success', 'failed', 'timeout', 'cancelled']);

export class KeyRing {
  private readonly keys: string[] = [];
  private used = 0;

  constructor(private readonly pool: pg.Pool, private readonly org: BuiltOrg) {}

  async add(count: number): Promise<void> {
    for (let i = 0; i < count; i++) this.keys.push((await aKey(this.pool, { orgId: this.org.orgId, spaceId: this.org.spaceId, userId: this.org.ownerId })).key);
  }

  get size(): number {
    return this.keys.length;
  }

  /** A key with launches left; adds keys when the ring runs low. */
  async next(): Promise<string> {
    const index = Math.floor(this.used / LAUNCHES_PER_KEY);
    this.used += 1;
    if (index >= this.keys.length) await this.add(index - this.keys.length + 20);
    return this.keys[index];
  }
}

export interface Launch {
  status: number;
  code?: string;
  id?: string;
  ms: number;
  /** Date.now() when the request left */
  at: number;
  retryAfter?: number;
}

export const AGENT = '@fixtures/agent-echo';

export async function launchRun(base: string, key: string, modelId?: string): Promise<Launch> {
  const at = Date.now();
  const body: Record<string, unknown> = { input: { message: 'hello from the benchmark' } };
  if (modelId) body.model_id = modelId;
  const res = await send('POST', `${base}/api/agents/${AGENT}/run`, { headers: { authorization: `Bearer ${key}` }, body });
  const retry = Number(res.headers['retry-after']);
  return {
    status: res.status,
    code: res.status === 201 ? undefined : (res.body?.code ?? String(res.status)),
    id: res.status === 201 ? res.body.id : undefined,
    ms: res.ms,
    at,
    retryAfter: Number.isFinite(retry) ? retry : undefined,
  };
}

export interface RunTimes {
  running?: number;
  ended?: number;
  status?: string;
}

export class RunTracker {
  private readonly times = new Map<string, RunTimes>();
  private readonly waiters = new Map<string, Array<(t: RunTimes) => void>>();
  private sweeper: NodeJS.Timeout | null = null;
  private client!: pg.Client;

  private constructor(private readonly pool: pg.Pool) {}

  static async start(databaseUrl: string, pool: pg.Pool): Promise<RunTracker> {
    const tracker = new RunTracker(pool);
    tracker.client = new pg.Client({ connectionString: databaseUrl });
    tracker.client.on('notification', (msg) => {
      try {
        const change = JSON.parse(msg.payload ?? '') as { id: string; status: string };
        tracker.record(change.id, change.status, Date.now());
      } catch {
        // not a run status
      }
    });
    await tracker.client.connect();
    await tracker.client.query('LISTEN run_status');
    tracker.sweeper = setInterval(() => void tracker.sweep().catch(() => {}), 2000);
    return tracker;
  }

  private record(id: string, status: string, at: number): void {
    const t = this.times.get(id) ?? {};
    if (status === 'running') t.running ??= at;
    else if (TERMINAL.has(status) && t.ended === undefined) {
      t.ended = at;
      t.status = status;
    }
    this.times.set(id, t);
    if (t.ended !== undefined) {
      const list = this.waiters.get(id);
      this.waiters.delete(id);
      for (const wake of list ?? []) wake(t);
    }
  }

  /** Runs still awaited, read from the table (with its own timestamps) in case a NOTIFY was missed. */
  private async sweep(): Promise<void> {
    const ids = [...this.waiters.keys()];
    if (!ids.length) return;
    const { rows } = await this.pool.query<{ id: string; status: string; started_at: Date | null; finished_at: Date | null }>(
      'SELECT id, status, started_at, finished_at FROM runs WHERE id = ANY($1)', [ids],
    );
    for (const r of rows) {
      if (r.started_at) this.record(r.id, 'running', r.started_at.getTime());
      if (TERMINAL.has(r.status)) this.record(r.id, r.status, r.finished_at?.getTime() ?? Date.now());
    }
  }

  get(id: string): RunTimes {
    return this.times.get(id) ?? {};
  }

  /** Resolves once the run has a terminal status (or after timeoutMs with what is known). */
  ended(id: string, timeoutMs: number): Promise<RunTimes> {
    const t = this.get(id);
    if (t.ended !== undefined) return Promise.resolve(t);
    return new Promise((resolve) => {
      const list = this.waiters.get(id) ?? [];
      const wake = (v: RunTimes) => {
        clearTimeout(timer);
        resolve(v);
      };
      const timer = setTimeout(() => {
        list.splice(list.indexOf(wake), 1);
        if (!list.length) this.waiters.delete(id);
        resolve(this.get(id));
      }, timeoutMs);
      list.push(wake);
      this.waiters.set(id, list);
    });
  }

  async stop(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    await this.client.end().catch(() => {});
  }
}
