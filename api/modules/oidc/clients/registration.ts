// POST /api/auth/oauth2/register: dynamic client registration (RFC 7591), no session needed.
// Answers are OAuth's own JSON bodies, not problem documents: 201 with the client's metadata,
// 400 {error: invalid_redirect_uri | invalid_client_metadata, error_description}, and 429
// {error: temporarily_unavailable, error_description} with Retry-After once the client IP spent
// its registrations for the minute (spec: OIDC access tokens).
import { z } from 'zod';
import type { AppDeps } from '../../../deps.ts';
import type { Request, Response } from '../../../http.ts';
import { readRawBody } from '../../../middleware/body.ts';
import { route, type Reply, type RouteDef } from '../../../route.ts';
import { ClientMetadataError } from '../../../services/oauth-clients/public-client-metadata.ts';
import { registerDynamicClient } from '../../../services/oauth-clients/registration.ts';
import { OAuthError } from '../operations.ts';

export const REGISTRATION_PATH = '/api/auth/oauth2/register';
/** the largest registration body read */
export const REGISTRATION_BODY_LIMIT = 16 * 1024;
const WINDOW_MS = 60_000;

const ClientMetadata = z.object({
  redirect_uris: z.array(z.string()).optional().describe('https, or http on a loopback host; no fragment; at most 10'),
  post_logout_redirect_uris: z.array(z.string()).optional(),
  grant_types: z.array(z.string()).optional().describe('authorization_code (default), refresh_token, urn:ietf:params:oauth:grant-type:device_code'),
  response_types: z.array(z.string()).optional(),
  token_endpoint_auth_method: z.literal('none').optional().describe('only public clients are registered (PKCE)'),
  client_name: z.string().optional(),
  scope: z.string().optional().describe('space-separated; default: every scope an instance client may hold'),
  client_uri: z.string().optional(),
  logo_uri: z.string().optional(),
  tos_uri: z.string().optional(),
  policy_uri: z.string().optional(),
  software_id: z.string().optional(),
  software_version: z.string().optional(),
}).meta({ id: 'OAuthClientMetadata', description: 'RFC 7591 client metadata; other members are ignored' });
const RegisteredClient = ClientMetadata.extend({
  client_id: z.string(),
  client_id_issued_at: z.number().int(),
  client_name: z.string(),
  redirect_uris: z.array(z.string()),
  grant_types: z.array(z.string()),
  token_endpoint_auth_method: z.literal('none'),
  scope: z.string(),
}).meta({ id: 'OAuthRegisteredClient' });

const oauthError = (status: number, error: string, description: string, headers: Record<string, string> = {}): Reply => ({
  status, body: { error, error_description: description }, headers: { 'Cache-Control': 'no-store', ...headers },
});

/** Per client IP, fixed window over the shared cache; the RFC 6749 body when the window is spent. */
async function limited(deps: AppDeps, req: Request, res: Response): Promise<Reply | null> {
  const max = deps.config.OAUTH_REGISTRATIONS_PER_MINUTE;
  const { count, resetMs } = await deps.cache.increment(`rl:POST:${REGISTRATION_PATH}:ip:${req.ctx.ip}`, WINDOW_MS);
  const reset = Math.max(1, Math.ceil(resetMs / 1000));
  res.setHeader('RateLimit', `limit=${max}, remaining=${Math.max(0, max - count)}, reset=${reset}`);
  res.setHeader('RateLimit-Policy', `${max};w=${WINDOW_MS / 1000}`);
  if (count <= max) return null;
  return oauthError(429, 'temporarily_unavailable', `Too many registrations from this address; retry in ${reset} seconds.`, { 'Retry-After': String(reset) });
}

async function metadataOf(req: Request): Promise<unknown> {
  let raw: Buffer;
  try {
    raw = await readRawBody(req, REGISTRATION_BODY_LIMIT);
  } catch {
    throw new ClientMetadataError('invalid_client_metadata', `the metadata must be at most ${REGISTRATION_BODY_LIMIT} bytes`);
  }
  if (!/^application\/([a-z.+-]*\+)?json\b/i.test(req.headers['content-type'] ?? '')) {
    throw new ClientMetadataError('invalid_client_metadata', 'the metadata must be sent as application/json');
  }
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw));
  } catch {
    throw new ClientMetadataError('invalid_client_metadata', 'the metadata is not valid JSON');
  }
}

export function registrationRoutes(): RouteDef<any, any, any>[] {
  return [
    route({
      method: 'post', path: REGISTRATION_PATH, tag: 'OAuth clients', stage: 'auth', tenant: 'none',
      summary: 'Dynamic client registration (RFC 7591): registers a public client (PKCE, no secret); no session needed; limited per client IP',
      rawBody: true, bodyContent: { 'application/json': ClientMetadata },
      responses: {
        201: { description: 'Registered', schema: RegisteredClient, headers: ['RateLimit', 'RateLimit-Policy'] },
        400: { description: 'invalid_redirect_uri or invalid_client_metadata (RFC 7591)', schema: OAuthError, headers: ['RateLimit', 'RateLimit-Policy'] },
        429: { description: 'temporarily_unavailable: too many registrations from this address (RFC 6749 body)', schema: OAuthError, headers: ['RateLimit', 'RateLimit-Policy', 'Retry-After'] },
      },
      handler: async ({ deps, req, res }) => {
        const refused = await limited(deps, req, res);
        if (refused) return refused;
        try {
          const client = await registerDynamicClient(deps.database.pool, await metadataOf(req));
          return { status: 201, body: client, headers: { 'Cache-Control': 'no-store' } };
        } catch (err) {
          if (err instanceof ClientMetadataError) return oauthError(400, err.error, err.description);
          throw err;
        }
      },
    }),
  ];
}
