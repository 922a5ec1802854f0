// A run's connections as its sidecar reads them mid-run: the current credential of a connection the
// run bound to an integration at launch, and a refresh of its OAuth access token (an upstream
// answered 401 during a long run), through the organization's default proxy when it has one.
// Requests are signed with the run's secret; the run reaches only its own bindings: any other
// connection (another run's, another tenant's, one of the same actor that this run did not bind
// to that integration) is 400 connection_not_in_run. The signature
// covers the action, connection and integration (lib/run-connection-signing.ts), not a body. A
// refresh token never leaves the platform.
import type { SecretBox } from '../../../lib/crypto.ts';
import type { EgressOptions } from '../../../lib/egress.ts';
import { problem } from '../../../lib/problem.ts';
import { runConnectionSigningPayload, type RunConnectionAction } from '../../../lib/run-connection-signing.ts';
import { inTransaction } from '../../../db/transaction.ts';
import type pg from 'pg';
import { openSink } from '../runs/events.ts';
import { flagNeedsReconnection, isUuid, openCredentials } from './connections.ts';
import { refreshTokens, revokedProblem, usableCredentials } from './oauth.ts';
import { proxyRouteOf } from './outbound.ts';
import { boundConnection, type RunBinding } from './run-credentials.ts';

export interface RunConnectionDeps {
  pool: pg.Pool;
  secrets: SecretBox;
  egress: EgressOptions;
}

export interface RunConnectionCredential {
  object: 'run_connection';
  connection_id: string;
  integration_package_id: string;
  auth_key: string;
  auth_type: string;
  /** the credential fields the sidecar delivers (never a refresh token) */
  credentials: Record<string, string>;
  /** when the access token expires, for OAuth 2; null otherwise or unknown */
  expiresAt: string | null;
}

interface RunSink {
  org_id: string;
  space_id: string;
  status: string;
  sink_expires_at: Date | null;
}

const PACKAGE_ID = /^@[a-z0-9][a-z0-9._-]*\/[a-z0-9][a-z0-9._-]*$/i;

/** The signed payload: the request's action, connection and integration (lib/run-connection-signing.ts). */
function signed(action: RunConnectionAction, connectionId: string, integrationId: string): Buffer {
  return Buffer.from(runConnectionSigningPayload(action, connectionId, integrationId), 'utf8');
}

/** The run whose secret signed the request, still pending or running. */
async function signedRun(deps: RunConnectionDeps, runId: string, headers: Record<string, string | undefined>, raw: Buffer): Promise<RunSink> {
  const { sink: run } = await openSink({ pool: deps.pool, secrets: deps.secrets }, runId, headers, raw);
  if (run.status !== 'pending' && run.status !== 'running') {
    throw problem('run_not_running', { detail: `Run ${runId} has ended; its connections are no longer served.` });
  }
  // a runner elsewhere holds its sink until it expires (PATCH /api/runs/{id}/sink/extend), its connections as long
  if (run.sink_expires_at && run.sink_expires_at.getTime() <= Date.now()) {
    throw problem('run_sink_expired', { detail: `The sink of run ${runId} has expired; its connections are no longer served.` });
  }
  return run;
}

function notInRun(connectionId: string, integrationId: string): never {
  throw problem('connection_not_in_run', {
    detail: `This run did not bind connection ${connectionId.slice(0, 64)} to ${integrationId.slice(0, 200)}.`,
    param: 'connectionId',
  });
}

/** The run's binding of `connectionId` to `integrationId`, or 400 connection_not_in_run. */
async function bindingOf(q: pg.Pool | pg.PoolClient, runId: string, orgId: string, connectionId: string, integrationId: string): Promise<RunBinding> {
  if (!isUuid(connectionId) || !PACKAGE_ID.test(integrationId)) notInRun(connectionId, integrationId);
  const { rows } = await q.query<RunBinding>(
    `SELECT integration_package_id, integration_version, auth_key, connection_id::text AS connection_id FROM run_connections
      WHERE run_id = $1 AND org_id = $2 AND connection_id = $3 AND integration_package_id = $4`,
    [runId, orgId, connectionId.toLowerCase(), integrationId],
  );
  return rows[0] ?? notInRun(connectionId, integrationId);
}

