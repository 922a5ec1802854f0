// Models of the organization (organization-level; X-Org-Id only with a session).
import { orgScopeOf } from '../../../db/tenant.ts';
import type { AppDeps } from '../../deps.ts';
import { pageLimit } from '../../lists.ts';
import { created, noContent, ok, route } from '../../route.ts';
import { providersDepsOf } from './module-deps.ts';
import * as models from './models.ts';
import { searchOpenRouterModels } from './openrouter.ts';
import * as probes from './probes.ts';
import { IdParams, listOf, Model, ModelCreateBody, ModelPatchBody, ModelTestBody, ModelTestResult, OfferedModelList, OpenRouterQuery } from './wire.ts';

const TAG = 'Models';
const TEST_LIMIT = { perMinute: 5 };

export function modelRoutes(deps: AppDeps) {
  const pdeps = providersDepsOf(deps);
  return [
    // before /api/models/{id}, which would otherwise take "openrouter" as an id
    route({
      method: 'get', path: '/api/models/openrouter', summary: 'Search OpenRouter\'s model catalog', tag: TAG, tenant: 'org',
      permission: 'models:read', rateLimit: { perMinute: 10 }, query: OpenRouterQuery,
      responses: { 200: { description: 'Matching catalog models', schema: OfferedModelList } },
      handler: async ({ ctx, query }) => {
        const call = { ...(await probes.callOptionsFor(orgScopeOf(ctx, deps.database), pdeps)), timeoutMs: deps.config.OPENROUTER_TIMEOUT_MS };
        return ok(await searchOpenRouterModels(call, { q: query.q, limit: pageLimit(query.limit) }, deps.config.OPENROUTER_BASE_URL));
      },
    }),
    route({
      method: 'post', path: '/api/models/test', summary: 'Test a model of a credential with a one-token completion', tag: TAG, tenant: 'org',
      permission: 'models:write', rateLimit: TEST_LIMIT, body: ModelTestBody,
      responses: { 200: { description: 'The provider completed', schema: ModelTestResult } },
      handler: async ({ ctx, body }) => ok(await probes.testModelInput(orgScopeOf(ctx, deps.database), pdeps, body)),
    }),
    route({
      method: 'post', path: '/api/models', summary: 'Add a model from a provider credential', tag: TAG, tenant: 'org',
    location: (b) => `/api/models/${b.id}`,
      permission: 'models:write', body: ModelCreateBody,
      responses: { 201: { description: 'The model', schema: Model } },
      handler: async ({ ctx, body }) => created(await models.createModel(orgScopeOf(ctx, deps.database), { ...body, name: body.name ?? body.model })),
    }),
    route({
      method: 'get', path: '/api/models', summary: 'List the organization\'s models (the default flagged)', tag: TAG, tenant: 'org',
      permission: 'models:read',
      responses: { 200: { description: 'Every model of the organization', schema: listOf(Model) } },
      handler: async ({ ctx }) => ok({ object: 'list', data: await models.listModels(orgScopeOf(ctx, deps.database)), hasMore: false }),
    }),
    route({
      method: 'get', path: '/api/models/{id}', summary: 'Read a model', tag: TAG, tenant: 'org',
      permission: 'models:read', params: IdParams,
      responses: { 200: { description: 'The model', schema: Model } },
      handler: async ({ ctx, params }) => ok(await models.getModel(orgScopeOf(ctx, deps.database), params.id)),
    }),
    route({
      method: 'patch', path: '/api/models/{id}', summary: 'Rename, enable, disable a model or make it the default', tag: TAG, tenant: 'org',
      permission: 'models:write', params: IdParams, body: ModelPatchBody,
      responses: { 200: { description: 'The updated model', schema: Model } },
      handler: async ({ ctx, params, body }) => ok(await models.updateModel(orgScopeOf(ctx, deps.database), params.id, body)),
    }),
    route({
      method: 'delete', path: '/api/models/{id}', summary: 'Delete a model', tag: TAG, tenant: 'org',
      permission: 'models:delete', params: IdParams,
      responses: { 204: { description: 'Deleted' } },
      handler: async ({ ctx, params }) => {
        await models.deleteModel(orgScopeOf(ctx, deps.database), params.id);
        return noContent();
      },
    }),
    route({
      method: 'post', path: '/api/models/{id}/test', summary: 'Test a model with a one-token completion', tag: TAG, tenant: 'org',
      permission: 'models:write', rateLimit: TEST_LIMIT, params: IdParams,
      responses: { 200: { description: 'The provider completed', schema: ModelTestResult } },
      handler: async ({ ctx, params }) => ok(await probes.testStoredModel(orgScopeOf(ctx, deps.database), pdeps, params.id)),
    }),
  ];
}
