// Webhook records: create, read, list with the spec's visibility rules, update, delete, rotate.
// Authority follows the webhook's level: an organization-level row needs org-webhooks:read (held
// only through an organization role) to be seen, and with it webhooks:write or webhooks:delete to
// be changed; a space-level row needs webhooks:read, :write or :delete in its own space.
import type pg from 'pg';
import type { OrgScope } from '../../../db/tenant.ts';
import { checkEgressTarget, EgressRefusal, type EgressOptions } from '../../../lib/egress.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import { newId } from '../../../lib/ids.ts';
import type { Permission } from '../../../lib/permissions.ts';
import { isProblem, problem } from '../../../lib/problem.ts';
import type { RequestContext } from '../../context.ts';
import { cursorCondition, type CursorPage } from '../../lists.ts';
import { reachSpace } from '../../services/space-access.ts';
import { newWebhookSecret } from './signing.ts';

export const WEBHOOK_EVENTS = ['run.started', 'run.success', 'run.failed', 'run.timeout', 'run.cancelled', 'run.approval_requested', 'run.approval_decided'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];
export const PAYLOAD_MODES = ['summary', 'full'] as const;

/** How long the secret replaced by a rotation keeps signing beside the new one. */
export const PREVIOUS_SECRET_HOURS = 24;

