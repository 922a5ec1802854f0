// Model provider credentials (organization-level; X-Org-Id only with a session). Keys go in, never out.
import { orgScopeOf } from '../../../db/tenant.ts';
import type { AppDeps } from '../../deps.ts';
import { created, noContent, ok, route } from '../../route.ts';
import * as credentials from './credentials.ts';
import { providersDepsOf } from './module-deps.ts';
import * as probes from './probes.ts';
import {
  Credential, CredentialCreateBody, CredentialPatchBody, CredentialTestBody, CredentialTestResult, DiscoverBody, DiscoverResult, IdParams, listOf,
} from './wire.ts';

const TAG = 'Model providers';
const TEST_LIMIT = { perMinute: 5 };
const DISCOVER_LIMIT = { perMinute: 6 };

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
