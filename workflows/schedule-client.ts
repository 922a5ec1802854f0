import './polyfill.ts';
import { SCHEDULE_OBJECT_NAME } from './schedule-types.ts';
import { failoverFetch, primaryAddress } from '../lib/restate-failover.ts';

export interface ScheduleClient {
  /** Asks the schedule's object to re-arm for `generation`; resolves once the engine logged the call. */
  arm(scheduleId: string, generation: number): Promise<void>;
}

/** One-way calls to the schedule objects through the Restate ingress (one address, or a cluster's list). */
export function createScheduleClient(ingressUrl: string): ScheduleClient {
  const base = primaryAddress(ingressUrl);
  const fetch = failoverFetch(ingressUrl);
  return {
    async arm(scheduleId, generation) {
      const url = `${base}/${SCHEDULE_OBJECT_NAME}/${encodeURIComponent(scheduleId)}/arm/send`;
      // the same (schedule, generation) arms once however often it is sent
      const headers = { 'content-type': 'application/json', 'idempotency-key': `arm:${scheduleId}:${generation}` };
      const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ generation }), signal: AbortSignal.timeout(10_000) });
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`the engine answered ${res.status} to arm ${scheduleId}`);
    },
  };
}
