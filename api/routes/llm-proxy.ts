// The LLM proxy for runs executed elsewhere (remote runners): the OpenAI-compatible endpoints a
// client calls (chat completions, the Responses API, embeddings, the model list) served with the
// organization's provider key, which the runner never holds. Every call names its run (X-Run-Id):
// its usage lands in that run's cost ledger, and the run's and the organization's budgets are
// checked before the provider is called (api/services/llm-proxy/).
import { metrics } from '../../lib/metrics/index.ts';
import { z } from 'zod';
import { spaceScopeOf } from '../../db/tenant.ts';
import { problem } from '../../lib/problem.ts';
import { readRawBody } from '../middleware/body.ts';
import { resolveRunModel } from '../modules/core-providers/resolve-model.ts';
import type { RequestContext } from '../context.ts';
import type { AppDeps } from '../deps.ts';
import type { Request, Response } from '../http.ts';
import { handled, route, type Reply, type ResponseSpec } from '../route.ts';
import { CHAT_COMPLETIONS, EMBEDDINGS, RESPONSES, type EndpointRules } from '../services/llm-proxy/endpoints.ts';
import { callProvider, requireOffered } from '../services/llm-proxy/provider-call.ts';
import { checkBudgets, recordUsage, usageContext, usageOf } from '../services/llm-proxy/run-usage.ts';

const TAG = 'LLM proxy';
const RUN_ID_HEADER = [{ name: 'X-Run-Id', required: true, description: 'The run the call is made for: its model is used and its cost ledger records the usage.' }];
const LIMIT = { perMinute: (c: { LLM_PROXY_LIMITS: { rate_per_min: number } }) => c.LLM_PROXY_LIMITS.rate_per_min };
const ModelList = z.object({
  object: z.literal('list'),
  data: z.array(z.object({ id: z.string(), object: z.literal('model'), created: z.number().int(), owned_by: z.string() })),
});

/** The refusals every POST of the proxy may answer. */
const REFUSALS: Record<number, ResponseSpec> = {
  400: { description: 'usage_context_required, invalid_request, model_not_offered or a model configuration problem' },
  402: { description: 'run_budget_exceeded or org_budget_exceeded' },
  413: { description: 'payload_too_large: over LLM_PROXY_LIMITS.max_request_bytes' },
  502: { description: 'blocked_target, upstream_unreachable or upstream_unresolvable' },
  504: { description: 'upstream_timeout' },
};

function jsonBody(raw: Buffer): Record<string, unknown> {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw problem('invalid_request', { detail: 'The body is not JSON.' });
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw problem('invalid_request', { detail: 'The body must be a JSON object.' });
  return body as Record<string, unknown>;
}

/** One call: the run, the body, the budgets, the model (offering the endpoint), the provider, the ledger. */
async function proxied(rules: EndpointRules, deps: AppDeps, ctx: RequestContext, req: Request, res: Response): Promise<Reply> {
  const scope = spaceScopeOf(ctx, deps.database);
  const run = await usageContext(deps, req.headers['x-run-id'], scope.orgId, scope.spaceId);
  const body = jsonBody(await readRawBody(req, deps.config.LLM_PROXY_LIMITS.max_request_bytes));
  rules.check(body);
  const budget = await checkBudgets(deps, run);
  const model = await rules.model(scope, deps.secrets, run, body);
  requireOffered(model, rules.endpoint);
  rules.prepare(body, run, model);
  const answer = await callProvider(deps, model, rules.endpoint, body, res);
  const used = usageOf(answer.usage);
  if (used) {
    await recordUsage(deps, run, budget, model.model, used);
    metrics.modelUsage(model.provider, used.prompt, used.completion, used.cost);
  }
  // ended after the ledger is written: a caller that reads the run next sees this call in it
  res.end(answer.text);
  return handled();
}

function proxyRoute(rules: EndpointRules, summary: string, request: string, answer: string) {
  return route({
    method: 'post', path: `/api/llm-proxy/${rules.endpoint}`, summary, tag: TAG,
    tenant: 'space', permission: 'llm-proxy:call', rateLimit: LIMIT,
    rawBody: true, bodyContent: { 'application/json': z.record(z.string(), z.unknown()).describe(request) }, headers: RUN_ID_HEADER,
    responses: { 200: { description: answer, schema: z.record(z.string(), z.unknown()).describe(answer) }, ...REFUSALS },
    handler: ({ ctx, req, res, deps }) => proxied(rules, deps, ctx, req, res),
  });
}

export const llmProxyRoutes = [
  proxyRoute(CHAT_COMPLETIONS, 'Chat completion with the run\'s model (OpenAI-compatible)',
    'An OpenAI chat completion request; model is the run\'s, whatever it names',
    'The provider\'s completion (JSON, or an event stream with stream: true)'),
  proxyRoute(RESPONSES, 'Response (OpenAI Responses API) with the run\'s model',
    'An OpenAI Responses API request; model is the run\'s, whatever it names; temperature and reasoning.effort layered like a chat completion\'s',
    'The provider\'s response object (JSON, or its event stream with stream: true, ending with response.completed)'),
  proxyRoute(EMBEDDINGS, 'Embeddings with a model of the organization (OpenAI-compatible)',
    'An OpenAI embeddings request; model names one of the organization\'s models (its id or provider model name), default the run\'s',
    'The provider\'s embeddings list'),
  route({
    method: 'get', path: '/api/llm-proxy/models', summary: 'The model a run calls through the proxy (OpenAI-compatible)', tag: TAG,
    tenant: 'space', permission: 'llm-proxy:call', rateLimit: LIMIT, headers: RUN_ID_HEADER,
    responses: { 200: { description: 'The run\'s model', schema: ModelList }, 400: { description: 'usage_context_required' } },
    handler: async ({ ctx, req, deps }) => {
      const scope = spaceScopeOf(ctx, deps.database);
      const run = await usageContext(deps, req.headers['x-run-id'], scope.orgId, scope.spaceId);
      const model = await resolveRunModel(scope, deps.secrets, run.model_id);
      return { status: 200, body: { object: 'list', data: [{ id: model.model, object: 'model', created: 0, owned_by: model.provider }] } };
    },
  }),
];
