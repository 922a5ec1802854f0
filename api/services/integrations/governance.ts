// Organization governance per integration: personal connections switched off by an admin, an
// organization default connection (optionally enforced), the OAuth client the organization
// registered with the provider, connections pinned to agents, and sharing a connection.
import type { SecretBox } from '../../../lib/crypto.ts';
import { problem } from '../../../lib/problem.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { inTransaction } from '../../../db/transaction.ts';
import type { PackageScope } from '../packages/access.ts';
import { findPackage, listVersions, resolveStored, versionManifest } from '../packages/rows.ts';
import type { Queryable } from '../packages/store.ts';
import type { AgentManifest, IntegrationManifest } from '../../../lib/afps/manifest-types.ts';
import { ownConnection, visibleConnection, type ConnectionRow } from './connections.ts';
import { authOf, integrationInSpace } from './context.ts';
import type { OAuthClient } from './oauth.ts';
import { disableSchedulesUsingConnection } from '../schedules/actor.ts';

export interface IntegrationSettings {
  personal_connections_disabled: boolean;
  default_connection_id: string | null;
  enforce_default: boolean;
  oauth_clients: Record<string, OAuthClient>;
}

const NONE: IntegrationSettings = { personal_connections_disabled: false, default_connection_id: null, enforce_default: false, oauth_clients: {} };

export async function readSettings(q: Queryable, secrets: SecretBox, orgId: string, integrationId: string): Promise<IntegrationSettings> {
  const { rows } = await q.query(
    'SELECT personal_connections_disabled, default_connection_id, enforce_default, oauth_clients FROM integration_settings WHERE org_id = $1 AND integration_package_id = $2',
    [orgId, integrationId],
  );
  const r = rows[0];
  if (!r) return NONE;
  return {
    personal_connections_disabled: r.personal_connections_disabled,
    default_connection_id: r.default_connection_id,
    enforce_default: r.enforce_default,
    oauth_clients: r.oauth_clients ? JSON.parse(secrets.open(r.oauth_clients)) : {},
  };
}

export interface SettingsWire {
  integration_package_id: string;
  personal_connections_disabled: boolean;
  default_connection_id: string | null;
  enforce_default: boolean;
  /** auth keys with an OAuth client, and its public id (never the secret) */
  oauth_clients: Array<{ auth_key: string; client_id: string }>;
}

function toSettingsWire(id: string, s: IntegrationSettings): SettingsWire {
  return {
    integration_package_id: id,
    personal_connections_disabled: s.personal_connections_disabled,
    default_connection_id: s.default_connection_id,
    enforce_default: s.enforce_default,
    oauth_clients: Object.entries(s.oauth_clients).map(([auth_key, c]) => ({ auth_key, client_id: c.client_id })),
  };
}

export interface SettingsChange {
  personal_connections_disabled?: boolean;
  default_connection_id?: string | null;
  enforce_default?: boolean;
  oauth_client?: { auth_key: string; client_id: string; client_secret?: string };
}

function requireOrgAdmin(scope: PackageScope): void {
  if (scope.caller.orgRole !== 'owner' && scope.caller.orgRole !== 'admin') {
    throw problem('forbidden', { detail: 'Only organization owners and admins govern integrations.' });
  }
}

