// The webhooks module: signed run-event webhooks. Its routes, the delivery workflow it adds to the
// worker's endpoint, and the dispatcher that starts a delivery for each committed status change.
import type { ApiModule } from '../../app.ts';
import type { AppDeps } from '../../deps.ts';
import { createDeliveryWorkflow, type DeliveryDeps } from './delivery.ts';
import { startDispatcher } from './dispatcher.ts';
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
    start: (engine) => startDispatcher({ delivery: deliveryDepsOf(deps), databaseUrl: deps.database.url, ingressUrl: engine.ingressUrl, log: deps.log }),
  };
}
