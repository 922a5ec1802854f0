// Launching a run: check the agent, its input and the model, admit the run atomically, insert it
// as pending and hand it to the workflow engine. Nothing here waits for a sandbox.
import { activeTraceparent, setSpanTenant, withSpan } from '../../../lib/tracing/index.ts';
import type { AgentManifest, IntegrationManifest } from '../../../lib/afps/manifest-types.ts';
import type { Config } from '../../../lib/config.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import { newId } from '../../../lib/ids.ts';
import type { Permission } from '../../../lib/permissions.ts';
import { problem } from '../../../lib/problem.ts';
import { newRunEventSecret } from '../../../lib/run-events.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { resolveRunModel } from '../../modules/core-providers/resolve-model.ts';
import { isExactVersion } from '../../../lib/afps/index.ts';
import type { PackageScope } from '../packages/access.ts';
import { resolveRunnableAgent } from '../packages/dependencies.ts';
import { resolveDraftAgent, type DraftSnapshot } from '../packages/draft-runs.ts';
import { admitRun, type NewRunRow } from './admission.ts';
import { metrics } from '../../../lib/metrics/index.ts';
import { getRunRow, type RunRow } from './records.ts';
import { checkLaunchModelSettings, launchSettingsOf, runWireWithSettings, type LaunchModelSettings, type RunModelSettings, type RunWithSettings } from './model-settings.ts';
import { schemaErrors, UnusableSchemaError } from './schema-check.ts';
import type { RunSubmitter } from './submitter.ts';
import { publicBaseOf, type IntegrationDeps } from '../integrations/context.ts';
import { connectionsForLaunch, recordRunConnections, type ResolvedConnection } from '../integrations/readiness.ts';
import { hasInlineFiles, linkInputFiles, resolveInputFiles } from '../files/run-files.ts';

export const DEFAULT_RUN_TIMEOUT_SECONDS = 600;
/** How long a run's event sink accepts events after launch unless extended. */
export const SINK_TTL_SECONDS = 2 * 60 * 60;

export interface LaunchContext {
  config: Config;
  secrets: SecretBox;
  permissions: ReadonlySet<Permission>;
  submitter: RunSubmitter | null;
  scheduleId?: string;
  /** the schedule tick launching the run (ISO); with scheduleId, at most one run per tick */
  scheduleFireAt?: string;
  /** the caller as package services judge it: needed to run a draft (write authority on it) */
  packageScope?: () => PackageScope;
  /** egress and public address for the integration checks; derived from config when absent */
  integrations?: IntegrationDeps;
}

export function integrationDeps(ctx: LaunchContext): IntegrationDeps {
  return ctx.integrations ?? { secrets: ctx.secrets, egress: { allowInternalHosts: ctx.config.EGRESS_ALLOW_INTERNAL_HOSTS }, publicBase: publicBaseOf(ctx) };
}

export interface AgentLaunchBody {
  input?: Record<string, unknown>;
  rerun_from?: string;
  version?: string;
  /** draft or published (default); any other value is invalid_source */
  source?: string;
  model_id?: string;
  model_settings?: LaunchModelSettings;
}

function triggerKind(scope: SpaceScope, ctx: LaunchContext): RunRow['trigger_kind'] {
  if (ctx.scheduleId) return 'schedule';
  if (scope.actor.endUserId) return 'end_user';
  if (scope.actor.apiKeyId) return 'api_key';
  return 'member';
}

export function clampTimeout(config: Config, requested: number | undefined): number {
  return Math.min(requested ?? DEFAULT_RUN_TIMEOUT_SECONDS, config.PLATFORM_RUN_LIMITS.timeout_ceiling_seconds);
}

interface AgentConfigRow {
  locked_input: Record<string, unknown>;
  model_id: string | null;
}

export async function agentConfig(scope: SpaceScope, agentId: string): Promise<AgentConfigRow> {
  const { rows } = await scope.pool.query<AgentConfigRow>(
    'SELECT locked_input, model_id FROM agent_configs WHERE org_id = $1 AND space_id = $2 AND agent_id = $3',
    [scope.orgId, scope.spaceId, agentId],
  );
  return rows[0] ?? { locked_input: {}, model_id: null };
}

