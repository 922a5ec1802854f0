// Model provider credentials (organization-level; X-Org-Id only with a session). Keys go in, never out.
import { orgScopeOf } from '../../../db/tenant.ts';
import type { AppDeps } from '../../deps.ts';
import { created, noContent, ok, route } from '../../route.ts';
import * as credentials from './credentials.ts';
import * as pairings from './pairings.ts';
import { providersDepsOf } from './module-deps.ts';
import * as probes from './probes.ts';
import {
  Credential, CredentialCreateBody, PairBody, Pairing, PairingStarted, CredentialPatchBody, CredentialTestBody, CredentialTestResult, DiscoverBody, DiscoverResult, IdParams, listOf,
} from './wire.ts';

const TAG = 'Model providers';
const TEST_LIMIT = { perMinute: 5 };
const DISCOVER_LIMIT = { perMinute: 6 };
// the anonymous redemption: the token is the only credential, so guesses are limited per client IP
const PAIR_LIMIT = { perMinute: 10, by: 'ip' as const };

export function credentialRoutes(deps: AppDeps) {
  const pdeps = providersDepsOf(deps);
  return [
    route({
      method: 'post', path: '/api/model-provider-credentials', summary: 'Add a model provider credential', tag: TAG, tenant: 'org',
    location: (b) => `/api/model-provider-credentials/${b.id}`,
      permission: 'models:write', body: CredentialCreateBody,
      responses: { 201: { description: 'The credential, without its key', schema: Credential } },
      handler: async ({ ctx, body }) => created(await credentials.createCredential(orgScopeOf(ctx, deps.database), pdeps, body)),
    }),
    route({
      method: 'get', path: '/api/model-provider-credentials', summary: 'List model provider credentials', tag: TAG, tenant: 'org',
      permission: 'models:read',
      responses: { 200: { description: 'Every credential of the organization', schema: listOf(Credential) } },
      handler: async ({ ctx }) => ok({ object: 'list', data: await credentials.listCredentials(orgScopeOf(ctx, deps.database)), hasMore: false }),
    }),
    route({
      method: 'post', path: '/api/model-provider-credentials/test', summary: 'Test a credential without storing it', tag: TAG, tenant: 'org',
      permission: 'models:write', rateLimit: TEST_LIMIT, body: CredentialTestBody,
      responses: { 200: { description: 'The provider answered its model list', schema: CredentialTestResult } },
      handler: async ({ ctx, body }) => ok(await probes.testCredentialInput(orgScopeOf(ctx, deps.database), pdeps, body)),
    }),
    route({
      method: 'post', path: '/api/model-provider-credentials/discover', summary: 'List the models a credential offers', tag: TAG, tenant: 'org',
      permission: 'models:write', rateLimit: DISCOVER_LIMIT, body: DiscoverBody,
      responses: { 200: { description: 'The offered models; model_id names the model already added', schema: DiscoverResult } },
      handler: async ({ ctx, body }) => ok(await probes.discoverModels(orgScopeOf(ctx, deps.database), pdeps, body)),
    }),
    route({
      method: 'post', path: '/api/model-provider-credentials/pairings', summary: 'Start a pairing: a one-time token a tool holding the provider key redeems', tag: TAG, tenant: 'org',
      location: (b) => `/api/model-provider-credentials/pairings/${b.id}`,
      permission: 'models:write',
      responses: { 201: { description: 'The pairing and its token, shown this once', schema: PairingStarted } },
      handler: async ({ ctx }) => created(await pairings.startPairing(orgScopeOf(ctx, deps.database), deps.config.MODEL_PAIRING_TTL_SECONDS)),
    }),
    route({
      method: 'get', path: '/api/model-provider-credentials/pairings/{id}', summary: 'Read a pairing: pending, consumed (with the credential created) or expired', tag: TAG, tenant: 'org',
      permission: 'models:read', params: IdParams,
      responses: { 200: { description: 'The pairing, never its token', schema: Pairing } },
      handler: async ({ ctx, params }) => ok(await pairings.getPairing(orgScopeOf(ctx, deps.database), params.id)),
    }),
    route({
      method: 'post', path: '/api/model-provider-credentials/pair', summary: 'Redeem a pairing token: create the credential on behalf of the member who started the pairing', tag: TAG,
      stage: 'auth', tenant: 'none', rateLimit: PAIR_LIMIT, body: PairBody,
      location: (b) => `/api/model-provider-credentials/${b.id}`,
      responses: {
        201: { description: 'The credential, without its key; the token is consumed', schema: Credential },
        401: { description: 'unauthorized: the token is not valid' },
        400: { description: 'validation_failed; blocked_url: the base URL names an internal address' },
        403: { description: 'forbidden: the member who started the pairing may no longer add credentials' },
        409: { description: 'model_provider_unregistered' },
        410: { description: 'pairing_expired_or_consumed' },
      },
      handler: async ({ body }) => created(await pairings.redeemPairing(deps.database.pool, pdeps, body)),
    }),
    route({
      method: 'get', path: '/api/model-provider-credentials/{id}', summary: 'Read a model provider credential', tag: TAG, tenant: 'org',
      permission: 'models:read', params: IdParams,
      responses: { 200: { description: 'The credential, without its key', schema: Credential } },
      handler: async ({ ctx, params }) => ok(await credentials.getCredential(orgScopeOf(ctx, deps.database), params.id)),
    }),
    route({
      method: 'patch', path: '/api/model-provider-credentials/{id}', summary: 'Rename a credential, move its base URL or rotate its key', tag: TAG, tenant: 'org',
      permission: 'models:write', params: IdParams, body: CredentialPatchBody,
      responses: { 200: { description: 'The updated credential', schema: Credential } },
      handler: async ({ ctx, params, body }) => ok(await credentials.updateCredential(orgScopeOf(ctx, deps.database), pdeps, params.id, body)),
    }),
    route({
      method: 'delete', path: '/api/model-provider-credentials/{id}', summary: 'Delete a credential no model uses', tag: TAG, tenant: 'org',
      permission: 'models:delete', params: IdParams,
      responses: { 204: { description: 'Deleted' } },
      handler: async ({ ctx, params }) => {
        await credentials.deleteCredential(orgScopeOf(ctx, deps.database), params.id);
        return noContent();
      },
    }),
    route({
      method: 'post', path: '/api/model-provider-credentials/{id}/test', summary: 'Test a stored credential', tag: TAG, tenant: 'org',
      permission: 'models:write', rateLimit: TEST_LIMIT, params: IdParams,
      responses: { 200: { description: 'The provider answered its model list', schema: CredentialTestResult } },
      handler: async ({ ctx, params }) => ok(await probes.testStoredCredential(orgScopeOf(ctx, deps.database), pdeps, params.id)),
    }),
  ];
}