/** Organization owners and admins only: the settings apply to every space of the organization. */
export async function changeSettings(scope: PackageScope, secrets: SecretBox, integrationId: string, change: SettingsChange): Promise<SettingsWire> {
  const integration = await integrationInSpace(scope.pool, scope.orgId, scope.spaceId, integrationId);
  requireOrgAdmin(scope);
  const current = await readSettings(scope.pool, secrets, scope.orgId, integrationId);
  const next: IntegrationSettings = { ...current, oauth_clients: { ...current.oauth_clients } };
  if (change.personal_connections_disabled !== undefined) next.personal_connections_disabled = change.personal_connections_disabled;
  if (change.enforce_default !== undefined) next.enforce_default = change.enforce_default;
  if (change.default_connection_id !== undefined) {
    if (change.default_connection_id !== null) {
      const row = await visibleConnection(scope, change.default_connection_id);
      if (row.integration_package_id !== integrationId) throw problem('not_found', { detail: `Connection ${row.id} is not a ${integrationId} connection.` });
      if (row.owner_end_user_id) throw problem('end_user_connection_not_shareable', { detail: 'An end-user\'s connection cannot be the organization default.' });
      await shareable(scope, row);
      await scope.pool.query('UPDATE integration_connections SET shared_with_org = true, updated_at = now() WHERE org_id = $1 AND id = $2', [scope.orgId, row.id]);
    }
    next.default_connection_id = change.default_connection_id;
  }
  if (change.oauth_client) {
    const auth = authOf(integration, change.oauth_client.auth_key);
    if (auth.type !== 'oauth2') throw problem('validation_failed', { detail: `Auth ${change.oauth_client.auth_key} is not an OAuth 2 auth.`, errors: [{ field: 'oauth_client.auth_key', code: 'invalid_value', message: 'is not an oauth2 auth' }] });
    const { auth_key, client_id, client_secret } = change.oauth_client;
    next.oauth_clients[auth_key] = client_secret ? { client_id, client_secret } : { client_id };
  }
  await scope.pool.query(
    `INSERT INTO integration_settings (org_id, integration_package_id, personal_connections_disabled, default_connection_id, enforce_default, oauth_clients)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (org_id, integration_package_id) DO UPDATE SET personal_connections_disabled = EXCLUDED.personal_connections_disabled,
       default_connection_id = EXCLUDED.default_connection_id, enforce_default = EXCLUDED.enforce_default, oauth_clients = EXCLUDED.oauth_clients, updated_at = now()`,
    [scope.orgId, integrationId, next.personal_connections_disabled, next.default_connection_id, next.enforce_default,
      Object.keys(next.oauth_clients).length ? secrets.seal(JSON.stringify(next.oauth_clients)) : null],
  );
  return toSettingsWire(integrationId, next);
}

/** A member's connection may be shared while its owner still belongs to the space. */
async function shareable(scope: SpaceScope, row: ConnectionRow): Promise<void> {
  if (row.owner_end_user_id) throw problem('end_user_connection_not_shareable', { detail: 'An end-user\'s connection cannot be shared with the organization.' });
  const { rows } = await scope.pool.query(
    `SELECT 1 FROM spaces s
       LEFT JOIN space_members sm ON sm.space_id = s.id AND sm.user_id = $3
       LEFT JOIN org_members om ON om.org_id = s.org_id AND om.user_id = $3
      WHERE s.org_id = $1 AND s.id = $2 AND (sm.user_id IS NOT NULL OR om.role IN ('owner', 'admin') OR s.owner_user_id = $3)`,
    [scope.orgId, scope.spaceId, row.owner_user_id],
  );
  if (!rows[0]) throw problem('connection_owner_without_access', { detail: `The owner of connection ${row.id} no longer has access to this space.` });
}

/** Shares (or stops sharing) the actor's own connection with the organization. */
export async function setShared(scope: SpaceScope, row: ConnectionRow, shared: boolean): Promise<void> {
  if (shared) await shareable(scope, row);
  await scope.pool.query('UPDATE integration_connections SET shared_with_org = $3, updated_at = now() WHERE org_id = $1 AND id = $2', [scope.orgId, row.id, shared]);
}

/** Whether a connection is pinned to an agent or named as an organization default. */
export async function pinnedOrDefault(q: Queryable, orgId: string, id: string): Promise<boolean> {
  const { rows } = await q.query(
    `SELECT 1 FROM integration_connection_pins WHERE org_id = $1 AND connection_id = $2
     UNION ALL SELECT 1 FROM integration_settings WHERE org_id = $1 AND default_connection_id = $2 LIMIT 1`,
    [orgId, id],
  );
  return rows.length > 0;
}

