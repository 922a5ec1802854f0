// Outbound HTTP proxies of the organization (organization-level; X-Org-Id only with a session).
// Credentials go in, never out.
import { orgScopeOf } from '../../../db/tenant.ts';
import type { AppDeps } from '../../deps.ts';
import { created, noContent, ok, route } from '../../route.ts';
import { providersDepsOf } from './module-deps.ts';
import * as proxies from './proxies.ts';
import { IdParams, listOf, ProxyCreateBody, ProxyPatchBody, ProxyRecord, ProxyTestBody, ProxyTestResult } from './wire.ts';

const TAG = 'Proxies';

export function proxyRoutes(deps: AppDeps) {
  const pdeps = providersDepsOf(deps);
  return [
    route({
      method: 'post', path: '/api/proxies', summary: 'Add an outbound HTTP proxy', tag: TAG, tenant: 'org',
      location: (b) => `/api/proxies/${b.id}`,
      permission: 'proxies:write', body: ProxyCreateBody,
      responses: { 201: { description: 'The proxy, without its credentials', schema: ProxyRecord } },
      handler: async ({ ctx, body }) => created(await proxies.createProxy(orgScopeOf(ctx, deps.database), pdeps, body)),
    }),
    route({
      method: 'get', path: '/api/proxies', summary: 'List the organization\'s proxies (the default flagged)', tag: TAG, tenant: 'org',
      permission: 'proxies:read',
      responses: { 200: { description: 'Every proxy of the organization', schema: listOf(ProxyRecord) } },
      handler: async ({ ctx }) => ok({ object: 'list', data: await proxies.listProxies(orgScopeOf(ctx, deps.database)), hasMore: false }),
    }),
    route({
      method: 'get', path: '/api/proxies/{id}', summary: 'Read a proxy', tag: TAG, tenant: 'org',
      permission: 'proxies:read', params: IdParams,
      responses: { 200: { description: 'The proxy, without its credentials', schema: ProxyRecord } },
      handler: async ({ ctx, params }) => ok(await proxies.getProxy(orgScopeOf(ctx, deps.database), params.id)),
    }),
    route({
      method: 'patch', path: '/api/proxies/{id}', summary: 'Rename or move a proxy, replace its credentials, make it the default', tag: TAG, tenant: 'org',
      permission: 'proxies:write', params: IdParams, body: ProxyPatchBody,
      responses: { 200: { description: 'The updated proxy', schema: ProxyRecord } },
      handler: async ({ ctx, params, body }) => ok(await proxies.updateProxy(orgScopeOf(ctx, deps.database), pdeps, params.id, body)),
    }),
    route({
      method: 'delete', path: '/api/proxies/{id}', summary: 'Delete a proxy (model traffic then goes direct if it was the default)', tag: TAG, tenant: 'org',
      permission: 'proxies:delete', params: IdParams,
      responses: { 204: { description: 'Deleted' } },
      handler: async ({ ctx, params }) => {
        await proxies.deleteProxy(orgScopeOf(ctx, deps.database), params.id);
        return noContent();
      },
    }),
    route({
      method: 'post', path: '/api/proxies/{id}/test', summary: 'Fetch a target once through the proxy', tag: TAG, tenant: 'org',
      permission: 'proxies:write', rateLimit: { perMinute: 5 }, params: IdParams, body: ProxyTestBody,
      responses: { 200: { description: 'The tunnel worked; status is the target\'s answer', schema: ProxyTestResult } },
      handler: async ({ ctx, params, body }) => ok(await proxies.testProxy(orgScopeOf(ctx, deps.database), pdeps, params.id, body.target_url)),
    }),
  ];
}
