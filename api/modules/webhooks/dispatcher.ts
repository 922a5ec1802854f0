// Sends each delivery's first attempt and hands what needs another try to its durable workflow.
// Rows are written in the transaction of the run's status change (db/functions.sql,
// runs_status_outbox) and announced on webhook_deliveries; every API replica hears it and claims
// rows with SKIP LOCKED (the claim stamps dispatched_at and records attempt 1 as begun, before
// anything is sent), so a row is sent by one replica. The claim reads each row's target in the
// same statement; the outcomes of everything in flight are recorded together, one statement per
// turn of the event loop. A row needing a retry starts its workflow (keyed by the row's id, so
// starting it twice is harmless) only after its first attempt is recorded.
// Nothing is lost on a crash: a claimed row whose first attempt has no outcome long after the
// attempt's timeout (the replica died between claim, send and record), and a row whose recorded
// retry is overdue (it died before starting the workflow, or the engine was unreachable), are
// handed to the workflow by the sweep; the attempt cut short stays in the log, interrupted.
// A receiver that hangs holds at most PER_WEBHOOK rows of its own webhook; rows of other webhooks
// are claimed past them.
import * as clients from '@restatedev/restate-sdk-clients';
import pg from 'pg';
import type { Logger } from '../../../lib/log.ts';
import { runEvery } from '../../../lib/periodic.ts';
import { failoverFetch, primaryAddress } from '../../../lib/restate-failover.ts';
import { cancelDeliveries, DELIVERY_WORKFLOW, recordAttempts, sendAttempt, TARGET_COLUMNS, type AttemptRecord, type DeliveryDeps, type DeliveryWorkflow, type Target } from './delivery.ts';

const BATCH = 200;
/** first attempts in flight in this process, at most */
const IN_FLIGHT = 1000;
/** first attempts in flight to one webhook, at most */
const PER_WEBHOOK = 64;
/** past an attempt's timeout, how long its outcome may take to be recorded before the sweep takes the row over */
const RECORD_MARGIN_SECONDS = 15;
const SWEEP_MS = 15_000;

export interface Dispatcher {
  /** claims and sends what is waiting now */
  kick(): void;
  /** hands to the workflow what a replica claimed and never recorded, and overdue retries (every SWEEP_MS) */
  sweep(): Promise<void>;
  stop(): Promise<void>;
}