function wire(b: RunBinding, authType: string, credentials: Record<string, string>, expiresAt: Date | null): RunConnectionCredential {
  const { refresh_token: _kept, ...forSidecar } = credentials;
  return {
    object: 'run_connection',
    connection_id: b.connection_id,
    integration_package_id: b.integration_package_id,
    auth_key: b.auth_key,
    auth_type: authType,
    credentials: forSidecar,
    expiresAt: expiresAt ? expiresAt.toISOString() : null,
  };
}

/** The current credential of a connection the run bound to the integration (refreshed when near expiry). */
export async function runConnectionCredential(
  deps: RunConnectionDeps, runId: string, headers: Record<string, string | undefined>, connectionId: string, integrationId: string,
): Promise<RunConnectionCredential> {
  const run = await signedRun(deps, runId, headers, signed('read', connectionId, integrationId));
  const binding = await bindingOf(deps.pool, runId, run.org_id, connectionId, integrationId);
  const org = { pool: deps.pool, orgId: run.org_id };
  const bound = await boundConnection(org, deps.secrets, deps.egress, binding);
  const credentials = await usableCredentials(deps.pool, deps.secrets, bound.egress, await proxyRouteOf(org, deps), bound.connection, bound.auth, bound.client);
  const { rows } = await deps.pool.query<{ token_expires_at: Date | null }>('SELECT token_expires_at FROM integration_connections WHERE org_id = $1 AND id = $2', [run.org_id, binding.connection_id]);
  return wire(binding, bound.auth.type, credentials, rows[0]?.token_expires_at ?? null);
}

/**
 * Refreshes the OAuth access token of a connection the run bound to the integration, at once
 * (whatever its expiry says: the upstream refused it). Refreshes of one connection are serialized
 * on its row, so a rotated refresh token is read by the next one. 409 connect_run_no_refresh when
 * the credential cannot be refreshed (not OAuth 2, or no refresh token); a revoked refresh token
 * flags the connection and is 410 OAUTH_REFRESH_REVOKED.
 */
export async function refreshRunConnection(
  deps: RunConnectionDeps, runId: string, headers: Record<string, string | undefined>, connectionId: string, integrationId: string,
): Promise<RunConnectionCredential> {
  const run = await signedRun(deps, runId, headers, signed('refresh', connectionId, integrationId));
  const binding = await bindingOf(deps.pool, runId, run.org_id, connectionId, integrationId);
  const org = { pool: deps.pool, orgId: run.org_id };
  const via = await proxyRouteOf(org, deps);
  const outcome = await inTransaction(deps.pool, async (tx) => {
    const bound = await boundConnection(org, deps.secrets, deps.egress, binding, tx, true);
    const { auth, connection, client } = bound;
    if (connection.needs_reconnection) throw problem('OAUTH_CONNECTION_NEEDS_RECONNECTION', { detail: `Connection ${connection.id} must be reconnected.` });
    if (auth.type !== 'oauth2') {
      throw problem('connect_run_no_refresh', { detail: `Connection ${connection.id} holds a ${auth.type} credential, which cannot be refreshed; reconnect it if it stopped working.` });
    }
    const credentials = openCredentials(deps.secrets, connection);
    if (!credentials.refresh_token) {
      throw problem('connect_run_no_refresh', { detail: `Connection ${connection.id} holds no refresh token: the provider granted none; reconnect it when its access token expires.` });
    }
    if (!client) throw problem('connect_unavailable', { detail: `The organization has no OAuth client registered for ${binding.integration_package_id} (${binding.auth_key}).` });
    const fresh = await refreshTokens(tx, deps.secrets, bound.egress, via, connection, auth, client, credentials);
    if (fresh === 'revoked') return { revoked: true as const, auth };
    const { rows } = await tx.query<{ token_expires_at: Date | null }>('SELECT token_expires_at FROM integration_connections WHERE org_id = $1 AND id = $2', [run.org_id, connection.id]);
    return { revoked: false as const, auth, credentials: fresh, expiresAt: rows[0]?.token_expires_at ?? null };
  });
  if (outcome.revoked) {
    // flagged after the transaction: a flag inside it would roll back with the refusal
    await flagNeedsReconnection(deps.pool, run.org_id, binding.connection_id);
    throw revokedProblem(binding.connection_id);
  }
  return wire(binding, outcome.auth.type, outcome.credentials, outcome.expiresAt);
}
