// Which connection a run of an agent by this actor would use, per integration the agent selects:
// a connection pinned to the agent, else the enforced organization default, else the actor's own
// (unless personal connections are disabled), else the organization default or a shared one.
// The launch refuses 409 missing_integration_connection with one errors[] entry per unready
// integration, and records the connections it resolved on the run. An integration that declares
// no auths (a public remote MCP server) needs no connection: it is always ready, and the run
// records it with its version and no connection.
import type { AgentManifest, IntegrationManifest, IntegrationSource } from '../../../lib/afps/manifest-types.ts';
import type { Config } from '../../../lib/config.ts';
import { refusedLocalImage } from '../../../lib/local-integration-images.ts';
import type { FieldError } from '../../../lib/problem.ts';
import { problem } from '../../../lib/problem.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import type { Queryable } from '../packages/store.ts';
import { listVisibleConnections, ownedBy, type ConnectionRow } from './connections.ts';
import { createConnectSession, type ConnectLink } from './connect.ts';
import type { IntegrationDeps } from './context.ts';
import { readSettings } from './governance.ts';

export interface AgentIntegration {
  id: string;
  version: string;
  manifest: IntegrationManifest;
}

export interface AgentUnderLaunch {
  packageId: string;
  manifest: AgentManifest;
  integrations: AgentIntegration[];
  /**
   * false for an inline manifest: pins are given to a stored agent (its prompt), never to whatever
   * manifest takes its name
   */
  pinsApply?: boolean;
}

export interface ResolvedConnection {
  packageId: string;
  version: string;
  /** null with connectionId: the integration declares no auths */
  authKey: string | null;
  connectionId: string | null;
  tools: string[];
  source: IntegrationSource;
}

export interface ReadinessItem {
  packageId: string;
  ready: boolean;
  /** false: the integration declares no auths, so a run uses it without a connection */
  requires_connection: boolean;
  /** the connection a run would use, when one is chosen (ready or not) */
  connection_id: string | null;
  auth_key: string | null;
  owned_by_actor: boolean;
  needs_reconnection: boolean;
  /** the auth a connection must be of; null when the integration declares none */
  required_auth_key: string | null;
  available_auth_keys: string[];
  required_scopes: string[];
  missing_scopes: string[];
  candidate_connections: Array<{ id: string; label: string; account_id: string; owned_by_actor: boolean; needs_reconnection: boolean }>;
}

export interface ConnectionPlan {
  items: ReadinessItem[];
  resolved: ResolvedConnection[];
}

/** The tools the agent selected of an integration: integrations_configuration, else its default tools. */
export function selectedTools(agent: AgentManifest, integration: AgentIntegration): string[] {
  return agent.integrations_configuration?.[integration.id]?.tools ?? integration.manifest.default_tools ?? [];
}

async function pinnedConnection(q: Queryable, scope: SpaceScope, agentId: string, integrationId: string): Promise<ConnectionRow | null> {
  const { rows } = await q.query<ConnectionRow>(
    `SELECT c.* FROM integration_connection_pins p JOIN integration_connections c ON c.org_id = p.org_id AND c.id = p.connection_id
      WHERE p.org_id = $1 AND p.space_id = $2 AND p.agent_id = $3 AND p.integration_package_id = $4`,
    [scope.orgId, scope.spaceId, agentId, integrationId],
  );
  return rows[0] ?? null;
}

async function connectionById(q: Queryable, orgId: string, id: string | null): Promise<ConnectionRow | null> {
  if (!id) return null;
  const { rows } = await q.query<ConnectionRow>('SELECT * FROM integration_connections WHERE org_id = $1 AND id = $2', [orgId, id]);
  return rows[0] ?? null;
}

const usable = (c: ConnectionRow) => !c.needs_reconnection;
const newestFirst = (a: ConnectionRow, b: ConnectionRow) => b.updated_at.getTime() - a.updated_at.getTime();

/** An integration declaring no auths: ready as it is, nothing to choose. */
function readyWithoutConnection(packageId: string): ReadinessItem {
  return {
    packageId, ready: true, requires_connection: false, connection_id: null, auth_key: null, owned_by_actor: false, needs_reconnection: false,
    required_auth_key: null, available_auth_keys: [], required_scopes: [], missing_scopes: [], candidate_connections: [],
  };
}

