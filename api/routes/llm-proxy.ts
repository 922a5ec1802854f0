// The LLM proxy for runs executed elsewhere (remote runners): an OpenAI-compatible endpoint that
// calls the run's model with the organization's provider key, which the runner never holds. Every
// call names its run (X-Run-Id): its usage lands in that run's cost ledger, and the run's and the
// organization's budgets are checked before the provider is called.
import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import { budgetPeriod, orgOverBudget, readOrgBudget, runOverBudget, type BudgetLimits } from '../../db/budgets.ts';
import { finalizeRun } from '../../db/run-finalization.ts';
import { spaceScopeOf } from '../../db/tenant.ts';
import { EgressRefusal, guardedRequest } from '../../lib/egress.ts';
import { readBody } from '../../lib/outbound-http.ts';
import { problem } from '../../lib/problem.ts';
import { readRawBody } from '../middleware/body.ts';
import { resolveRunModel } from '../modules/core-providers/resolve-model.ts';
import { proxyFailureProblem } from '../modules/core-providers/proxies.ts';
import { checkModelSettings, layeredSettings } from '../modules/core-providers/model-settings.ts';
import type { RunModel } from '../modules/core-providers/resolve-model.ts';
import { ProxyFailure } from '../../lib/proxy-tunnel.ts';
import type { AppDeps } from '../deps.ts';
import type { Response } from '../http.ts';
import { handled, route, type Reply } from '../route.ts';
import { relayEventStream } from '../../lib/event-stream-relay.ts';

const TAG = 'LLM proxy';
const RUN_ID_HEADER = [{ name: 'X-Run-Id', required: true, description: 'The run the call is made for: its model is used and its cost ledger records the usage.' }];
const CompletionBody = z.record(z.string(), z.unknown()).describe('An OpenAI chat completion request; model is the run\'s, whatever it names');
const Completion = z.record(z.string(), z.unknown()).describe('The provider\'s chat completion (or, with stream: true, its event stream)');
const ModelList = z.object({
  object: z.literal('list'),
  data: z.array(z.object({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() })),
});

interface OpenRun {
  id: string;
  org_id: string;
  space_id: string;
  model_id: string | null;
  /** the run's own model settings (launch model_settings), the defaults before the model's */
  model_settings: { temperature?: number | null; reasoning_effort?: string | null } | null;
  prompt_tokens: string;
  completion_tokens: string;
  cost_usd: number;
}

/** The open run X-Run-Id names in the caller's space, or usage_context_required. */
async function usageContext(deps: AppDeps, header: string | string[] | undefined, orgId: string, spaceId: string): Promise<OpenRun> {
  const runId = typeof header === 'string' ? header.trim() : '';
  if (!/^run_[A-Za-z0-9_-]{1,100}$/.test(runId)) {
    throw problem('usage_context_required', { detail: 'Platform model calls need X-Run-Id naming a run of this space.' });
  }
  const { rows } = await deps.database.pool.query<OpenRun>(
    `SELECT id, org_id, space_id, model_id, model_settings, prompt_tokens, completion_tokens, cost_usd FROM runs
      WHERE id = $1 AND org_id = $2 AND space_id = $3 AND status IN ('pending', 'running')`,
    [runId, orgId, spaceId],
  );
  if (!rows[0]) throw problem('usage_context_required', { detail: 'X-Run-Id names no open run of this space.' });
  return rows[0];
}

function usageOf(value: unknown): { prompt: number; completion: number; cost: number } | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const u = value as Record<string, unknown>;
  const prompt = Math.max(0, Math.trunc(Number(u.prompt_tokens) || 0));
  const completion = Math.max(0, Math.trunc(Number(u.completion_tokens) || 0));
  return { prompt, completion, cost: typeof u.cost === 'number' && Number.isFinite(u.cost) ? u.cost : 0 };
}

/**
 * The call's temperature and reasoning effort: what the request sets, else the run's own settings,
 * else the model's defaults; checked against what the model accepts (400 reasoning_unsupported,
 * reasoning_level_unsupported, temperature_unsupported, temperature_with_reasoning_unsupported).
 */
