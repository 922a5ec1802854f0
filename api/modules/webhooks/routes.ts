// /api/webhooks (spec: End-users and webhooks; Webhook record; rate-limit rows). Organization
// routes: authority follows each webhook's level (webhooks.ts), so no route declares a permission.
import { WEBHOOK_READ } from '../../../lib/permissions.ts';
import { z } from 'zod';
import { orgScopeOf } from '../../../db/tenant.ts';
import type { AppDeps } from '../../deps.ts';
import { CursorQuery, cursorList, cursorPage } from '../../lists.ts';
import { created, noContent, ok, route } from '../../route.ts';
import * as webhooks from './webhooks.ts';
import { PAYLOAD_MODES, WEBHOOK_EVENTS, type WebhooksDeps } from './webhooks.ts';

const EventName = z.enum(WEBHOOK_EVENTS).describe('run.started, run.success, run.failed, run.timeout, run.cancelled, run.approval_requested, run.approval_decided (payload: { run, approval })');

const Webhook = z.object({
  id: z.string(),
  object: z.literal('webhook'),
  level: z.enum(['space', 'org']),
  spaceId: z.string().optional(),
  url: z.string(),
  events: z.array(z.string()),
  packageId: z.string().nullable(),
  payloadMode: z.string(),
  enabled: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
}).meta({ id: 'Webhook' });

const WebhookWithSecret = Webhook.extend({ secret: z.string().describe('whsec_ signing secret, returned only here') }).meta({ id: 'WebhookWithSecret' });
const WebhookList = z.object({ object: z.literal('list'), data: z.array(Webhook), hasMore: z.boolean() });

const DeliveryAttempt = z.object({
  attempt: z.number().int(),
  started_at: z.string(),
  status_code: z.number().int().nullable(),
  duration_ms: z.number().int().nullable().describe('null while the attempt is under way, or when it was interrupted (error says so)'),
  error: z.string().nullable(),
  next_attempt_at: z.string().nullable(),
});
const Delivery = z.object({
  id: z.string(),
  object: z.literal('webhook_delivery'),
  webhook_id: z.string(),
  run_id: z.string(),
  event: EventName,
  status: z.enum(['pending', 'succeeded', 'failed', 'cancelled']),
  attempt_count: z.number().int(),
  next_attempt_at: z.string().nullable(),
  createdAt: z.string(),
  finished_at: z.string().nullable(),
  attempts: z.array(DeliveryAttempt),
}).meta({ id: 'WebhookDelivery' });
const DeliveryList = z.object({ object: z.literal('list'), data: z.array(Delivery), hasMore: z.boolean() });

const Url = z.string().url().max(2048);
const Events = z.array(EventName).min(1).max(WEBHOOK_EVENTS.length * 2);
const PackageId = z.string().regex(/^@[a-z0-9][a-z0-9-]*\/[a-z0-9][a-z0-9._-]*$/).max(255).nullable();

const IdParams = z.object({ id: z.string() });
const WRITE_LIMIT = { perMinute: 10 };
const ROTATE_LIMIT = { perMinute: 5 };
const READ_LIMIT = { perMinute: 300 };
const TAG = 'Webhooks';

