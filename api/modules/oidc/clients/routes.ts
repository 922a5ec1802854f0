// /api/oauth/clients and its siblings (spec: Authentication and clients; OIDC module scopes).
// Organization routes: authority follows each client's level (services/oauth-clients/clients.ts),
// so no route declares a permission; a space-level client is bound to the X-Space-Id space.
import { z } from 'zod';
import { orgScopeOf } from '../../../../db/tenant.ts';
import type { Request } from '../../../http.ts';
import { CursorQuery, cursorList, cursorPage } from '../../../lists.ts';
import { created, noContent, ok, route, type RouteDef } from '../../../route.ts';
import { CLIENT_LIMITS, GRANT_TYPES } from '../../../services/oauth-clients/client-metadata.ts';
import * as clients from '../../../services/oauth-clients/clients.ts';

const OAuthClient = z.object({
  id: z.string().describe('the client_id (oac_...)'),
  object: z.literal('oauth_client'),
  level: z.enum(['org', 'space']),
  spaceId: z.string().optional().describe('space-level clients: the space they are bound to'),
  name: z.string(),
  redirect_uris: z.array(z.string()),
  post_logout_redirect_uris: z.array(z.string()),
  grant_types: z.array(z.string()),
  token_endpoint_auth_method: z.enum(['none', 'client_secret_basic', 'client_secret_post']),
  scopes: z.array(z.string()),
  allowSignup: z.boolean().describe('space-level clients: whether a first sign-in creates the end-user'),
  createdAt: z.string(),
  updatedAt: z.string(),
}).meta({ id: 'OAuthClient' });
const OAuthClientWithSecret = OAuthClient.extend({
  client_secret: z.string().optional().describe('confidential clients: the secret, returned only on creation and rotation'),
}).meta({ id: 'OAuthClientWithSecret' });
const OAuthClientList = z.object({ object: z.literal('list'), data: z.array(OAuthClient), hasMore: z.boolean() });

const Uri = z.string().max(CLIENT_LIMITS.maxUriLength);
const Uris = z.array(Uri).max(CLIENT_LIMITS.maxRedirectUris);
const Name = z.string().min(1).max(CLIENT_LIMITS.maxNameLength);
const GrantTypes = z.array(z.enum(GRANT_TYPES)).min(1).max(GRANT_TYPES.length * 2);
const Scopes = z.array(z.string().max(100)).min(1).max(CLIENT_LIMITS.maxScopes);

const IdParams = z.object({ id: z.string() });
const WRITE_LIMIT = { perMinute: 30 };
const ROTATE_LIMIT = { perMinute: 10 };
const READ_LIMIT = { perMinute: 300 };
const TAG = 'OAuth clients';

function spaceHeaderOf(req: Request): string | undefined {
  const v = req.headers['x-space-id'];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

export function clientRoutes(): RouteDef<any, any, any>[] {
  return [
    route({
      method: 'post', path: '/api/oauth/clients', tag: TAG,
      summary: 'Register an OAuth client for the organization or for the X-Space-Id space (a confidential client\'s secret is returned only here)',
      authority: 'resource', permission: 'oauth-clients:write', rateLimit: WRITE_LIMIT, idempotent: true, location: (b) => `/api/oauth/clients/${b.id}`,
      body: z.object({
        level: z.enum(['org', 'space']).describe('org: acts for members of the organization; space: acts for end-users of the X-Space-Id space'),
        name: Name,
        redirect_uris: Uris.optional().describe('https, or http on a loopback host; no fragment'),
        post_logout_redirect_uris: Uris.optional(),
        grant_types: GrantTypes.optional().describe('default: authorization_code, refresh_token'),
        token_endpoint_auth_method: z.enum(['none', 'client_secret_basic', 'client_secret_post']).optional().describe('none registers a public client (PKCE); default client_secret_basic'),
        scopes: Scopes.describe('catalog scopes (and openid, profile, email, offline_access); space clients: the space allowlist only'),
        allowSignup: z.boolean().optional().describe('space-level clients only; default false'),
      }).strict(),
      responses: { 201: { description: 'Registered, with the secret of a confidential client', schema: OAuthClientWithSecret } },
      handler: async ({ ctx, body, req, deps }) => created(await clients.createClient(orgScopeOf(ctx, deps.database), ctx, deps.secrets, spaceHeaderOf(req), body)),
    }),
    route({
      method: 'get', path: '/api/oauth/clients', tag: TAG,
      summary: 'List the organization\'s clients and those of the X-Space-Id space that the caller may read',
      authority: 'resource', permission: 'oauth-clients:read', rateLimit: READ_LIMIT, query: CursorQuery,
      responses: { 200: { description: 'A page of clients', schema: OAuthClientList } },
      handler: async ({ ctx, query, req, deps }) => {
        const page = cursorPage(query);
        const rows = await clients.listClients(orgScopeOf(ctx, deps.database), ctx, spaceHeaderOf(req), page);
        const { body, headers } = cursorList(req, page, rows);
        return ok(body, headers);
      },
    }),
    route({
      method: 'get', path: '/api/oauth/clients/{id}', summary: 'Read an OAuth client (never its secret)', tag: TAG,
      authority: 'resource', permission: 'oauth-clients:read', rateLimit: READ_LIMIT, params: IdParams,
      responses: { 200: { description: 'The client', schema: OAuthClient } },
      handler: async ({ ctx, params, deps }) => ok(await clients.getClient(orgScopeOf(ctx, deps.database), ctx, params.id)),
    }),
    route({
      method: 'patch', path: '/api/oauth/clients/{id}', summary: 'Update an OAuth client (its level, space and authentication method do not change)', tag: TAG,
      authority: 'resource', permission: 'oauth-clients:write', rateLimit: WRITE_LIMIT, params: IdParams,
      body: z.object({
        name: Name.optional(),
        redirect_uris: Uris.optional(),
        post_logout_redirect_uris: Uris.optional(),
        grant_types: GrantTypes.optional(),
        scopes: Scopes.optional(),
        allowSignup: z.boolean().optional(),
      }).strict(),
      responses: { 200: { description: 'The updated client', schema: OAuthClient } },
      handler: async ({ ctx, params, body, deps }) => ok(await clients.updateClient(orgScopeOf(ctx, deps.database), ctx, params.id, body)),
    }),
    route({
      method: 'delete', path: '/api/oauth/clients/{id}', summary: 'Delete an OAuth client and every grant and token issued to it', tag: TAG,
      authority: 'resource', permission: 'oauth-clients:delete', rateLimit: WRITE_LIMIT, params: IdParams,
      responses: { 204: { description: 'Deleted' } },
      handler: async ({ ctx, params, deps }) => {
        await clients.deleteClient(orgScopeOf(ctx, deps.database), ctx, params.id);
        return noContent();
      },
    }),
    route({
      method: 'post', path: '/api/oauth/clients/{id}/rotate-secret', summary: 'Replace a confidential client\'s secret; the old one stops working at once', tag: TAG,
      authority: 'resource', permission: 'oauth-clients:write', rateLimit: ROTATE_LIMIT, params: IdParams,
      responses: { 200: { description: 'The client with its new secret', schema: OAuthClientWithSecret } },
      handler: async ({ ctx, params, deps }) => ok(await clients.rotateClientSecret(orgScopeOf(ctx, deps.database), ctx, deps.secrets, params.id)),
    }),
  ];
}
