// What each OpenAI endpoint of the LLM proxy asks of a request: its shape, the model it calls and
// how the body is made ready for the provider. Chat completions and the Responses API call the
// run's model whatever the body names, with the call's temperature and reasoning effort, else the
// run's, else the model's (checked against what the model accepts); embeddings call the model the
// body names among the organization's models (by id or provider model name), else the run's.
import { checkModelSettings, layeredSettings } from '../../modules/core-providers/model-settings.ts';
import { resolveRunModel, type RunModel } from '../../modules/core-providers/resolve-model.ts';
import { problem } from '../../../lib/problem.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import type { ProxiedEndpoint } from './provider-call.ts';
import type { OpenRun } from './run-usage.ts';

type Body = Record<string, unknown>;

export interface EndpointRules {
  endpoint: ProxiedEndpoint;
  /** invalid_request when the body is not a request of this endpoint */
  check(body: Body): void;
  model(scope: SpaceScope, secrets: SecretBox, run: OpenRun, body: Body): Promise<RunModel>;
  /** the body as the provider gets it */
  prepare(body: Body, run: OpenRun, model: RunModel): void;
}

const runModel = (scope: SpaceScope, secrets: SecretBox, run: OpenRun) => resolveRunModel(scope, secrets, run.model_id);

/**
 * The call's temperature and reasoning effort: what it sets, else the run's own settings, else the
 * model's defaults; 400 reasoning_unsupported, reasoning_level_unsupported, temperature_unsupported,
 * temperature_with_reasoning_unsupported for what the model does not accept.
 */
function callSettings(given: { temperature: unknown; reasoningEffort: unknown }, run: OpenRun, model: RunModel): { temperature: number | null; reasoningEffort: string | null } {
  if (given.temperature != null && typeof given.temperature !== 'number') throw problem('invalid_request', { detail: 'temperature must be a number.' });
  if (given.reasoningEffort != null && typeof given.reasoningEffort !== 'string') throw problem('invalid_request', { detail: 'The reasoning effort must be a string.' });
  const settings = layeredSettings(
    given as { temperature?: number | null; reasoningEffort?: string | null },
    { temperature: run.model_settings?.temperature, reasoningEffort: run.model_settings?.reasoning_effort },
    model,
  );
  checkModelSettings({ supportsTemperature: model.supportsTemperature, reasoningLevels: model.reasoningLevels }, settings);
  return { temperature: settings.temperature ?? null, reasoningEffort: settings.reasoningEffort ?? null };
}

export const CHAT_COMPLETIONS: EndpointRules = {
  endpoint: 'chat/completions',
  check(body) {
    if (!Array.isArray(body.messages)) throw problem('invalid_request', { detail: 'The body must be a chat completion request with messages.' });
  },
  model: (scope, secrets, run) => runModel(scope, secrets, run),
  prepare(body, run, model) {
    body.model = model.model;
    const { temperature, reasoningEffort } = callSettings({ temperature: body.temperature, reasoningEffort: body.reasoning_effort }, run, model);
    if (temperature != null) body.temperature = temperature;
    if (reasoningEffort != null) body.reasoning_effort = reasoningEffort;
    // the usage of a streamed answer comes in its last chunk only when asked for
    if (body.stream === true) body.stream_options = { ...((body.stream_options as object | undefined) ?? {}), include_usage: true };
  },
};

export const RESPONSES: EndpointRules = {
  endpoint: 'responses',
  check(body) {
    if (typeof body.input !== 'string' && !Array.isArray(body.input)) throw problem('invalid_request', { detail: 'The body must be a Responses API request with input (a string or an array of items).' });
    if (body.reasoning != null && (typeof body.reasoning !== 'object' || Array.isArray(body.reasoning))) throw problem('invalid_request', { detail: 'reasoning must be an object.' });
  },
  model: (scope, secrets, run) => runModel(scope, secrets, run),
  prepare(body, run, model) {
    body.model = model.model;
    const reasoning = (body.reasoning ?? {}) as Body;
    const { temperature, reasoningEffort } = callSettings({ temperature: body.temperature, reasoningEffort: reasoning.effort }, run, model);
    if (temperature != null) body.temperature = temperature;
    if (reasoningEffort != null) body.reasoning = { ...reasoning, effort: reasoningEffort };
  },
};

/** The organization's model the body names (its id, or its provider model name), else the run's. */
async function embeddingModel(scope: SpaceScope, secrets: SecretBox, run: OpenRun, body: Body): Promise<RunModel> {
  const named = body.model;
  if (named === undefined) return runModel(scope, secrets, run);
  if (typeof named !== 'string' || named === '' || named.length > 200) throw problem('invalid_request', { detail: 'model must name one of the organization\'s models.' });
  // by id first; by provider name, the run's model's credential first, then the default, then the oldest
  const { rows } = await scope.pool.query<{ id: string }>(
    `SELECT m.id FROM models m
      WHERE m.org_id = $1 AND (m.id = $2 OR m.model = $2)
      ORDER BY (m.id = $2) DESC,
               (m.credential_id = (SELECT r.credential_id FROM models r WHERE r.org_id = $1 AND (r.id = $3 OR ($3::text IS NULL AND r.is_default)))) DESC NULLS LAST,
               m.enabled DESC, m.is_default DESC, m.created_at, m.id
      LIMIT 1`,
    [scope.orgId, named, run.model_id],
  );
  if (!rows[0]) throw problem('model_not_configured', { detail: `The organization has no model ${named}; add it (POST /api/models) to call it through the proxy.` });
  return resolveRunModel(scope, secrets, rows[0].id);
}

export const EMBEDDINGS: EndpointRules = {
  endpoint: 'embeddings',
  check(body) {
    const input = body.input;
    if (typeof input !== 'string' && !(Array.isArray(input) && input.length > 0)) {
      throw problem('invalid_request', { detail: 'The body must be an embeddings request with input (a string or a non-empty array).' });
    }
  },
  model: embeddingModel,
  prepare(body, _run, model) {
    body.model = model.model;
  },
};
