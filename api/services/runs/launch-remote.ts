// Remote runs: a run of an agent of this platform executed elsewhere, which reports through the
// same signed event sink. The sink's address and secret are answered once, at creation.
import { newRunEventSecret } from '../../../lib/run-events.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { resolveRunnableAgent } from '../packages/dependencies.ts';
import { admitAndSubmit, checkInput, clampTimeout, newRunRow, type LaunchContext } from './launch.ts';
import type { RunWire } from './records.ts';

export interface RemoteRunBody {
  packageId: string;
  version?: string;
  input?: Record<string, unknown>;
  timeout_seconds?: number;
}

export async function launchRemoteRun(scope: SpaceScope, ctx: LaunchContext, body: RemoteRunBody, publicBaseUrl: string): Promise<RunWire & { sink: { events_url: string; secret: string; expiresAt: string } }> {
  const agent = await resolveRunnableAgent(scope, body.packageId, body.version);
  const input = checkInput(agent.manifest, body.input ?? {}, {});
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
  const run = await admitAndSubmit(scope, ctx, row);
  return { ...run, sink: { events_url: `${publicBaseUrl}/internal/runs/${run.id}/events`, secret, expiresAt: row.sink_expires_at as string } };
}
