// The runner-facing routes of a run: its event sink and the reads behind the first-party tools.
// No user credential: every request is signed with the run's secret (Standard Webhooks headers).
import { z } from 'zod';
import { readRawBody } from '../middleware/body.ts';
import { created, noContent, ok, route } from '../route.ts';
import { approvalForSidecar, requestApproval } from '../services/runs/approvals.ts';
import { ApprovalSchema } from './run-schemas.ts';
import { ingestRunEvent, openSink } from '../services/runs/events.ts';
import { checkpointToResumeFrom, recordRunCheckpoint } from '../services/runs/checkpoints.ts';
import { MAX_CHECKPOINT_BODY_BYTES } from '../../lib/run-checkpoints.ts';
import { publishRunEvent } from '../services/realtime/publish.ts';
import { integrationDepsOf } from '../services/integrations/context.ts';
import { refreshRunConnection, runConnectionCredential } from '../services/integrations/run-connections.ts';

const IdParams = z.object({ id: z.string() });
const PER_RUN = { perMinute: 200, by: 'run' as const };
// a refresh reaches the provider's token endpoint: a few per minute cover every 401 a run can meet
const REFRESH_PER_RUN = { perMinute: 20, by: 'run' as const };
const MAX_REFRESH_BODY_BYTES = 1024;
const ConnectionParams = z.object({ id: z.string(), connectionId: z.string() });
const ConnectionQuery = z.object({ integration: z.string().min(1).max(214).describe('the integration the run bound the connection to: @scope/name') });
const RunConnection = z.object({
  object: z.literal('run_connection'),
  connection_id: z.string(),
  integration_package_id: z.string(),
  auth_key: z.string(),
  auth_type: z.string(),
  credentials: z.record(z.string(), z.string()).describe('the credential fields the sidecar delivers; never a refresh token'),
  expiresAt: z.string().nullable(),
}).meta({ id: 'RunConnection' });
const EventsQuery = z.object({
  placement: z.string().min(1).max(200).optional()
    .describe('the worker whose sandbox posts (the sink URL a worker gives its sandbox carries it): refused once the run is placed elsewhere'),
});
const NO_STORE = { 'Cache-Control': 'no-store' };
const MAX_EVENT_BYTES = 1_048_576;
const SIGNATURE_HEADERS = [
  { name: 'webhook-id', required: true, description: 'Unique message id; a second delivery of the same id is refused.' },
  { name: 'webhook-timestamp', required: true, description: 'Unix seconds; must be within 5 minutes of the server clock.' },
  { name: 'webhook-signature', required: true, description: 'v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>"> with the run secret.' },
];

function signatureHeaders(h: Record<string, string | string[] | undefined>): Record<string, string | undefined> {
  const pick = (k: string) => (typeof h[k] === 'string' ? (h[k] as string) : undefined);
  return { 'webhook-id': pick('webhook-id'), 'webhook-timestamp': pick('webhook-timestamp'), 'webhook-signature': pick('webhook-signature') };
}

const ApprovalParams = z.object({ id: z.string(), approval_id: z.string() });
const MAX_APPROVAL_BODY_BYTES = 262_144;

