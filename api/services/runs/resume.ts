// Resuming a run that failed or timed out: a new run of the same agent version, input, model,
// model settings and actor, which starts from the last checkpoint the first one recorded (its
// conversation and workspace files), so the steps already completed, and their tool calls, are
// not made again. The original run is left as it is.
import { newRunEventSecret } from '../../../lib/run-events.ts';
import { problem } from '../../../lib/problem.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { checkpointStep } from '../../../db/run-checkpoints.ts';
import { admitAndSubmit, newRunRow, type LaunchContext } from './launch.ts';
import type { RunModelSettings, RunWithSettings } from './model-settings.ts';
import { getRunRow } from './records.ts';

const RESUMABLE = ['failed', 'timeout'];

interface DefinitionRow {
  model_settings: RunModelSettings | null;
  inline_manifest: unknown;
  inline_prompt: string | null;
  draft_snapshot: unknown;
}

export async function resumeRun(scope: SpaceScope, ctx: LaunchContext, runId: string): Promise<RunWithSettings> {
  // a run the caller cannot read is not_found, as everywhere
  const previous = await getRunRow(scope, ctx.permissions, runId);
  if (previous.status === 'pending' || previous.status === 'running') {
    throw problem('run_in_progress', { detail: `Run ${runId} is ${previous.status}; only a run that ended failed or timeout can be resumed.` });
  }
  if (!RESUMABLE.includes(previous.status)) {
    throw problem('run_not_resumable', { detail: `Run ${runId} ended ${previous.status}; only a run that ended failed or timeout can be resumed.` });
  }
  if ((await checkpointStep(scope.pool, scope, runId)) === null) {
    throw problem('no_checkpoint', { detail: `Run ${runId} recorded no checkpoint: it ended before completing a step. Launch it again instead.` });
  }
  const { rows } = await scope.pool.query<DefinitionRow>(
    'SELECT model_settings, inline_manifest, inline_prompt, draft_snapshot FROM runs WHERE id = $1 AND org_id = $2 AND space_id = $3',
    [runId, scope.orgId, scope.spaceId],
  );
  const definition = rows[0];
  if (previous.kind === 'inline' && !definition.inline_manifest) {
    throw problem('run_definition_gone', { detail: `The inline definition of run ${runId} was purged.` });
  }
  // the original's actor: the resumed run acts, and is listed, as the one it continues
  const actorScope: SpaceScope = {
    ...scope,
    actor: { userId: previous.actor_user_id ?? '', apiKeyId: previous.api_key_id ?? undefined, endUserId: previous.end_user_id ?? undefined },
  };
  const row = newRunRow(actorScope, ctx, {
    agentId: previous.agent_id,
    agentVersion: previous.agent_version,
    input: previous.input,
    kind: previous.kind,
    modelId: previous.model_id,
    modelSettings: definition.model_settings,
    timeoutSeconds: previous.timeout_seconds,
    resumedFrom: previous.id,
    eventSecret: newRunEventSecret(),
    inlineManifest: definition.inline_manifest,
    inlinePrompt: definition.inline_prompt,
    draft: (definition.draft_snapshot ?? null) as Parameters<typeof newRunRow>[2]['draft'],
  });
  row.trigger_kind = previous.trigger_kind;
  row.actor_user_id = previous.actor_user_id;
  row.schedule_id = previous.schedule_id;
  // the same connections and input files as the original's launch recorded
  return admitAndSubmit(scope, ctx, row, [], async () => {
    await scope.pool.query(
      `INSERT INTO run_connections (run_id, org_id, integration_package_id, integration_version, auth_key, connection_id)
       SELECT $1, org_id, integration_package_id, integration_version, auth_key, connection_id FROM run_connections WHERE run_id = $2 AND org_id = $3`,
      [row.id, previous.id, scope.orgId],
    );
    await scope.pool.query(
      `INSERT INTO run_files (run_id, file_id, org_id, space_id, role, name)
       SELECT $1, file_id, org_id, space_id, role, name FROM run_files WHERE run_id = $2 AND org_id = $3 AND space_id = $4 AND role = 'input'`,
      [row.id, previous.id, scope.orgId, scope.spaceId],
    );
  });
}
