// Inline runs: a manifest and a prompt sent with the launch instead of a stored package, under
// INLINE_RUN_LIMITS. The run keeps them until the retention period ends (see retention.ts). The
// integrations it declares are resolved in the space and their connections chosen as for an agent run.
import { parseManifest } from '../../../lib/afps/manifest.ts';
import type { AgentManifest, IntegrationManifest } from '../../../lib/afps/manifest-types.ts';
import { isProblem, problem } from '../../../lib/problem.ts';
import { newRunEventSecret } from '../../../lib/run-events.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { resolveRunModel } from '../../modules/core-providers/resolve-model.ts';
import { resolveAgentIntegrations, resolveDeclaredSkills } from '../packages/dependencies.ts';
import { connectionsForLaunch, type ResolvedConnection } from '../integrations/readiness.ts';
import { admitAndSubmit, checkInput, clampTimeout, integrationDeps, newRunRow, type LaunchContext } from './launch.ts';
import { checkLaunchModelSettings, type LaunchModelSettings, type RunWithSettings } from './model-settings.ts';
import { linkInputFiles, resolveInputFiles } from '../files/run-files.ts';

/** upload:<id> or file:<id>: a file belongs in a file field of the input, never in the prompt. */
const FILE_URI = /\b(?:upload:upl_|file:file_)[0-9A-Za-z]+/;

export interface InlineRunBody {
  manifest: Record<string, unknown>;
  prompt: string;
  input?: Record<string, unknown>;
  model_id?: string;
  model_settings?: LaunchModelSettings;
}

/** Checks an inline run without launching it; answers the normalized manifest. */
export async function validateInlineRun(scope: SpaceScope, ctx: LaunchContext, body: InlineRunBody): Promise<{ manifest: AgentManifest; input: Record<string, unknown>; connections: ResolvedConnection[] }> {
  const limits = ctx.config.INLINE_RUN_LIMITS;
  const manifestBytes = Buffer.byteLength(JSON.stringify(body.manifest));
  if (manifestBytes > limits.manifest_bytes) {
    throw problem('invalid_inline_manifest', {
      detail: `The inline manifest is ${manifestBytes} bytes; the limit is ${limits.manifest_bytes}.`,
      errors: [{ field: 'manifest', code: 'out_of_range', message: `at most ${limits.manifest_bytes} bytes` }],
    });
  }
  const promptBytes = Buffer.byteLength(body.prompt);
  if (promptBytes > limits.prompt_bytes) {
    throw problem('validation_failed', {
      detail: `The prompt is ${promptBytes} bytes; the limit is ${limits.prompt_bytes}.`,
      errors: [{ field: 'prompt', code: 'out_of_range', message: `at most ${limits.prompt_bytes} bytes` }],
    });
  }
  if (body.prompt.trim() === '') throw problem('empty_prompt', { detail: 'The inline prompt is empty.' });
  const named = FILE_URI.exec(body.prompt);
  if (named) {
    throw problem('validation_failed', {
      detail: `The prompt names the file ${named[0]}; pass files in a file field of the input instead.`,
      errors: [{ field: 'prompt', code: 'file_uri_in_prompt', message: 'A file URI in the prompt is not resolved; name the file in the input.' }],
    });
  }
  let manifest: AgentManifest;
  try {
    const parsed = parseManifest(body.manifest, { timeoutCeilingSeconds: ctx.config.PLATFORM_RUN_LIMITS.timeout_ceiling_seconds });
    if (parsed.type !== 'agent') {
      throw problem('invalid_inline_manifest', { detail: 'An inline run needs an agent manifest.', errors: [{ field: 'manifest.type', code: 'invalid_value', message: 'must be agent' }] });
    }
    manifest = parsed as AgentManifest;
  } catch (err) {
    if (isProblem(err) && err.code === 'invalid_manifest') {
      throw problem('invalid_inline_manifest', { detail: err.detail, errors: err.errors?.map((e) => ({ ...e, field: `manifest.${e.field}` })) });
    }
    throw err;
  }
  const skills = manifest.dependencies?.skills ?? {};
  if (Object.keys(skills).length > limits.max_skills) {
    throw problem('invalid_inline_manifest', {
      detail: `An inline manifest declares at most ${limits.max_skills} skills.`,
      errors: [{ field: 'manifest.dependencies.skills', code: 'out_of_range', message: `at most ${limits.max_skills} skills` }],
    });
  }
  const owner = `inline ${manifest.name}@${manifest.version}`;
  await resolveDeclaredSkills(scope, owner, skills);
  const input = checkInput(manifest, body.input ?? {}, {});
  const connections = await inlineConnections(scope, ctx, owner, manifest);
  return { manifest, input, connections };
}

/**
 * The integrations the manifest declares, resolved in the space, and the connections the run uses,
 * chosen as for an agent run by the same caller (their own, end-users' their own, the organization's
 * default or a shared one), with the same refusals; only an agent's pins do not apply.
 */
async function inlineConnections(scope: SpaceScope, ctx: LaunchContext, owner: string, manifest: AgentManifest): Promise<ResolvedConnection[]> {
  if (Object.keys(manifest.dependencies?.integrations ?? {}).length === 0) return [];
  const { integrations } = await resolveAgentIntegrations(scope, owner, manifest);
  return connectionsForLaunch(scope, integrationDeps(ctx), ctx.config, {
    packageId: manifest.name, manifest, pinsApply: false,
    integrations: integrations.map((i) => ({ id: i.id, version: i.version, manifest: i.manifest as IntegrationManifest })),
  });
}

export async function launchInlineRun(scope: SpaceScope, ctx: LaunchContext, body: InlineRunBody): Promise<RunWithSettings> {
  const { manifest, input, connections } = await validateInlineRun(scope, ctx, body);
  const inputFiles = await resolveInputFiles(scope, ctx.config, manifest.input?.schema, input);
  const model = await resolveRunModel(scope, ctx.secrets, body.model_id ?? null);
  const modelSettings = checkLaunchModelSettings(model, body.model_settings);
  const row = newRunRow(scope, ctx, {
    agentId: manifest.name,
    agentVersion: manifest.version,
    input,
    kind: 'inline',
    modelId: model.modelId,
    modelSettings,
    timeoutSeconds: clampTimeout(ctx.config, manifest.timeout),
    eventSecret: newRunEventSecret(),
    inlineManifest: manifest,
    inlinePrompt: body.prompt,
  });
  return admitAndSubmit(scope, ctx, row, connections, () => linkInputFiles(scope.pool, scope, row.id, inputFiles));
}