export interface Webhook {
  id: string;
  object: 'webhook';
  level: 'space' | 'org';
  spaceId?: string;
  url: string;
  events: string[];
  packageId: string | null;
  payloadMode: string;
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface WebhooksDeps {
  secrets: SecretBox;
  egress: EgressOptions;
}

interface Row {
  id: string;
  level: 'space' | 'org';
  space_id: string | null;
  url: string;
  events: string[];
  package_id: string | null;
  payload_mode: string;
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, level, space_id, url, events, package_id, payload_mode, enabled, created_at, updated_at';

function toWire(r: Row): Webhook {
  const out: Webhook = {
    id: r.id, object: 'webhook', level: r.level, url: r.url, events: r.events, packageId: r.package_id,
    payloadMode: r.payload_mode, enabled: r.enabled, createdAt: r.created_at.toISOString(), updatedAt: r.updated_at.toISOString(),
  };
  if (r.space_id) out.spaceId = r.space_id;
  return out;
}

type Action = 'read' | 'write' | 'delete';
const notFound = () => problem('not_found', { detail: 'No such webhook.' });

/** What the caller holds for rows of this level; null when such rows are out of its reach. */
async function held(scope: OrgScope, ctx: RequestContext, spaceId: string | null): Promise<ReadonlySet<Permission> | null> {
  if (spaceId === null) return ctx.permissions.has('org-webhooks:read') ? ctx.permissions : null;
  try {
    return (await reachSpace(scope, ctx, spaceId)).permissions;
  } catch (err) {
    if (isProblem(err) && err.code === 'not_found') return null;
    throw err;
  }
}

/** A row the caller cannot read is out of reach (404); one it reads but may not change is 403. */
async function authorize(scope: OrgScope, ctx: RequestContext, spaceId: string | null, action: Action): Promise<void> {
  const perms = await held(scope, ctx, spaceId);
  if (!perms || (spaceId !== null && !perms.has('webhooks:read'))) throw notFound();
  if (action !== 'read') requireAction(perms, spaceId, action);
}

function requireAction(perms: ReadonlySet<Permission>, spaceId: string | null, action: Action): void {
  const needed: Permission = `webhooks:${action}`;
  if (!perms.has(needed)) {
    throw problem('forbidden', { detail: `This operation needs the ${needed} permission${spaceId ? " in the webhook's space" : ' and org-webhooks:read'}.` });
  }
}

/** A row the caller may act on, or 404 (missing and out of reach look the same). */
async function reachable(scope: OrgScope, ctx: RequestContext, id: string, action: Action): Promise<Row> {
  const { rows } = await scope.pool.query<Row>(`SELECT ${COLUMNS} FROM webhooks WHERE id = $1 AND org_id = $2`, [id, scope.orgId]);
  if (!rows[0]) throw notFound();
  await authorize(scope, ctx, rows[0].space_id, action);
  return rows[0];
}

// Saving resolves no names (no DNS wait on behalf of a caller): literals and localhost are judged
// here; every delivery checks the resolved addresses again.
const lexicalResolve = async (host: string) => (host === 'localhost' || host.endsWith('.localhost') ? ['127.0.0.1'] : []);

async function vetUrl(url: string, egress: EgressOptions): Promise<void> {
  try {
    await checkEgressTarget(url, { ...egress, resolve: lexicalResolve });
  } catch (err) {
    if (!(err instanceof EgressRefusal)) throw err;
    if (err.kind === 'blocked') throw problem('blocked_url', { detail: err.message, param: 'url' });
    if (err.kind === 'invalid_url') {
      throw problem('validation_failed', { detail: err.message, errors: [{ field: 'url', code: 'invalid_format', message: err.message }] });
    }
  }
}

export interface CreateInput {
  level: 'space' | 'org';
  spaceId?: string;
  url: string;
  events: string[];
  packageId?: string | null;
  payloadMode?: string;
}

export async function createWebhook(scope: OrgScope, ctx: RequestContext, wd: WebhooksDeps, input: CreateInput): Promise<Webhook & { secret: string }> {
  if (input.level === 'space' && !input.spaceId) {
    throw problem('validation_failed', { detail: 'A space-level webhook names its space.', errors: [{ field: 'spaceId', code: 'required', message: 'Required when level is space.' }] });
  }
  if (input.level === 'org' && input.spaceId) {
    throw problem('validation_failed', { detail: 'An organization-level webhook has no space.', errors: [{ field: 'spaceId', code: 'invalid_value', message: 'Only with level space.' }] });
  }
  const spaceId = input.level === 'space' ? input.spaceId! : null;
  const perms = await held(scope, ctx, spaceId);
  if (!perms && spaceId !== null) throw problem('not_found', { detail: 'No such space.', param: 'spaceId' });
  requireAction(perms ?? new Set(), spaceId, 'write');
  await vetUrl(input.url, wd.egress);
  const secret = newWebhookSecret();
  const { rows } = await scope.pool.query<Row>(
    `INSERT INTO webhooks (id, org_id, space_id, level, url, events, package_id, payload_mode, secret_sealed, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLUMNS}`,
    [newId('wh'), scope.orgId, spaceId, input.level, input.url, [...new Set(input.events)], input.packageId ?? null,
      input.payloadMode ?? 'summary', wd.secrets.seal(secret), scope.actor.userId],
  );
  return { ...toWire(rows[0]), secret };
}

export async function getWebhook(scope: OrgScope, ctx: RequestContext, id: string): Promise<Webhook> {
  return toWire(await reachable(scope, ctx, id, 'read'));
}

export interface ListFilter {
  spaceId?: string;
  all?: boolean;
}

/**
 * The default page holds organization-level rows; spaceId adds that space's rows (permission taken
 * there); all=true spans every space and needs org-webhooks:read. Rows the caller may not read are
 * left out: a shorter page, not 403.
 */
export async function listWebhooks(scope: OrgScope, ctx: RequestContext, filter: ListFilter, page: CursorPage): Promise<Webhook[]> {
  const params: unknown[] = [scope.orgId, page.limit + 1];
  const reach: string[] = [];
  if (filter.all) {
    if (!ctx.permissions.has('org-webhooks:read')) throw problem('forbidden', { param: 'all', detail: 'all=true needs the org-webhooks:read permission.' });
    reach.push('TRUE');
  } else {
    if (ctx.permissions.has('org-webhooks:read')) reach.push('space_id IS NULL');
    if (filter.spaceId) {
      const perms = await held(scope, ctx, filter.spaceId);
      if (perms?.has('webhooks:read')) {
        params.push(filter.spaceId);
        reach.push(`space_id = $${params.length}`);
      }
    }
  }
  if (reach.length === 0) return [];
  let where = `org_id = $1 AND (${reach.join(' OR ')})`;
  const { condition, order } = cursorCondition(page, params);
  where += condition;
  const { rows } = await scope.pool.query<Row>(`SELECT ${COLUMNS} FROM webhooks WHERE ${where} ORDER BY id COLLATE "C" ${order} LIMIT $2`, params);
  return rows.map(toWire);
}

export interface UpdateInput {
  url?: string;
  events?: string[];
  packageId?: string | null;
  payloadMode?: string;
  enabled?: boolean;
}

export async function updateWebhook(scope: OrgScope, ctx: RequestContext, wd: WebhooksDeps, id: string, patch: UpdateInput): Promise<Webhook> {
  await reachable(scope, ctx, id, 'write');
  if (patch.url !== undefined) await vetUrl(patch.url, wd.egress);
  const { rows } = await scope.pool.query<Row>(
    `UPDATE webhooks SET
       url = COALESCE($3, url),
       events = COALESCE($4, events),
       package_id = CASE WHEN $5::boolean THEN $6 ELSE package_id END,
       payload_mode = COALESCE($7, payload_mode),
       enabled = COALESCE($8, enabled),
       disabled_reason = CASE WHEN $8 IS TRUE THEN NULL ELSE disabled_reason END,
       updated_at = now()
     WHERE id = $1 AND org_id = $2 RETURNING ${COLUMNS}`,
    [id, scope.orgId, patch.url ?? null, patch.events ? [...new Set(patch.events)] : null, patch.packageId !== undefined,
      patch.packageId ?? null, patch.payloadMode ?? null, patch.enabled ?? null],
  );
  if (!rows[0]) throw notFound();
  return toWire(rows[0]);
}

export async function deleteWebhook(scope: OrgScope, ctx: RequestContext, id: string): Promise<void> {
  await reachable(scope, ctx, id, 'delete');
  await scope.pool.query('DELETE FROM webhooks WHERE id = $1 AND org_id = $2', [id, scope.orgId]);
}

/** A new secret; the one it replaces keeps signing beside it for PREVIOUS_SECRET_HOURS. */
export async function rotateWebhookSecret(scope: OrgScope, ctx: RequestContext, wd: WebhooksDeps, id: string): Promise<Webhook & { secret: string }> {
  await reachable(scope, ctx, id, 'write');
  const secret = newWebhookSecret();
  const { rows } = await scope.pool.query<Row>(
    `UPDATE webhooks SET previous_secret_sealed = secret_sealed,
            previous_secret_expires_at = now() + make_interval(hours => $4),
            secret_sealed = $3, updated_at = now()
      WHERE id = $1 AND org_id = $2 RETURNING ${COLUMNS}`,
    [id, scope.orgId, wd.secrets.seal(secret), PREVIOUS_SECRET_HOURS],
  );
  if (!rows[0]) throw notFound();
  return { ...toWire(rows[0]), secret };
}

export interface DeliveryAttempt {
  attempt: number;
  started_at: string;
  status_code: number | null;
  /** null while the attempt is under way, or when its sender stopped during it */
  duration_ms: number | null;
  error: string | null;
  next_attempt_at: string | null;
}

export interface Delivery {
  id: string;
  object: 'webhook_delivery';
  webhook_id: string;
  run_id: string;
  event: string;
  status: string;
  attempt_count: number;
  next_attempt_at: string | null;
  createdAt: string;
  finished_at: string | null;
  attempts: DeliveryAttempt[];
}

export async function listDeliveries(scope: OrgScope, ctx: RequestContext, id: string, page: CursorPage): Promise<Delivery[]> {
  await reachable(scope, ctx, id, 'read');
  return deliveriesOf(scope.pool, scope.orgId, id, page);
}

export async function deliveriesOf(pool: pg.Pool, orgId: string, webhookId: string, page: CursorPage): Promise<Delivery[]> {
  const params: unknown[] = [webhookId, orgId, page.limit + 1];
  let where = 'd.webhook_id = $1 AND d.org_id = $2';
  const { condition, order } = cursorCondition(page, params, 'd.id');
  where += condition;
  const { rows } = await pool.query<{ delivery: Delivery }>(
    `SELECT json_build_object('id', d.id, 'object', 'webhook_delivery', 'webhook_id', d.webhook_id, 'run_id', d.run_id, 'event', d.event,
              'status', d.status, 'attempt_count', d.attempt_count, 'next_attempt_at', wire_time(d.next_attempt_at),
              'createdAt', wire_time(d.created_at), 'finished_at', wire_time(d.finished_at),
              'attempts', COALESCE((SELECT json_agg(json_build_object('attempt', a.attempt, 'started_at', wire_time(a.started_at),
                   'status_code', a.status_code, 'duration_ms', a.duration_ms, 'error', a.error, 'next_attempt_at', wire_time(a.next_attempt_at))
                   ORDER BY a.attempt) FROM webhook_delivery_attempts a WHERE a.delivery_id = d.id), '[]'::json)) AS delivery
       FROM webhook_deliveries d WHERE ${where} ORDER BY d.id COLLATE "C" ${order} LIMIT $3`,
    params,
  );
  return rows.map((r) => r.delivery);
}