function applyModelSettings(body: Record<string, unknown>, run: OpenRun, model: RunModel): void {
  const given = { temperature: body.temperature, reasoningEffort: body.reasoning_effort };
  if (given.temperature != null && typeof given.temperature !== 'number') throw problem('invalid_request', { detail: 'temperature must be a number.' });
  if (given.reasoningEffort != null && typeof given.reasoningEffort !== 'string') throw problem('invalid_request', { detail: 'reasoning_effort must be a string.' });
  const { temperature, reasoningEffort } = layeredSettings(
    given as { temperature?: number | null; reasoningEffort?: string | null },
    { temperature: run.model_settings?.temperature, reasoningEffort: run.model_settings?.reasoning_effort },
    model,
  );
  checkModelSettings({ supportsTemperature: model.supportsTemperature, reasoningLevels: model.reasoningLevels }, { temperature, reasoningEffort });
  if (temperature != null) body.temperature = temperature;
  if (reasoningEffort != null) body.reasoning_effort = reasoningEffort;
}

async function chatCompletion(deps: AppDeps, run: OpenRun, scope: ReturnType<typeof spaceScopeOf>, raw: Buffer, res: Response): Promise<Reply> {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw problem('invalid_request', { detail: 'The body is not JSON.' });
  }
  if (!body || typeof body !== 'object' || Array.isArray(body) || !Array.isArray(body.messages)) {
    throw problem('invalid_request', { detail: 'The body must be a chat completion request with messages.' });
  }

  const budget = await readOrgBudget(deps.database.pool, run.org_id);
  if (runOverBudget(budget.limits, Number(run.prompt_tokens) + Number(run.completion_tokens), run.cost_usd)) {
    await endOverBudget(deps, run, budget.limits);
    throw problem('run_budget_exceeded', { detail: `The run ${run.id} used up its model budget and has ended.` });
  }
  if (orgOverBudget(budget)) {
    throw problem('org_budget_exceeded', { detail: `The organization used up its monthly model budget; it resets at ${budgetPeriod().resetsAt.toISOString()}.` });
  }

  const model = await resolveRunModel(scope, deps.secrets, run.model_id);
  body.model = model.model;
  applyModelSettings(body, run, model);
  const streaming = body.stream === true;
  if (streaming) body.stream_options = { ...((body.stream_options as object | undefined) ?? {}), include_usage: true };

  const abort = new AbortController();
  res.on('close', () => abort.abort());
  let upstream: IncomingMessage;
  try {
    upstream = await guardedRequest(`${model.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: streaming ? 'text/event-stream' : 'application/json', authorization: `Bearer ${model.apiKey}` },
      body: JSON.stringify(body),
      signal: abort.signal,
      timeoutMs: 600_000,
      // the organization's default proxy, when it has one (api/modules/core-providers/proxies.ts)
      proxy: model.proxy,
    }, { allowInternalHosts: deps.config.EGRESS_ALLOW_INTERNAL_HOSTS, platformEndpoints: deps.platformEndpoints });
  } catch (err) {
    if (err instanceof ProxyFailure) throw proxyFailureProblem(err);
    if (err instanceof EgressRefusal) {
      throw problem(err.kind === 'unresolvable' ? 'upstream_unresolvable' : 'blocked_target', { detail: `The model provider: ${err.message}` });
    }
    if (/timed out/i.test((err as Error).message)) throw problem('upstream_timeout', { detail: 'The model provider did not answer in time.' });
    throw problem('upstream_unreachable', { detail: 'The model provider could not be reached.' });
  }

  const status = upstream.statusCode ?? 502;
  const contentType = upstream.headers['content-type'] ?? '';
  let usage: unknown;
  let text: string | undefined;
  if (status >= 200 && status < 300 && contentType.includes('text/event-stream')) {
    usage = await relayEventStream(upstream, res, 'the caller went away');
  } else {
    // the provider's own answer, errors included: an OpenAI client reads them as it would the provider's
    text = (await readBody(upstream)).toString('utf8');
    res.writeHead(status, { 'content-type': contentType || 'application/json', 'content-length': Buffer.byteLength(text) });
    if (status >= 200 && status < 300) {
      try {
        usage = JSON.parse(text)?.usage;
      } catch {
        usage = undefined;
      }
    }
  }
  const used = usageOf(usage);
  if (used) {
    const { rows } = await deps.database.pool.query<{ prompt_tokens: string; completion_tokens: string; cost_usd: number }>(
      'SELECT * FROM record_proxy_usage($1, $2, $3, $4, $5)',
      [run.id, model.model, used.prompt, used.completion, used.cost],
    );
    deps.runReads?.changed(run.space_id);
    const total = rows[0];
    // the call that crossed the run's budget was answered; the run ends with it
    if (total && runOverBudget(budget.limits, Number(total.prompt_tokens) + Number(total.completion_tokens), Number(total.cost_usd))) {
      await endOverBudget(deps, run, budget.limits);
    }
  }
  // ended after the ledger is written: a caller that reads the run next sees this call in it
  res.end(text);
  return handled();
}

/** Fails the run run_budget_exceeded (once) and tells its workflow to tear down. */
async function endOverBudget(deps: AppDeps, run: OpenRun, limits: BudgetLimits): Promise<void> {
  const message = `The run used up its model budget (${describeLimits(limits)}).`;
  const { finalized } = await finalizeRun(deps.database.pool, run.id, { status: 'failed', error: { code: 'run_budget_exceeded', message } });
  if (!finalized) return;
  deps.runReads?.changed(run.space_id);
  await deps.runs?.cancel(run.id, 'run_budget_exceeded').catch(() => {});
}

function describeLimits(limits: BudgetLimits): string {
  const parts = [];
  if (limits.run_max_tokens !== null) parts.push(`${limits.run_max_tokens} tokens`);
  if (limits.run_max_cost_usd !== null) parts.push(`${limits.run_max_cost_usd} USD`);
  return parts.join(', ');
}

export const llmProxyRoutes = [
  route({
    method: 'post', path: '/api/llm-proxy/chat/completions', summary: 'Chat completion with the run\'s model (OpenAI-compatible)', tag: TAG,
    tenant: 'space', permission: 'llm-proxy:call', rateLimit: { perMinute: (c) => c.LLM_PROXY_LIMITS.rate_per_min },
    rawBody: true, bodyContent: { 'application/json': CompletionBody }, headers: RUN_ID_HEADER,
    responses: {
      200: { description: 'The provider\'s completion (JSON, or an event stream with stream: true)', schema: Completion },
      400: { description: 'usage_context_required, invalid_request or a model configuration problem' },
      402: { description: 'run_budget_exceeded or org_budget_exceeded' },
      413: { description: 'payload_too_large: over LLM_PROXY_LIMITS.max_request_bytes' },
      502: { description: 'blocked_target, upstream_unreachable or upstream_unresolvable' },
      504: { description: 'upstream_timeout' },
    },
    handler: async ({ ctx, req, res, deps }) => {
      const scope = spaceScopeOf(ctx, deps.database);
      const run = await usageContext(deps, req.headers['x-run-id'], scope.orgId, scope.spaceId);
      const raw = await readRawBody(req, deps.config.LLM_PROXY_LIMITS.max_request_bytes);
      return chatCompletion(deps, run, scope, raw, res);
    },
  }),
  route({
    method: 'get', path: '/api/llm-proxy/models', summary: 'The model a run calls through the proxy (OpenAI-compatible)', tag: TAG,
    tenant: 'space', permission: 'llm-proxy:call', rateLimit: { perMinute: (c) => c.LLM_PROXY_LIMITS.rate_per_min }, headers: RUN_ID_HEADER,
    responses: { 200: { description: 'The run\'s model', schema: ModelList }, 400: { description: 'usage_context_required' } },
    handler: async ({ ctx, req, deps }) => {
      const scope = spaceScopeOf(ctx, deps.database);
      const run = await usageContext(deps, req.headers['x-run-id'], scope.orgId, scope.spaceId);
      const model = await resolveRunModel(scope, deps.secrets, run.model_id);
      return { status: 200, body: { object: 'list', data: [{ id: model.model, object: 'model', created: 0, owned_by: model.provider }] } };
    },
  }),
];