/** Applies locked fields and validates the result against the agent's input schema. */
export function checkInput(manifest: AgentManifest, given: Record<string, unknown>, locked: Record<string, unknown>): Record<string, unknown> {
  const lockedSent = Object.keys(given).filter((k) => k in locked);
  if (lockedSent.length) {
    throw problem('locked_input_field', {
      detail: `Input field${lockedSent.length > 1 ? 's' : ''} ${lockedSent.join(', ')} ${lockedSent.length > 1 ? 'are' : 'is'} locked on this agent.`,
      errors: lockedSent.map((k) => ({ field: `input.${k}`, code: 'invalid_value', message: 'This field is locked on this agent.' })),
    });
  }
  const input = { ...given, ...locked };
  const schema = manifest.input?.schema;
  if (schema) {
    let errors;
    try {
      errors = schemaErrors(schema as object, input, 'input');
    } catch (err) {
      // a version stored before patterns were checked at import: refuse, never fall back
      if (err instanceof UnusableSchemaError) throw problem('bundle_invalid', { detail: `${err.message}. Publish a version whose schema the platform accepts.` });
      throw err;
    }
    if (errors.length) {
      throw problem('invalid_input', { detail: `The input does not satisfy the agent's input schema (${errors.length} error${errors.length === 1 ? '' : 's'}).`, errors });
    }
  }
  return input;
}

export function newRunRow(scope: SpaceScope, ctx: LaunchContext, fields: {
  agentId: string; agentVersion: string; input: unknown; kind: RunRow['kind']; modelId: string | null; timeoutSeconds: number;
  modelSettings?: RunModelSettings | null;
  rerunOf?: string | null; resumedFrom?: string | null; eventSecret: string; inlineManifest?: unknown; inlinePrompt?: string | null;
  draft?: DraftSnapshot | null;
}): NewRunRow {
  const now = new Date();
  return {
    id: newId('run'),
    org_id: scope.orgId,
    space_id: scope.spaceId,
    agent_id: fields.agentId,
    agent_version: fields.agentVersion,
    status: 'pending',
    input: fields.input ?? null,
    trigger_kind: triggerKind(scope, ctx),
    actor_user_id: scope.actor.userId,
    api_key_id: scope.actor.apiKeyId ?? null,
    end_user_id: scope.actor.endUserId ?? null,
    schedule_id: ctx.scheduleId ?? null,
    schedule_fire_at: ctx.scheduleFireAt ?? null,
    rerun_of: fields.rerunOf ?? null,
    resumed_from: fields.resumedFrom ?? null,
    kind: fields.kind,
    model_id: fields.modelId,
    model_settings: fields.modelSettings ?? null,
    timeout_seconds: fields.timeoutSeconds,
    event_secret: ctx.secrets.seal(fields.eventSecret),
    sink_expires_at: new Date(now.getTime() + SINK_TTL_SECONDS * 1000).toISOString(),
    last_sequence: 0,
    prompt_tokens: 0,
    completion_tokens: 0,
    cost_usd: 0,
    inline_manifest: fields.inlineManifest ?? null,
    inline_prompt: fields.inlinePrompt ?? null,
    draft_integrity: fields.draft?.integrity ?? null,
    draft_snapshot: fields.draft ?? null,
    created_at: now.toISOString(),
  };
}

/** Inserts the admitted row and hands it to the engine; answers the run as the caller sees it. */
export async function admitAndSubmit(
  scope: SpaceScope,
  ctx: LaunchContext,
  row: NewRunRow,
  connections: ResolvedConnection[] = [],
  afterAdmit?: () => Promise<void>,
): Promise<RunWithSettings> {
  setSpanTenant({ runId: row.id as string });
  await withSpan('run launch', { 'gen_ai.agent.name': String(row.agent_id ?? row.kind ?? '') }, async () => {
    await admitRun(scope, ctx.config, row);
    metrics.runLaunched(String(row.kind));
    // recorded before the engine hears of the run: its boot reads them (connections, input files)
    if (connections.length) await recordRunConnections(scope.pool, scope.orgId, row.id, connections);
    await afterAdmit?.();
    const traceparent = activeTraceparent();
    ctx.submitter?.submit(row.id, traceparent ? { traceparent, orgId: scope.orgId, spaceId: scope.spaceId, at: Date.now() } : undefined);
  }, { tenant: { orgId: scope.orgId, spaceId: scope.spaceId, runId: row.id as string } });
  return runWireWithSettings({
    ...(row as unknown as RunRow),
    output: null,
    error: null,
    started_at: null,
    finished_at: null,
    created_at: new Date(row.created_at as string),
    sink_expires_at: new Date(row.sink_expires_at as string),
  });
}

/** A promise's outcome, held: its error is thrown only where the caller asks for the value. */
function settle<T>(p: Promise<T>): Promise<() => T> {
  return p.then((v) => () => v, (err) => () => { throw err; });
}

/**
 * Which definition a launch runs: the draft (source: draft) or a published version. invalid_source
 * for any other source; a draft cannot be combined with a version: draft_with_version for an
 * exact version, draft_with_spec for a dist-tag or range.
 */
