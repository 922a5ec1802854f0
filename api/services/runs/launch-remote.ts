// Remote runs: a run of an agent of this platform executed elsewhere, which reports through the
// same signed event sink. The sink's address and secret are answered once, at creation. The
// agent's integrations resolve their connections as an agent run's do (the same 409
// missing_integration_connection); the run records them, and its runner reads each one's credential
// through the run's connection routes, signed with the sink's secret.
import { newRunEventSecret } from '../../../lib/run-events.ts';
import type { IntegrationManifest } from '../../../lib/afps/manifest-types.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { resolveRunnableAgent } from '../packages/dependencies.ts';
import { readyConnections } from '../integrations/readiness.ts';
import { admitAndSubmit, checkInput, clampTimeout, integrationDeps, newRunRow, type LaunchContext } from './launch.ts';
import type { RunWire } from './records.ts';

export interface RemoteRunBody {
  packageId: string;
  version?: string;
  input?: Record<string, unknown>;
  timeout_seconds?: number;
}

/** A connection the run bound to an integration, as its runner asks for it. */
export interface RemoteRunConnection {
  integration_package_id: string;
  integration_version: string;
  /** null with connection_id: the integration declares no auths and is used without a connection */
  auth_key: string | null;
  connection_id: string | null;
}

export interface RemoteRunSink {
  events_url: string;
  secret: string;
  expiresAt: string;
  /** GET {connections_url}/{connection_id}?integration=<id> (signed): a bound connection's credential */
  connections_url: string;
  connections: RemoteRunConnection[];
}

export async function launchRemoteRun(scope: SpaceScope, ctx: LaunchContext, body: RemoteRunBody, publicBaseUrl: string): Promise<RunWire & { sink: RemoteRunSink }> {
  const agent = await resolveRunnableAgent(scope, body.packageId, body.version);
  const input = checkInput(agent.manifest, body.input ?? {}, {});
  // the runner elsewhere starts what it runs: this platform's backend decides nothing about local servers
  const connections = await readyConnections(scope, integrationDeps(ctx), {
    packageId: body.packageId, manifest: agent.manifest,
    integrations: agent.integrations.map((i) => ({ id: i.id, version: i.version, manifest: i.manifest as IntegrationManifest })),
  });
  const secret = newRunEventSecret();
  const row = newRunRow(scope, ctx, {
    agentId: body.packageId,
    agentVersion: agent.version,
    input,
    kind: 'remote',
    modelId: null,
    timeoutSeconds: clampTimeout(ctx.config, body.timeout_seconds ?? agent.manifest.timeout),
    eventSecret: secret,
  });
  const run = await admitAndSubmit(scope, ctx, row, connections);
  const base = `${publicBaseUrl}/internal/runs/${run.id}`;
  return {
    ...run,
    sink: {
      events_url: `${base}/events`, secret, expiresAt: row.sink_expires_at as string,
      connections_url: `${base}/connections`,
      connections: connections.map((c) => ({ integration_package_id: c.packageId, integration_version: c.version, auth_key: c.authKey, connection_id: c.connectionId })),
    },
  };
}