export async function planConnections(scope: SpaceScope, deps: IntegrationDeps, agent: AgentUnderLaunch): Promise<ConnectionPlan> {
  const items: ReadinessItem[] = [];
  const resolved: ResolvedConnection[] = [];
  for (const integration of agent.integrations) {
    const auths = integration.manifest.auths ?? {};
    const authKeys = Object.keys(auths);
    if (authKeys.length === 0) {
      items.push(readyWithoutConnection(integration.id));
      resolved.push({
        packageId: integration.id, version: integration.version, authKey: null, connectionId: null,
        tools: selectedTools(agent.manifest, integration), source: integration.manifest.source,
      });
      continue;
    }
    const settings = await readSettings(scope.pool, deps.secrets, scope.orgId, integration.id);
    const candidates = (await listVisibleConnections(scope, { integrationId: integration.id })).filter((c) => auths[c.auth_key]);
    const own = candidates.filter((c) => ownedBy(c, scope.actor) && (!settings.personal_connections_disabled || c.shared_with_org)).sort(newestFirst);
    const shared = candidates.filter((c) => c.shared_with_org && !ownedBy(c, scope.actor)).sort(newestFirst);
    const defaultRow = await connectionById(scope.pool, scope.orgId, settings.default_connection_id);

    let chosen = agent.pinsApply === false ? null : await pinnedConnection(scope.pool, scope, agent.packageId, integration.id);
    if (!chosen && settings.enforce_default) chosen = defaultRow;
    if (!chosen && !scope.actor.endUserId) chosen = own.find(usable) ?? defaultRow ?? shared.find(usable) ?? own[0] ?? null;
    if (!chosen && scope.actor.endUserId) chosen = own.find(usable) ?? own[0] ?? null;

    const requiredAuthKey = chosen && auths[chosen.auth_key] ? chosen.auth_key : authKeys[0];
    const requiredScopes = auths[requiredAuthKey].oauth2?.scopes ?? [];
    const granted = new Set(chosen?.granted_scopes ?? []);
    const missingScopes = chosen && auths[chosen.auth_key]?.type === 'oauth2' && chosen.granted_scopes.length ? requiredScopes.filter((s) => !granted.has(s)) : [];
    const ready = chosen !== null && !chosen.needs_reconnection && auths[chosen.auth_key] !== undefined && missingScopes.length === 0;
    items.push({
      packageId: integration.id,
      ready,
      requires_connection: true,
      connection_id: chosen?.id ?? null,
      auth_key: chosen?.auth_key ?? null,
      owned_by_actor: chosen ? ownedBy(chosen, scope.actor) : false,
      needs_reconnection: chosen?.needs_reconnection ?? false,
      required_auth_key: requiredAuthKey,
      available_auth_keys: authKeys,
      required_scopes: requiredScopes,
      missing_scopes: missingScopes,
      candidate_connections: candidates.map((c) => ({ id: c.id, label: c.label, account_id: c.account_id, owned_by_actor: ownedBy(c, scope.actor), needs_reconnection: c.needs_reconnection })),
    });
    if (ready) {
      resolved.push({
        packageId: integration.id, version: integration.version, authKey: chosen!.auth_key, connectionId: chosen!.id,
        tools: selectedTools(agent.manifest, integration), source: integration.manifest.source,
      });
    }
  }
  return { items, resolved };
}

function reason(item: ReadinessItem): string {
  if (!item.connection_id) return `No ${item.packageId} connection is available to this caller.`;
  if (item.needs_reconnection) return `Connection ${item.connection_id} must be reconnected.`;
  if (item.missing_scopes.length) return `Connection ${item.connection_id} lacks the scopes ${item.missing_scopes.join(', ')}.`;
  return `Connection ${item.connection_id} uses an auth this version of ${item.packageId} does not declare.`;
}

/**
 * The launch's check for a run this platform executes: its local integrations must be startable
 * here (refuseUnstartableLocal), and its connections ready (readyConnections). Answers the
 * connections to record on the run.
 */
export async function connectionsForLaunch(scope: SpaceScope, deps: IntegrationDeps, config: Config, agent: AgentUnderLaunch): Promise<ResolvedConnection[]> {
  refuseUnstartableLocal(config, agent);
  const resolved = await readyConnections(scope, deps, agent);
  await refuseCredentialEnv(scope, agent, resolved);
  return resolved;
}

/**
 * A local integration whose chosen auth hands its credential to the server's environment
 * (delivery.env) needs the organization's leave (local_credential_env, off by default): refused
 * otherwise, naming it. Checked again at boot (local-servers.ts).
 */
export async function refuseCredentialEnv(scope: SpaceScope, agent: AgentUnderLaunch, resolved: ResolvedConnection[]): Promise<void> {
  const wanting = resolved.find((r) => {
    if (r.source.kind !== 'local' || r.authKey === null) return false;
    const manifest = agent.integrations.find((i) => i.id === r.packageId)?.manifest;
    return manifest?.auths?.[r.authKey]?.delivery?.env !== undefined;
  });
  if (!wanting) return;
  if (await localCredentialEnvAllowed(scope)) return;
  throw problem('local_credential_env_disabled', {
    detail: `${wanting.packageId} hands its credential to its local MCP server's environment (delivery.env); an organization admin must allow it (PATCH /api/orgs/{orgId} with local_credential_env: true).`,
    errors: [{ field: `dependencies.integrations.${wanting.packageId}`, code: 'invalid_value', message: 'delivery.env needs the organization\'s local_credential_env', packageId: wanting.packageId }],
  });
}