export const runSinkRoutes = [
  route({
    method: 'post', path: '/internal/runs/{id}/approvals', summary: "Ask for a person's approval of a tool call (sidecar, before it makes the call)", tag: 'Run sink',
    stage: 'internal', rateLimit: PER_RUN, params: IdParams, rawBody: true, headers: SIGNATURE_HEADERS,
    bodyContent: { 'application/json': z.object({ tool: z.string(), arguments: z.record(z.string(), z.unknown()), timeout_seconds: z.number().int().min(1) }) },
    responses: {
      201: { description: 'The pending request', schema: ApprovalSchema },
      401: { description: 'Signature missing or wrong' },
      409: { description: 'run_not_running' },
    },
    handler: async ({ params, req, deps }) => {
      const raw = await readRawBody(req, MAX_APPROVAL_BODY_BYTES);
      const approval = await requestApproval({ pool: deps.database.pool, secrets: deps.secrets, runs: deps.runs, log: deps.log }, params.id, signatureHeaders(req.headers), raw);
      if (deps.runReads) deps.runReads.changed((await deps.database.pool.query<{ space_id: string }>('SELECT space_id FROM runs WHERE id = $1', [params.id])).rows[0]?.space_id ?? '');
      return created(approval);
    },
  }),
  route({
    method: 'get', path: '/internal/runs/{id}/approvals/{approval_id}', summary: 'Read an approval request of the run: its decision (sidecar, while it waits)', tag: 'Run sink',
    stage: 'internal', rateLimit: { perMinute: 600, by: 'run' as const }, params: ApprovalParams, headers: SIGNATURE_HEADERS,
    responses: { 200: { description: 'The request; park: the run is to hand over its pending state (it is being parked)', schema: ApprovalSchema.extend({ park: z.boolean() }) }, 401: { description: 'Signature missing or wrong' }, 404: { description: 'No such run or request' } },
    handler: async ({ params, req, deps }) =>
      ok(await approvalForSidecar({ pool: deps.database.pool, secrets: deps.secrets }, params.id, signatureHeaders(req.headers), params.approval_id), NO_STORE),
  }),
  route({
    method: 'post', path: '/internal/runs/{id}/events', summary: 'Post signed run events (runner to platform): one event, or a batch { events: [...] } in sequence order', tag: 'Run sink',
    stage: 'internal', rateLimit: PER_RUN, params: IdParams, query: EventsQuery, rawBody: true, headers: SIGNATURE_HEADERS,
    responses: {
      204: { description: 'Accepted' }, 401: { description: 'Signature missing or wrong' }, 409: { description: 'message_replayed' },
      410: { description: 'run_sink_closed (the run has ended, or is placed on another worker than the sandbox that posted) or run_sink_expired' },
    },
    handler: async ({ params, query, req, deps }) => {
      const raw = await readRawBody(req, MAX_EVENT_BYTES);
      const { changedSpaceId, recorded } = await ingestRunEvent(
        { pool: deps.database.pool, secrets: deps.secrets, runs: deps.runs }, params.id, signatureHeaders(req.headers), raw, query.placement ?? null,
      );
      // the run's next read on this instance shows the event without waiting for its announcement
      if (changedSpaceId) deps.runReads?.changed(changedSpaceId);
      // in sequence order, as the streams' readers expect
      for (const event of recorded ?? []) await publishRunEvent(deps, params.id, event);
      return noContent();
    },
  }),
  route({
    method: 'post', path: '/internal/runs/{id}/checkpoint', summary: "Record the run's checkpoint after a completed step (runner to platform; the latest step is kept)", tag: 'Run sink',
    stage: 'internal', rateLimit: PER_RUN, params: IdParams, rawBody: true, headers: SIGNATURE_HEADERS,
    bodyLimit: () => MAX_CHECKPOINT_BODY_BYTES,
    responses: {
      204: { description: 'Kept' }, 400: { description: 'invalid_request: not a checkpoint' }, 401: { description: 'Signature missing or wrong' },
      410: { description: 'run_sink_closed or run_sink_expired' },
    },
    handler: async ({ params, req, deps }) => {
      const raw = await readRawBody(req, MAX_CHECKPOINT_BODY_BYTES);
      await recordRunCheckpoint({ pool: deps.database.pool, secrets: deps.secrets }, params.id, signatureHeaders(req.headers), raw);
      return noContent();
    },
  }),
  route({
    method: 'get', path: '/internal/runs/{id}/checkpoint', summary: 'The checkpoint a resumed run starts from: its conversation, and the workspace paths boot restored or removed', tag: 'Run sink',
    stage: 'internal', rateLimit: PER_RUN, params: IdParams, headers: SIGNATURE_HEADERS,
    responses: { 200: { description: 'The checkpoint of the run this one resumes' }, 204: { description: 'The run starts afresh' }, 401: { description: 'Signature missing or wrong' } },
    handler: async ({ params, req, deps }) => {
      const found = await checkpointToResumeFrom({ pool: deps.database.pool, secrets: deps.secrets }, params.id, signatureHeaders(req.headers));
      return found ? ok(found, NO_STORE) : noContent();
    },
  }),
  route({
    method: 'get', path: '/internal/runs/{id}/history', summary: 'Earlier runs of the same agent for the same actor (run_history tool)', tag: 'Run sink',
    stage: 'internal', rateLimit: PER_RUN, params: IdParams, headers: SIGNATURE_HEADERS,
    query: z.object({ limit: z.string().optional() }),
    responses: { 200: { description: 'Earlier runs, newest first' } },
    handler: async ({ params, query, req, deps }) => {
      await openSink({ pool: deps.database.pool, secrets: deps.secrets }, params.id, signatureHeaders(req.headers), Buffer.alloc(0));
      const limit = Math.min(50, Math.max(1, Number(query.limit) || 10));
      const { rows } = await deps.database.pool.query(
        `SELECT p.id, p.status, p.input, p.output, p.error->>'code' AS error_code, p.created_at, p.finished_at
           FROM runs r JOIN runs p ON p.org_id = r.org_id AND p.space_id = r.space_id AND p.agent_id = r.agent_id
            AND p.actor_user_id IS NOT DISTINCT FROM r.actor_user_id AND p.end_user_id IS NOT DISTINCT FROM r.end_user_id
          WHERE r.id = $1 AND p.id <> r.id ORDER BY p.created_at DESC LIMIT $2`,
        [params.id, limit],
      );
      return ok({ object: 'list', data: rows });
    },
  }),
  route({
    method: 'get', path: '/internal/runs/{id}/memory', summary: 'Facts pinned by earlier runs of the same agent for the same actor (recall_memory tool)', tag: 'Run sink',
    stage: 'internal', rateLimit: PER_RUN, params: IdParams, headers: SIGNATURE_HEADERS,
    query: z.object({ query: z.string().max(200).optional() }),
    responses: { 200: { description: 'Pinned facts, newest first' } },
    handler: async ({ params, query, req, deps }) => {
      await openSink({ pool: deps.database.pool, secrets: deps.secrets }, params.id, signatureHeaders(req.headers), Buffer.alloc(0));
      const filter = query.query ? `%${query.query.replace(/[\\%_]/g, (c) => `\\${c}`)}%` : null;
      const { rows } = await deps.database.pool.query(
        `SELECT l.message AS fact, l.run_id, l.created_at
           FROM runs r JOIN runs p ON p.org_id = r.org_id AND p.space_id = r.space_id AND p.agent_id = r.agent_id
            AND p.actor_user_id IS NOT DISTINCT FROM r.actor_user_id AND p.end_user_id IS NOT DISTINCT FROM r.end_user_id
           JOIN run_logs l ON l.run_id = p.id AND l.data->>'kind' = 'pin'
          WHERE r.id = $1 AND ($2::text IS NULL OR l.message ILIKE $2)
          ORDER BY l.created_at DESC LIMIT 50`,
        [params.id, filter],
      );
      return ok({ object: 'list', data: rows });
    },
  }),
  route({
    method: 'get', path: '/internal/runs/{id}/connections/{connectionId}', summary: 'The current credential of a connection the run bound to an integration (sidecar)', tag: 'Run sink',
    stage: 'internal', rateLimit: PER_RUN, params: ConnectionParams, query: ConnectionQuery, headers: SIGNATURE_HEADERS,
    responses: {
      200: { description: 'The credential as the sidecar delivers it', schema: RunConnection },
      400: { description: 'connection_not_in_run: this run did not bind that connection to that integration' },
      401: { description: 'Signature missing or wrong (it signs "run-connection read", the connection and the integration)' },
      404: { description: 'No such run, or credential_not_found: the connection was deleted after the launch' },
      409: { description: 'run_not_running' },
      410: { description: 'run_sink_expired; OAUTH_CONNECTION_NEEDS_RECONNECTION or OAUTH_REFRESH_REVOKED' },
      502: { description: 'bad_gateway: the token endpoint failed a refresh near expiry; upstream_unreachable: it, or the organization\'s proxy, could not be reached' },
    },
    handler: async ({ params, query, req, deps }) => {
      const credential = await runConnectionCredential(
        { pool: deps.database.pool, ...integrationDepsOf(deps) }, params.id, signatureHeaders(req.headers), params.connectionId, query.integration);
      return ok(credential, NO_STORE);
    },
  }),
  route({
    method: 'post', path: '/internal/runs/{id}/connections/{connectionId}/refresh', summary: "Refresh the OAuth credential of a connection the run bound to an integration, at once (sidecar, after an upstream's 401)", tag: 'Run sink',
    stage: 'internal', rateLimit: REFRESH_PER_RUN, params: ConnectionParams, query: ConnectionQuery, rawBody: true, headers: SIGNATURE_HEADERS,
    responses: {
      200: { description: 'The refreshed credential', schema: RunConnection },
      400: { description: 'connection_not_in_run: this run did not bind that connection to that integration' },
      401: { description: 'Signature missing or wrong (it signs "run-connection refresh", the connection and the integration)' },
      404: { description: 'No such run, or credential_not_found: the connection was deleted after the launch' },
      409: { description: 'connect_run_no_refresh: the credential cannot be refreshed; run_not_running' },
      410: { description: 'run_sink_expired; OAUTH_CONNECTION_NEEDS_RECONNECTION or OAUTH_REFRESH_REVOKED' },
      502: { description: 'bad_gateway: the token endpoint failed; upstream_unreachable: it, or the organization\'s proxy, could not be reached' },
      503: { description: 'connect_unavailable: the organization registered no OAuth client for the integration' },
    },
    handler: async ({ params, query, req, deps }) => {
      // the sidecar sends no body: the signature covers the action, connection and integration
      await readRawBody(req, MAX_REFRESH_BODY_BYTES);
      const credential = await refreshRunConnection(
        { pool: deps.database.pool, ...integrationDepsOf(deps) }, params.id, signatureHeaders(req.headers), params.connectionId, query.integration);
      return ok(credential, NO_STORE);
    },
  }),
];