export async function deleteConnection(scope: SpaceScope, id: string): Promise<void> {
  await inTransaction(scope.pool, async (tx) => {
    const row = await ownConnection(scope, id, tx, true);
    if (await pinnedOrDefault(tx, scope.orgId, row.id)) {
      throw problem('connection_pinned', { detail: `Connection ${row.id} is pinned to agents or is an organization default; unpin it first.` });
    }
    // the schedules whose runs used it would fire without it: disabled, with a reason their creators read
    await disableSchedulesUsingConnection(tx, scope.orgId, row.id, `the connection ${row.label} they used was deleted`);
    await tx.query('DELETE FROM integration_connections WHERE org_id = $1 AND id = $2', [scope.orgId, row.id]);
  });
}

/** The integration version an agent in the space resolves for `integrationId`, per its declared range. */
async function agentIntegrationManifest(scope: SpaceScope, agentId: string, integrationId: string): Promise<IntegrationManifest | null> {
  const agent = await findPackage(scope.pool, scope.orgId, scope.spaceId, agentId);
  if (!agent || agent.type !== 'agent' || !(agent.homeSpaceId === scope.spaceId || agent.placedActive !== null)) {
    throw problem('agent_not_found', { detail: `No agent ${agentId} is reachable in this space.` });
  }
  const versions = await listVersions(scope.pool, scope.orgId, agentId);
  if (!versions.length) throw problem('no_published_version', { detail: `${agentId} has no published version.` });
  const chosen = resolveStored(agentId, versions, agent.distTags, 'latest');
  const manifest = (await versionManifest(scope.pool, scope.orgId, agentId, chosen.version)) as AgentManifest;
  const range = manifest.dependencies?.integrations?.[integrationId];
  if (!range) return null;
  const integration = await findPackage(scope.pool, scope.orgId, scope.spaceId, integrationId);
  if (!integration) return null;
  const picked = resolveStored(integrationId, await listVersions(scope.pool, scope.orgId, integrationId), integration.distTags, range);
  return (await versionManifest(scope.pool, scope.orgId, integrationId, picked.version)) as IntegrationManifest;
}

/**
 * Pins the connection to exactly these agents of the space (agents:configure). An agent that does
 * not use the integration is 400; one whose pinned integration version lacks the connection's
 * auth is 409 integration_auth_undeclared.
 */
export async function setPins(scope: PackageScope, id: string, agents: string[]): Promise<string[]> {
  const row = await visibleConnection(scope, id);
  for (const agentId of agents) {
    const manifest = await agentIntegrationManifest(scope, agentId, row.integration_package_id);
    if (!manifest) {
      throw problem('validation_failed', { detail: `${agentId} does not use ${row.integration_package_id}.`, errors: [{ field: 'agents', code: 'invalid_value', message: `${agentId} does not use ${row.integration_package_id}` }] });
    }
    if (!manifest.auths?.[row.auth_key]) {
      throw problem('integration_auth_undeclared', { detail: `The version of ${row.integration_package_id} that ${agentId} uses declares no auth "${row.auth_key}".` });
    }
  }
  await inTransaction(scope.pool, async (tx) => {
    await tx.query('DELETE FROM integration_connection_pins WHERE org_id = $1 AND space_id = $2 AND connection_id = $3', [scope.orgId, scope.spaceId, row.id]);
    for (const agentId of agents) {
      await tx.query(
        `INSERT INTO integration_connection_pins (org_id, space_id, agent_id, integration_package_id, connection_id) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (org_id, space_id, agent_id, integration_package_id) DO UPDATE SET connection_id = EXCLUDED.connection_id, created_at = now()`,
        [scope.orgId, scope.spaceId, agentId, row.integration_package_id, row.id],
      );
    }
  });
  return agents;
}