export function webhookRoutes(deps: AppDeps) {
  const wd: WebhooksDeps = {
    secrets: deps.secrets,
    egress: { allowInternalHosts: deps.config.EGRESS_ALLOW_INTERNAL_HOSTS, platformEndpoints: deps.platformEndpoints },
  };
  return [
    route({
      method: 'post', path: '/api/webhooks', summary: 'Create a webhook (its signing secret is returned only here)', tag: TAG,
      authority: 'resource', permission: 'webhooks:write', rateLimit: WRITE_LIMIT, idempotent: true, location: (b) => `/api/webhooks/${b.id}`,
      body: z.object({
        level: z.enum(['space', 'org']),
        spaceId: z.string().min(1).max(255).optional(),
        url: Url,
        events: Events,
        packageId: PackageId.optional(),
        payloadMode: z.enum(PAYLOAD_MODES).optional(),
      }).strict(),
      responses: { 201: { description: 'Created, with its secret', schema: WebhookWithSecret } },
      handler: async ({ ctx, body, deps }) => created(await webhooks.createWebhook(orgScopeOf(ctx, deps.database), ctx, wd, body)),
    }),
    route({
      method: 'get', path: '/api/webhooks', summary: 'List webhooks the caller may read', tag: TAG,
      authority: 'resource', permission: WEBHOOK_READ, rateLimit: READ_LIMIT,
      query: CursorQuery.extend({
        spaceId: z.string().optional().describe("adds the webhooks of this space (needs webhooks:read there)"),
        all: z.enum(['true']).optional().describe('every space of the organization; needs org-webhooks:read; overrides spaceId'),
      }),
      responses: { 200: { description: 'A page of webhooks', schema: WebhookList } },
      handler: async ({ ctx, query, req, deps }) => {
        const page = cursorPage(query);
        const rows = await webhooks.listWebhooks(orgScopeOf(ctx, deps.database), ctx, { spaceId: query.spaceId, all: query.all === 'true' }, page);
        const { body, headers } = cursorList(req, page, rows);
        return ok(body, headers);
      },
    }),
    route({
      method: 'get', path: '/api/webhooks/{id}', summary: 'Read a webhook', tag: TAG,
      authority: 'resource', permission: WEBHOOK_READ, rateLimit: READ_LIMIT, params: IdParams,
      responses: { 200: { description: 'The webhook', schema: Webhook } },
      handler: async ({ ctx, params, deps }) => ok(await webhooks.getWebhook(orgScopeOf(ctx, deps.database), ctx, params.id)),
    }),
    route({
      method: 'patch', path: '/api/webhooks/{id}', summary: 'Update a webhook (enabled: true turns a disabled one back on)', tag: TAG,
      authority: 'resource', permission: 'webhooks:write', rateLimit: WRITE_LIMIT, params: IdParams,
      body: z.object({
        url: Url.optional(),
        events: Events.optional(),
        packageId: PackageId.optional(),
        payloadMode: z.enum(PAYLOAD_MODES).optional(),
        enabled: z.boolean().optional(),
      }).strict(),
      responses: { 200: { description: 'The updated webhook', schema: Webhook } },
      handler: async ({ ctx, params, body, deps }) => ok(await webhooks.updateWebhook(orgScopeOf(ctx, deps.database), ctx, wd, params.id, body)),
    }),
    route({
      method: 'delete', path: '/api/webhooks/{id}', summary: 'Delete a webhook and its delivery log', tag: TAG,
      authority: 'resource', permission: 'webhooks:delete', rateLimit: WRITE_LIMIT, params: IdParams,
      responses: { 204: { description: 'Deleted' } },
      handler: async ({ ctx, params, deps }) => {
        await webhooks.deleteWebhook(orgScopeOf(ctx, deps.database), ctx, params.id);
        return noContent();
      },
    }),
    route({
      method: 'post', path: '/api/webhooks/{id}/rotate', summary: 'Rotate the signing secret (the previous one also signs for 24 hours)', tag: TAG,
      authority: 'resource', permission: 'webhooks:write', rateLimit: ROTATE_LIMIT, params: IdParams,
      responses: { 200: { description: 'The webhook with its new secret', schema: WebhookWithSecret } },
      handler: async ({ ctx, params, deps }) => ok(await webhooks.rotateWebhookSecret(orgScopeOf(ctx, deps.database), ctx, wd, params.id)),
    }),
    route({
      method: 'get', path: '/api/webhooks/{id}/deliveries', summary: 'The delivery log: every delivery and each of its attempts (cursor-paged)', tag: TAG,
      authority: 'resource', permission: WEBHOOK_READ, rateLimit: READ_LIMIT, params: IdParams, query: CursorQuery,
      responses: { 200: { description: 'A page of deliveries', schema: DeliveryList } },
      handler: async ({ ctx, params, query, req, deps }) => {
        const page = cursorPage(query);
        const rows = await webhooks.listDeliveries(orgScopeOf(ctx, deps.database), ctx, params.id, page);
        const { body, headers } = cursorList(req, page, rows);
        return ok(body, headers);
      },
    }),
  ];
}
