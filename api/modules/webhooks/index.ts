// The webhooks module: signed run-event webhooks. Its routes, the delivery workflow it adds to the
// worker's endpoint, and the dispatcher that starts a delivery for each committed status change.
import type { ApiModule } from '../../app.ts';
import type { AppDeps } from '../../deps.ts';
import { createDeliveryWorkflow, type DeliveryDeps } from './delivery.ts';
import { startDispatcher } from './dispatcher.ts';
import { cachedReader, metrics } from '../../../lib/metrics/index.ts';
import type pg from 'pg';

/** Deliveries still to deliver or retry, platform-wide: two counts over partial indexes of pending rows. */
export async function webhookBacklog(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: string }>(
    `SELECT (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at IS NULL)
          + (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending' AND attempt_count > 0 AND next_attempt_at IS NOT NULL) AS n`,
  );
  return Number(rows[0].n);
}
import { webhookRoutes } from './routes.ts';

export { WEBHOOK_EVENTS } from './webhooks.ts';

export function deliveryDepsOf(deps: AppDeps): DeliveryDeps {
  return {
    pool: deps.database.pool,
    secrets: deps.secrets,
    egress: { allowInternalHosts: deps.config.EGRESS_ALLOW_INTERNAL_HOSTS, platformEndpoints: deps.platformEndpoints },
    retrySchedule: deps.config.WEBHOOK_RETRY_SCHEDULE_SECONDS,
    timeoutMs: deps.config.WEBHOOK_TIMEOUT_SECONDS * 1000,
  };
}

export async function loadWebhooks(deps: AppDeps): Promise<ApiModule> {
  return {
    name: 'webhooks',
    routes: webhookRoutes(deps),
    services: [createDeliveryWorkflow(deliveryDepsOf(deps))],
    start: (engine) => {
      const dispatcher = startDispatcher({ delivery: deliveryDepsOf(deps), databaseUrl: deps.database.url, ingressUrl: engine.ingressUrl, log: deps.log });
      const unwatch = metrics.watch('webhook_backlog', cachedReader(5_000, () => webhookBacklog(deps.database.pool)));
      return {
        ...dispatcher,
        async stop() {
          unwatch();
          await dispatcher.stop();
        },
      };
    },
  };
}
