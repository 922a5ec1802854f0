// API keys of a space. Creating one needs a session (a key cannot create a key) holding
// api-keys:create in a team space; the full key is in the creation response only.
import { z } from 'zod';
import { spaceScopeOf } from '../../db/tenant.ts';
import { problem } from '../../lib/problem.ts';
import type { RequestContext } from '../context.ts';
import type { AppDeps } from '../deps.ts';
import { created, noContent, ok, route } from '../route.ts';
import * as apiKeys from '../services/api-keys.ts';

const ApiKey = z.object({
  id: z.string(),
  name: z.string(),
  keyPrefix: z.string(),
  scopes: z.array(z.string()),
  spaceId: z.string(),
  created_by: z.string(),
  expiresAt: z.string().nullable(),
  createdAt: z.string(),
}).meta({ id: 'ApiKey' });
const CreatedApiKey = z.object({
  id: z.string(),
  key: z.string().describe('the full key; shown only in this response'),
  keyPrefix: z.string(),
  name: z.string(),
  scopes: z.array(z.string()),
  spaceId: z.string(),
  expiresAt: z.string().nullable(),
  createdAt: z.string(),
}).meta({ id: 'CreatedApiKey' });
const TAG = 'API keys';
/** keys one user may create per minute (per caller, as every route limit) */
export const API_KEY_CREATIONS_PER_MINUTE = 10;

function scopeFor(ctx: RequestContext, deps: AppDeps): apiKeys.ApiKeyScope {
  return { ...spaceScopeOf(ctx, deps.database), authCache: deps.authCache };
}

export const apiKeyRoutes = [
  route({
    method: 'post', path: '/api/api-keys', summary: 'Create an API key pinned to the space', tag: TAG,
    location: (b) => `/api/api-keys/${b.id}`,
    // the spec's table has no row for key creation; without one, minting keys would sidestep per-key limits
    tenant: 'space', permission: 'api-keys:create', sessionOnly: true, rateLimit: { perMinute: API_KEY_CREATIONS_PER_MINUTE },
    body: z.object({
      name: z.string().trim().min(1).max(200),
      scopes: z.array(z.string().max(100)).max(200).optional(),
      expiresAt: z.iso.datetime({ offset: true }).nullable().optional(),
    }).strict(),
    responses: { 201: { description: 'Created; the key is shown once', schema: CreatedApiKey } },
    handler: async ({ ctx, deps, body }) => {
      if (ctx.space?.kind === 'personal') throw problem('personal_space_takes_no_keys', { detail: 'Create keys in a team space.' });
      return created(await apiKeys.createApiKey(scopeFor(ctx, deps), ctx.permissions, body));
    },
  }),
  route({
    method: 'get', path: '/api/api-keys', summary: 'API keys of the space (without their secrets)', tag: TAG,
    tenant: 'space', permission: 'api-keys:read', sessionOnly: true,
    responses: { 200: { description: 'Keys that still work', schema: z.object({ object: z.literal('list'), data: z.array(ApiKey), hasMore: z.boolean() }) } },
    handler: async ({ ctx, deps }) => ok({ object: 'list', data: await apiKeys.listApiKeys(scopeFor(ctx, deps)), hasMore: false }),
  }),
  route({
    method: 'get', path: '/api/api-keys/available-scopes', summary: 'Scopes the caller can put on a key in this space', tag: TAG,
    tenant: 'space', permission: 'api-keys:create', sessionOnly: true,
    responses: { 200: { description: 'Grantable scopes', schema: z.object({ scopes: z.array(z.string()) }) } },
    handler: async ({ ctx }) => ok({ scopes: apiKeys.grantableScopes(ctx.permissions) }),
  }),
  route({
    method: 'delete', path: '/api/api-keys/{id}', summary: 'Revoke an API key; takes effect at once', tag: TAG,
    // a creator revokes their own keys (api-keys:create); someone else's needs api-keys:delete (the handler narrows)
    tenant: 'space', permission: { anyOf: ['api-keys:delete', 'api-keys:create'] }, sessionOnly: true, params: z.object({ id: z.string() }),
    responses: { 204: { description: 'Revoked' } },
    handler: async ({ ctx, deps, params }) => {
      await apiKeys.revokeApiKey(scopeFor(ctx, deps), ctx.permissions, params.id);
      return noContent();
    },
  }),
];
