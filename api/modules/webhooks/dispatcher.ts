// Starts one durable delivery invocation per delivery row. Rows are written in the transaction of
// the run's status change (db/functions.sql, runs_status_outbox) and announced on
// webhook_deliveries; every API replica hears it, claims rows with SKIP LOCKED and submits each
// row's workflow, keyed by the row's id, so a row is delivered once even when two replicas race.
// A sweep submits again what was claimed but never started (a replica died between the two);
// the workflow key makes that harmless.
import * as clients from '@restatedev/restate-sdk-clients';
import pg from 'pg';
import type { Logger } from '../../../lib/log.ts';
import { runEvery } from '../../../lib/periodic.ts';
import { DELIVERY_WORKFLOW, type DeliveryWorkflow } from './delivery.ts';

const BATCH = 200;
/** a claimed row whose first attempt has not been recorded after this is submitted again */
const STALE_SECONDS = 60;
const SWEEP_MS = 15_000;

export interface Dispatcher {
  /** claims and submits what is waiting now */
  kick(): void;
  stop(): Promise<void>;
}

export function startDispatcher(opts: { pool: pg.Pool; databaseUrl: string; ingressUrl: string; log: Logger }): Dispatcher {
  const { pool, log } = opts;
  const ingress = clients.connect({ url: opts.ingressUrl, retry: { maxAttempts: 3, maxDuration: 5_000 } });
  let stopped = false;
  let running = false;
  let again = false;
  let listener: pg.Client | null = null;

  const submit = async (id: string): Promise<void> => {
    await ingress.workflowClient<DeliveryWorkflow>({ name: DELIVERY_WORKFLOW }, id).workflowSubmit();
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
        const { rows } = await pool.query<{ id: string }>(
          `UPDATE webhook_deliveries SET dispatched_at = now()
            WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND dispatched_at IS NULL
                          ORDER BY id COLLATE "C" LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
            RETURNING id`,
        );
        const failed: string[] = [];
        await Promise.all(rows.map((r) => submit(r.id).catch(() => failed.push(r.id))));
        if (failed.length) {
          // given back: the next notification or sweep submits them again
          await pool.query('UPDATE webhook_deliveries SET dispatched_at = NULL WHERE id = ANY($1::text[]) AND attempt_count = 0', [failed]);
          log.warn('webhook deliveries could not be handed to the engine; retrying later', { count: failed.length });
          break;
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

  const resubmitStale = async () => {
    const { rows } = await pool.query<{ id: string }>(
      `SELECT id FROM webhook_deliveries WHERE status = 'pending' AND attempt_count = 0 AND dispatched_at < now() - make_interval(secs => $1) LIMIT ${BATCH}`,
      [STALE_SECONDS],
    );
    for (const r of rows) await submit(r.id).catch(() => {});
    if (rows.length) await pool.query('UPDATE webhook_deliveries SET dispatched_at = now() WHERE id = ANY($1::text[])', [rows.map((r) => r.id)]);
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
  const sweep = runEvery(SWEEP_MS, resubmitStale, (err) => log.warn('webhook dispatch sweep failed', { error: String(err) }));

  return {
    kick,
    async stop() {
      stopped = true;
      await sweep.stop();
      await listener?.end().catch(() => {});
      while (running) await new Promise((r) => setTimeout(r, 20));
    },
  };
}
