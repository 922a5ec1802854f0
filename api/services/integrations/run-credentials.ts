// The sandbox-boot side: the connections a run recorded at launch, decrypted (OAuth tokens
// refreshed when near expiry, through the organization's default proxy when it has one) into the
// sidecar's integration assignments. Only the sidecar receives them; a refresh token never leaves
// the platform. An integration declaring no auths was
// recorded without a connection: a remote one reaches the sidecar with none (no credential to add),
// a source none one is left out (api_call only delivers a credential, so it has no tool).
import type { IntegrationAssignment } from '../../../lib/afps/integration-assignment.ts';
import type { AgentManifest, IntegrationAuth, IntegrationManifest } from '../../../lib/afps/manifest-types.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import type { EgressOptions } from '../../../lib/egress.ts';
import { deliveryHeader } from '../../../lib/afps/credential-delivery.ts';
import { problem } from '../../../lib/problem.ts';
import { localCredentialEnvAllowed } from './readiness.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { versionManifest } from '../packages/rows.ts';
import type { ConnectionRow } from './connections.ts';
import { readSettings } from './governance.ts';
import { usableCredentials, type OAuthClient } from './oauth.ts';
import { proxyRouteOf } from './outbound.ts';
import type { Queryable } from '../packages/store.ts';

export type RunIntegration = IntegrationAssignment;

/** "@acme/mail" → "acme_mail" */
export function toolPrefixOf(packageId: string): string {
  return packageId.replace(/^@/, '').replace('/', '_');
}

/** One row of run_connections: the connection a run bound to an integration at launch. */
export interface RunBinding {
  integration_package_id: string;
  integration_version: string;
  auth_key: string;
  connection_id: string;
}

/** A row as stored: auth and connection null for an integration that declares no auths. */
type RunIntegrationRow = Omit<RunBinding, 'auth_key' | 'connection_id'> & { auth_key: string | null; connection_id: string | null };

export interface BoundConnection {
  manifest: IntegrationManifest;
  auth: IntegrationAuth;
  connection: ConnectionRow;
  client: OAuthClient | null;
  /** the egress options for this auth's token endpoint and literal hosts */
  egress: EgressOptions;
}