export function launchSource(body: Pick<AgentLaunchBody, 'source' | 'version'>): 'draft' | 'published' {
  const source = body.source ?? 'published';
  if (source !== 'draft' && source !== 'published') {
    throw problem('invalid_source', {
      detail: `source must be draft or published, not ${JSON.stringify(source)}.`,
      errors: [{ field: 'source', code: 'invalid_value', message: 'must be draft or published' }],
    });
  }
  if (source === 'draft' && body.version !== undefined) {
    const exact = isExactVersion(body.version);
    throw problem(exact ? 'draft_with_version' : 'draft_with_spec', {
      detail: `source: draft runs the draft as it is now; it cannot be combined with the ${exact ? 'version' : 'version spec'} ${JSON.stringify(body.version)}. Omit one of them.`,
      errors: [{ field: 'version', code: 'invalid_value', message: 'cannot be combined with source: draft' }],
    });
  }
  return source;
}

/** The agent a launch runs: its draft (snapshot included) or the published version asked for. */
async function launchedAgent(scope: SpaceScope, ctx: LaunchContext, packageId: string, body: AgentLaunchBody) {
  if (launchSource(body) === 'published') return { ...(await resolveRunnableAgent(scope, packageId, body.version)), snapshot: null };
  if (!ctx.packageScope) throw new Error('a draft launch needs the package scope of the caller');
  return resolveDraftAgent(ctx.packageScope(), packageId);
}

export async function launchAgentRun(scope: SpaceScope, ctx: LaunchContext, packageId: string, body: AgentLaunchBody): Promise<RunWithSettings> {
  launchSource(body);
  // The model the body names (else the organization's default) is looked up with the agent and its
  // configuration, in one round trip's wait; only an agent configured with another model costs a
  // second lookup. Errors still come in the order of the checks below.
  const [agent, config, namedModel] = await Promise.all([
    launchedAgent(scope, ctx, packageId, body),
    agentConfig(scope, packageId),
    settle(resolveRunModel(scope, ctx.secrets, body.model_id ?? null)),
  ]);
  const prompt = agent.files.get('prompt.md');
  if (!prompt || prompt.toString('utf8').trim() === '') throw problem('empty_prompt', { detail: `The prompt of ${packageId}@${agent.version} is empty.` });

  let given = body.input;
  let rerunOf: string | null = null;
  let previous: RunRow | null = null;
  if (body.rerun_from) {
    previous = await getRunRow(scope, ctx.permissions, body.rerun_from);
    if (previous.agent_id !== packageId) {
      throw problem('rerun_agent_mismatch', { detail: `Run ${previous.id} is a run of ${previous.agent_id}, not ${packageId}.` });
    }
    if (given === undefined) {
      given = (previous.input ?? {}) as Record<string, unknown>;
      // inline data: files were never stored: the input cannot be replayed without them
      if (hasInlineFiles(agent.manifest.input?.schema, given)) {
        throw problem('rerun_inline_input_unavailable', { detail: `Run ${previous.id} took an input file inline as a data: URI; send the input again.` });
      }
    }
    rerunOf = previous.id;
  }
  const input = checkInput(agent.manifest, given ?? {}, config.locked_input);
  const inputFiles = await resolveInputFiles(scope, ctx.config, agent.manifest.input?.schema, input);
  // a rerun runs on the original's model with its settings unless the body says otherwise: one that
  // failed on a model is not answered by another model (the original's model gone: model_not_configured)
  const modelId = body.model_id ?? previous?.model_id ?? config.model_id;
  const model = body.model_id != null || modelId == null ? namedModel() : await resolveRunModel(scope, ctx.secrets, modelId);
  const modelSettings = checkLaunchModelSettings(model, body.model_settings ?? launchSettingsOf(previous?.model_settings));
  const connections = await connectionsForLaunch(scope, integrationDeps(ctx), ctx.config, {
    packageId, manifest: agent.manifest, integrations: agent.integrations.map((i) => ({ id: i.id, version: i.version, manifest: i.manifest as IntegrationManifest })),
  });
  const row = newRunRow(scope, ctx, {
    agentId: packageId,
    agentVersion: agent.version,
    input,
    kind: 'agent',
    modelId: model.modelId,
    modelSettings,
    timeoutSeconds: clampTimeout(ctx.config, agent.manifest.timeout),
    rerunOf,
    eventSecret: newRunEventSecret(),
    draft: agent.snapshot,
  });
  return admitAndSubmit(scope, ctx, row, connections, () => linkInputFiles(scope.pool, scope, row.id, inputFiles));
}