/** Whether the organization lets local servers receive their credential in their environment. */
export async function localCredentialEnvAllowed(scope: { pool: SpaceScope['pool']; orgId: string }): Promise<boolean> {
  const { rows } = await scope.pool.query<{ local_credential_env: boolean }>('SELECT local_credential_env FROM organizations WHERE id = $1', [scope.orgId]);
  return rows[0]?.local_credential_env === true;
}

/**
 * A local integration on the process backend is refused naming it, and so is one naming an image
 * the operator does not allow (LOCAL_INTEGRATION_IMAGES).
 */
export function refuseUnstartableLocal(config: Config, agent: AgentUnderLaunch): void {
  if (config.RUN_ADAPTER === 'process') {
    const local = agent.integrations.find((i) => i.manifest.source.kind === 'local');
    if (local) {
      throw problem('local_integration_unavailable', {
        detail: `${local.id} runs a local MCP server, which the process backend (RUN_ADAPTER=process) cannot start; use a container or microVM backend.`,
        errors: [{ field: `dependencies.integrations.${local.id}`, code: 'invalid_value', message: 'source.kind local needs a container or microVM backend', packageId: local.id }],
      });
    }
  }
  for (const integration of agent.integrations) {
    const image = refusedLocalImage(integration.manifest.source, config);
    if (image === null) continue;
    throw problem('local_integration_unavailable', {
      detail: `${integration.id} runs its local MCP server in the image ${image}, which this platform does not start: the operator allows ${config.LOCAL_INTEGRATION_IMAGES.length ? 'only the images in LOCAL_INTEGRATION_IMAGES' : 'only the agent image (LOCAL_INTEGRATION_IMAGES is unset)'}.`,
      errors: [{ field: `dependencies.integrations.${integration.id}`, code: 'invalid_value', message: `source.image ${image} is not an allowed image`, packageId: integration.id }],
    });
  }
}

/**
 * The connections a run of the agent by this actor uses, as planConnections chooses them; an unready
 * integration is 409 missing_integration_connection (with a connect link for the caller where one
 * can be issued).
 */
export async function readyConnections(scope: SpaceScope, deps: IntegrationDeps, agent: AgentUnderLaunch): Promise<ResolvedConnection[]> {
  const plan = await planConnections(scope, deps, agent);
  // only an integration with auths can be unready
  const unready = plan.items.filter((i): i is ReadinessItem & { required_auth_key: string } => !i.ready && i.required_auth_key !== null);
  if (unready.length === 0) return plan.resolved;
  const errors: FieldError[] = [];
  for (const item of unready) {
    let link: ConnectLink | null = null;
    try {
      link = await createConnectSession(scope, deps, null, item.packageId, item.required_auth_key, item.connection_id && item.owned_by_actor ? { connection_id: item.connection_id } : {});
    } catch {
      link = null; // personal connections disabled, or an auth no link can complete: the entry says so without one
    }
    errors.push({
      field: `integrations.${item.packageId}`,
      code: 'missing_integration_connection',
      title: 'Connection missing',
      message: reason(item),
      packageId: item.packageId,
      auth_key: item.auth_key,
      required_auth_key: item.required_auth_key,
      available_auth_keys: item.available_auth_keys,
      connection_id: item.connection_id,
      owned_by_actor: item.owned_by_actor,
      candidate_connections: item.candidate_connections,
      required_scopes: item.required_scopes,
      missing_scopes: item.missing_scopes,
      connect_url: link?.connect_url ?? null,
      expiresAt: link?.expiresAt ?? null,
    });
  }
  throw problem('missing_integration_connection', {
    detail: `The run cannot start: ${unready.length} integration${unready.length === 1 ? '' : 's'} of ${agent.packageId} ha${unready.length === 1 ? 's' : 've'} no usable connection.`,
    errors,
  });
}

export async function recordRunConnections(q: Queryable, orgId: string, runId: string, resolved: ResolvedConnection[]): Promise<void> {
  for (const r of resolved) {
    await q.query(
      `INSERT INTO run_connections (run_id, org_id, integration_package_id, integration_version, auth_key, connection_id) VALUES ($1, $2, $3, $4, $5, $6)`,
      [runId, orgId, r.packageId, r.version, r.authKey, r.connectionId],
    );
  }
}