/** The pinned auth, the connection row and the organization's OAuth client of one binding. */
export async function boundConnection(scope: Pick<SpaceScope, 'pool' | 'orgId'>, secrets: SecretBox, egress: EgressOptions, r: RunBinding, q: Queryable = scope.pool, lock = false): Promise<BoundConnection> {
  const manifest = (await versionManifest(scope.pool, scope.orgId, r.integration_package_id, r.integration_version)) as IntegrationManifest;
  const auth = manifest.auths?.[r.auth_key];
  if (!auth) throw problem('integration_auth_undeclared', { detail: `${r.integration_package_id}@${r.integration_version} declares no auth "${r.auth_key}".` });
  const { rows: found } = await q.query<ConnectionRow>(`SELECT * FROM integration_connections WHERE org_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [scope.orgId, r.connection_id]);
  const connection = found[0];
  if (!connection) throw problem('credential_not_found', { detail: `Connection ${r.connection_id} of ${r.integration_package_id} was deleted after launch.` });
  const settings = await readSettings(scope.pool, secrets, scope.orgId, r.integration_package_id);
  const literal = (auth.authorized_uris ?? []).flatMap((u) => { try { return [new URL(u.replace(/\*/g, 'x')).hostname.replace(/^\[|\]$/g, '')]; } catch { return []; } });
  const tokenHost = auth.oauth2 ? [new URL(auth.oauth2.token_url).hostname] : [];
  return { manifest, auth, connection, client: settings.oauth_clients[r.auth_key] ?? null, egress: { ...egress, authorizedHosts: [...literal, ...tokenHost] } };
}

export async function runIntegrations(scope: SpaceScope, secrets: SecretBox, egress: EgressOptions, runId: string, agent: AgentManifest): Promise<RunIntegration[]> {
  const { rows } = await scope.pool.query<RunIntegrationRow>(
    `SELECT integration_package_id, integration_version, auth_key, connection_id FROM run_connections
      WHERE run_id = $1 AND org_id = $2 ORDER BY integration_package_id`,
    [runId, scope.orgId],
  );
  const out: RunIntegration[] = [];
  const via = await proxyRouteOf(scope, { secrets, egress });
  for (const r of rows) {
    if (r.auth_key === null || r.connection_id === null) {
      const connectionless = await withoutConnection(scope, r, agent);
      if (connectionless) out.push(connectionless);
      continue;
    }
    const bound = await boundConnection(scope, secrets, egress, { ...r, auth_key: r.auth_key, connection_id: r.connection_id });
    const { manifest, auth } = bound;
    // a local server's tools come through its runner (local-servers.ts); the sidecar holds its
    // credential only to put it on the server's requests (delivery.http, the egress proxy)
    if (manifest.source.kind === 'local' && !auth.delivery?.http) continue;
    const credentials = await usableCredentials(scope.pool, secrets, bound.egress, via, bound.connection, auth, bound.client);
    const { refresh_token: _kept, ...forSidecar } = credentials;
    const tools = agent.integrations_configuration?.[r.integration_package_id]?.tools ?? manifest.default_tools ?? [];
    if (tools.length === 0) continue;
    out.push({
      packageId: r.integration_package_id,
      toolPrefix: toolPrefixOf(r.integration_package_id),
      tools,
      source: manifest.source,
      authKey: r.auth_key,
      authType: auth.type,
      connectionId: r.connection_id,
      authorizedUris: auth.authorized_uris ?? [],
      delivery: auth.delivery?.http ?? null,
      credentials: forSidecar,
    });
  }
  return out;
}

/**
 * The variables each local integration's server receives its credential in (delivery.env of the
 * auth the run bound), by package: refreshed like the sidecar's, rendered from the credential's
 * fields. Refused (local_credential_env_disabled) when the organization does not allow it.
 */
export async function runCredentialEnv(scope: SpaceScope, secrets: SecretBox, egress: EgressOptions, runId: string): Promise<Record<string, Record<string, string>>> {
  const { rows } = await scope.pool.query<RunIntegrationRow>(
    `SELECT integration_package_id, integration_version, auth_key, connection_id FROM run_connections
      WHERE run_id = $1 AND org_id = $2 AND auth_key IS NOT NULL AND connection_id IS NOT NULL ORDER BY integration_package_id`,
    [runId, scope.orgId],
  );
  const out: Record<string, Record<string, string>> = {};
  let via: Awaited<ReturnType<typeof proxyRouteOf>> | undefined;
  for (const r of rows) {
    const manifest = (await versionManifest(scope.pool, scope.orgId, r.integration_package_id, r.integration_version)) as IntegrationManifest;
    const env = manifest.source.kind === 'local' ? manifest.auths?.[r.auth_key!]?.delivery?.env : undefined;
    if (!env) continue;
    if (!(await localCredentialEnvAllowed(scope))) {
      throw problem('local_credential_env_disabled', { detail: `${r.integration_package_id} hands its credential to its local MCP server's environment (delivery.env), which the organization no longer allows.` });
    }
    const bound = await boundConnection(scope, secrets, egress, { ...r, auth_key: r.auth_key!, connection_id: r.connection_id! });
    via ??= await proxyRouteOf(scope, { secrets, egress });
    const credentials = await usableCredentials(scope.pool, secrets, bound.egress, via, bound.connection, bound.auth, bound.client);
    // the same template rules as delivery.http's value: every field present, no line break
    const rendered = deliveryHeader({ in: 'header', name: env.name, value: env.value }, credentials);
    if (!rendered) throw problem('missing_integration_connection', { detail: `Connection ${r.connection_id} lacks the fields ${r.integration_package_id}'s delivery.env names.` });
    out[r.integration_package_id] = { [env.name]: rendered[1] };
  }
  return out;
}

/** The assignment of an integration the run recorded without a connection: a remote server's tools, served as they come. */
async function withoutConnection(scope: SpaceScope, r: RunIntegrationRow, agent: AgentManifest): Promise<RunIntegration | null> {
  const manifest = (await versionManifest(scope.pool, scope.orgId, r.integration_package_id, r.integration_version)) as IntegrationManifest;
  if (manifest.source.kind !== 'remote') return null;
  const tools = agent.integrations_configuration?.[r.integration_package_id]?.tools ?? manifest.default_tools ?? [];
  if (tools.length === 0) return null;
  return {
    packageId: r.integration_package_id,
    toolPrefix: toolPrefixOf(r.integration_package_id),
    tools,
    source: manifest.source,
    authKey: null,
    connectionId: null,
    authorizedUris: [],
    delivery: null,
    credentials: {},
  };
}