export function startDispatcher(opts: { delivery: DeliveryDeps; databaseUrl: string; ingressUrl: string; log: Logger }): Dispatcher {
  const dd = opts.delivery;
  const { pool } = dd;
  const staleSeconds = Math.ceil(dd.timeoutMs / 1000) + RECORD_MARGIN_SECONDS;
  const log = opts.log;
  const ingress = clients.connect({ url: primaryAddress(opts.ingressUrl), fetch: failoverFetch(opts.ingressUrl), retry: { maxAttempts: 3, maxDuration: 5_000 } });
  let stopped = false;
  let running = false;
  let again = false;
  let listener: pg.Client | null = null;
  /** first attempts in flight, per webhook */
  const busy = new Map<string, number>();
  let inFlight = 0;
  const sending = new Set<Promise<void>>();

  const submit = async (id: string): Promise<void> => {
    await ingress.workflowClient<DeliveryWorkflow>({ name: DELIVERY_WORKFLOW }, id).workflowSubmit({ resume: true });
  };

  // ---- attempts recorded together: whatever finished since the last statement
  let toRecord: Array<{ record: AttemptRecord; settle: (ok: boolean) => void }> = [];
  let recording = false;
  const flush = async () => {
    if (recording) return;
    recording = true;
    try {
      while (toRecord.length) {
        const batch = toRecord;
        toRecord = [];
        const ok = await recordAttempts(pool, batch.map((b) => b.record)).then(() => true, (err) => {
          // left as claimed: the sweep hands them to the workflow, which sends them again
          log.warn('webhook attempts could not be recorded; the sweep retries them', { count: batch.length, error: String(err) });
          return false;
        });
        for (const b of batch) b.settle(ok);
      }
    } finally {
      recording = false;
    }
  };
  const record = (r: AttemptRecord) =>
    new Promise<boolean>((settle) => {
      toRecord.push({ record: r, settle });
      if (toRecord.length === 1) setImmediate(() => void flush());
    });

  const release = (webhookId: string) => {
    inFlight--;
    const n = busy.get(webhookId)! - 1;
    if (n) busy.set(webhookId, n);
    else busy.delete(webhookId);
  };

  const sendFirst = async (t: Target, open: (sealed: string) => string): Promise<void> => {
    try {
      const { record: r, outcome } = await sendAttempt(dd, t, 1, open);
      const recorded = await record(r);
      if (recorded && !outcome.done) await submit(t.id).catch((err) => log.warn('webhook retry could not be handed to the engine; the sweep retries it', { error: String(err) }));
    } catch (err) {
      log.warn('webhook first attempt failed; the sweep retries it', { error: String(err) });
    } finally {
      release(t.webhook_id);
      kick();
    }
  };

  const claim = async (): Promise<Target[]> => {
    const room = Math.min(BATCH, IN_FLIGHT - inFlight);
    if (room <= 0) return [];
    const held = [...busy];
    // rows of a webhook past its share stay unclaimed (and locked only for this statement)
    const { rows } = await pool.query<Target>(
      `WITH candidate AS (
         SELECT id, webhook_id FROM webhook_deliveries
          WHERE status = 'pending' AND dispatched_at IS NULL AND webhook_id <> ALL($1::text[])
          ORDER BY id COLLATE "C" LIMIT $4 FOR UPDATE SKIP LOCKED
       ), picked AS (
         SELECT c.id FROM (SELECT id, webhook_id, row_number() OVER (PARTITION BY webhook_id ORDER BY id COLLATE "C") AS n FROM candidate) c
           LEFT JOIN unnest($2::text[], $3::int[]) AS h(webhook_id, held) USING (webhook_id)
          WHERE c.n <= $5 - coalesce(h.held, 0)
       ), claimed AS (
         UPDATE webhook_deliveries d SET dispatched_at = now(), attempt_count = CASE WHEN w.enabled THEN 1 ELSE d.attempt_count END
           FROM picked, webhooks w WHERE d.id = picked.id AND w.id = d.webhook_id
         RETURNING d.id, d.status, d.payload, d.webhook_id, w.enabled
       ), begun AS (
         INSERT INTO webhook_delivery_attempts (delivery_id, attempt, started_at)
         SELECT id, 1, now() FROM claimed WHERE enabled ON CONFLICT (delivery_id, attempt) DO NOTHING
       )
       SELECT ${TARGET_COLUMNS} FROM claimed d JOIN webhooks w ON w.id = d.webhook_id`,
      [held.filter(([, n]) => n >= PER_WEBHOOK).map(([id]) => id), held.map(([id]) => id), held.map(([, n]) => n), room, PER_WEBHOOK],
    );
    return rows;
  };

  const drain = async (): Promise<void> => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        const rows = await claim();
        const cancelled = rows.filter((t) => !t.enabled).map((t) => t.id);
        await cancelDeliveries(pool, cancelled);
        // each webhook's secrets are opened once per claim
        const opened = new Map<string, string>();
        const open = (sealed: string) => opened.get(sealed) ?? opened.set(sealed, dd.secrets.open(sealed)).get(sealed)!;
        for (const t of rows) {
          if (!t.enabled) continue;
          inFlight++;
          busy.set(t.webhook_id, (busy.get(t.webhook_id) ?? 0) + 1);
          const p = sendFirst(t, open);
          sending.add(p);
          void p.finally(() => sending.delete(p));
        }
        if (rows.length === BATCH) again = true;
      } while (again && !stopped);
    } catch (err) {
      log.warn('webhook dispatch failed', { error: String(err) });
    } finally {
      running = false;
    }
  };
  const kick = () => {
    if (!stopped) void drain();
  };

  // an attempt begun and never recorded, or a recorded retry overdue: the workflow takes them over
  const sweepStale = async () => {
    const { rows } = await pool.query<{ id: string }>(
      `(SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at IS NULL AND dispatched_at < now() - make_interval(secs => $1) LIMIT ${BATCH})
       UNION ALL
       (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND attempt_count > 0 AND next_attempt_at < now() - make_interval(secs => $1) LIMIT ${BATCH})`,
      [staleSeconds],
    );
    const started: string[] = [];
    for (const r of rows) await submit(r.id).then(() => started.push(r.id), () => {});
    if (started.length) await pool.query('UPDATE webhook_deliveries SET dispatched_at = now() WHERE id = ANY($1::text[])', [started]);
    kick();
  };

  const listen = async () => {
    if (stopped) return;
    const c = new pg.Client({ connectionString: opts.databaseUrl });
    c.on('notification', kick);
    c.on('error', () => {});
    c.on('end', () => {
      listener = null;
      if (!stopped) setTimeout(() => void listen(), 1000).unref();
    });
    try {
      await c.connect();
      await c.query('LISTEN webhook_deliveries');
      listener = c;
      kick();
    } catch (err) {
      log.warn('webhook delivery feed unavailable; the sweep still dispatches', { error: String(err) });
      await c.end().catch(() => {});
    }
  };
  void listen();
  const sweep = runEvery(SWEEP_MS, sweepStale, (err) => log.warn('webhook dispatch sweep failed', { error: String(err) }));

  return {
    kick,
    sweep: sweepStale,
    async stop() {
      stopped = true;
      await sweep.stop();
      await listener?.end().catch(() => {});
      while (running) await new Promise((r) => setTimeout(r, 20));
      // first attempts under way are finished and recorded (each is bounded by the attempt timeout)
      await Promise.allSettled([...sending]);
      while (recording || toRecord.length) await new Promise((r) => setTimeout(r, 20));
    },
  };
}
