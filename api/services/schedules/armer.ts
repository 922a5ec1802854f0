// Hands each schedule's new generation to its virtual object after the change commits, without
// making the caller wait; a sweep re-sends what the engine did not take (the engine unreachable,
// a crash in between). Arming twice is harmless: the object keys it by generation.
import type pg from 'pg';
import type { Logger } from '../../../lib/log.ts';
import type { ScheduleClient } from '../../../workflows/schedule-client.ts';
import type { ScheduleArmer } from './service.ts';

export interface ScheduleArmerLoop extends ScheduleArmer {
  /** re-sends the arms the engine has not confirmed; returns how many it tried */
  sweep(): Promise<number>;
  stop(): Promise<void>;
}

const UNARMED_AFTER = '5 seconds';

export function createScheduleArmer(pool: pg.Pool, client: ScheduleClient, log: Logger): ScheduleArmerLoop {
  const inFlight = new Set<Promise<void>>();
  const send = async (id: string, generation: number) => {
    try {
      await client.arm(id, generation);
    } catch (err) {
      log.warn('arming a schedule failed; the sweep will retry', { schedule_id: id, error: String(err) });
    }
  };
  return {
    arm(id, generation) {
      const p = send(id, generation);
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    },
    async sweep() {
      const { rows } = await pool.query<{ id: string; generation: number }>(
        `SELECT id, generation FROM schedules WHERE armed_generation <> generation AND updated_at < now() - interval '${UNARMED_AFTER}'
          ORDER BY updated_at LIMIT 100`,
      );
      await Promise.all(rows.map((r) => send(r.id, r.generation)));
      return rows.length;
    },
    async stop() {
      await Promise.allSettled([...inFlight]);
    },
  };
}
