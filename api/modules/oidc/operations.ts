// The OpenID provider's operations, declared for the OpenAPI document. They are served by the
// module's handler (index.ts hands them to oidc-provider), not by the route table, so these
// declarations carry no handler; METHODS below is what the handler answers 405 from.
import { z } from 'zod';
import type { DocumentedRoute } from '../../openapi.ts';
import { PATHS } from './provider.ts';

export const DISCOVERY = '/.well-known/openid-configuration';
export const AS_METADATA = '/.well-known/oauth-authorization-server';

/** The methods each provider endpoint answers; another method gets 405 with an RFC 6749 body. */
export const METHODS: Record<string, string[]> = {
  [DISCOVERY]: ['GET'],
  [AS_METADATA]: ['GET'],
  [PATHS.jwks]: ['GET'],
  [PATHS.authorization]: ['GET'],
  [PATHS.pushed_authorization_request]: ['POST'],
  [PATHS.token]: ['POST'],
  [PATHS.userinfo]: ['GET', 'POST'],
  [PATHS.introspection]: ['POST'],
  [PATHS.revocation]: ['POST'],
  [PATHS.device_authorization]: ['POST'],
  [PATHS.code_verification]: ['GET', 'POST'],
};

const TAG = 'OpenID provider';
export const OAuthError = z.object({ error: z.string(), error_description: z.string() }).meta({ id: 'OAuthError' });
const Html = (description: string) => ({ description, contentType: 'text/html' });
const oauth = (description: string) => ({ description, schema: OAuthError });

const Metadata = z.object({
  issuer: z.string(),
  authorization_endpoint: z.string(),
  token_endpoint: z.string(),
  userinfo_endpoint: z.string(),
  introspection_endpoint: z.string(),
  revocation_endpoint: z.string(),
  jwks_uri: z.string(),
  device_authorization_endpoint: z.string(),
  pushed_authorization_request_endpoint: z.string(),
  registration_endpoint: z.string(),
  scopes_supported: z.array(z.string()).describe('the OpenID scopes and every API scope a client can be registered with'),
  response_types_supported: z.array(z.string()),
  grant_types_supported: z.array(z.string()),
  code_challenge_methods_supported: z.array(z.string()),
  token_endpoint_auth_methods_supported: z.array(z.string()),
  id_token_signing_alg_values_supported: z.array(z.string()),
}).passthrough().meta({ id: 'OAuthServerMetadata', description: 'OpenID Connect Discovery 1.0 / RFC 8414 metadata; other members as the provider states them' });

const Jwks = z.object({
  keys: z.array(z.object({ kty: z.string(), crv: z.string(), x: z.string(), y: z.string(), kid: z.string(), alg: z.string().optional(), use: z.string().optional() }).passthrough()),
}).meta({ id: 'JsonWebKeySet', description: 'The public ES256 keys that sign ID and access tokens (RFC 7517)' });

const AuthorizationParams = z.object({
  client_id: z.string(),
  redirect_uri: z.string(),
  response_type: z.literal('code'),
  scope: z.string().describe('space-separated: openid, profile, email, offline_access and the API scopes the client was registered with'),
  code_challenge: z.string(),
  code_challenge_method: z.literal('S256'),
  state: z.string().optional(),
  nonce: z.string().optional(),
  prompt: z.string().optional(),
  resource: z.string().optional().describe('RFC 8707: <issuer>/api (default when an API scope is asked) or <issuer>/api/mcp/o/{orgId}'),
  request_uri: z.string().optional().describe('a pushed request (urn:ietf:params:oauth:request_uri:...)'),
});

const TokenRequest = z.object({
  grant_type: z.enum(['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code']),
  code: z.string().optional(),
  redirect_uri: z.string().optional(),
  code_verifier: z.string().optional(),
  refresh_token: z.string().optional(),
  device_code: z.string().optional(),
  resource: z.string().optional(),
  scope: z.string().optional(),
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
});
const TokenResponse = z.object({
  access_token: z.string(),
  token_type: z.string(),
  expires_in: z.number().int(),
  scope: z.string().optional(),
  refresh_token: z.string().optional().describe('when offline_access was granted'),
  id_token: z.string().optional().describe('when openid was granted'),
}).meta({ id: 'OAuthTokenResponse' });

const TokenOnly = z.object({ token: z.string(), token_type_hint: z.string().optional(), client_id: z.string().optional(), client_secret: z.string().optional() });
const Introspection = z.object({
  active: z.boolean(),
  scope: z.string().optional(),
  client_id: z.string().optional(),
  sub: z.string().optional(),
  aud: z.union([z.string(), z.array(z.string())]).optional(),
  exp: z.number().int().optional(),
  iat: z.number().int().optional(),
  iss: z.string().optional(),
  token_type: z.string().optional(),
}).passthrough().meta({ id: 'OAuthIntrospection', description: 'RFC 7662; {"active": false} for a token that is unknown, expired, revoked or not the caller\'s' });

const UserInfo = z.object({ sub: z.string(), email: z.string().optional(), name: z.string().optional() }).meta({ id: 'OidcUserInfo' });
const DeviceAuthorization = z.object({
  device_code: z.string(),
  user_code: z.string(),
  verification_uri: z.string(),
  verification_uri_complete: z.string(),
  expires_in: z.number().int(),
  interval: z.number().int().optional(),
}).meta({ id: 'OAuthDeviceAuthorization' });
const Par = z.object({ request_uri: z.string(), expires_in: z.number().int() }).meta({ id: 'OAuthPushedRequest' });
const form = (schema: z.ZodType) => ({ 'application/x-www-form-urlencoded': schema });
const clientAuth = 'A confidential client authenticates with HTTP Basic or client_secret in the body; a public client sends client_id.';

const op = (def: Omit<DocumentedRoute, 'tag' | 'stage' | 'tenant'>): DocumentedRoute => ({ tag: TAG, stage: 'auth', tenant: 'none', ...def });

export function providerOperations(): DocumentedRoute[] {
  const metadata = (path: string, what: string) => op({
    method: 'get', path, summary: `${what}: the provider's endpoints, scopes and algorithms`,
    responses: { 200: { description: 'The metadata', schema: Metadata } },
  });
  const authorize = () => op({
    method: 'get', path: PATHS.authorization, query: AuthorizationParams,
    summary: 'Authorization endpoint: authorization code with PKCE (S256); leads a browser through sign-in and consent',
    responses: {
      200: Html('response_mode=form_post: the form that carries the answer to redirect_uri'),
      303: { description: 'To the sign-in or consent page, or back to redirect_uri with code (or error) and state', headers: ['Location'] },
      400: oauth('invalid_request, invalid_client, invalid_scope, invalid_target... when redirect_uri cannot be trusted; a browser (Accept: text/html) gets the same as an HTML page'),
      429: oauth('temporarily_unavailable: too many requests from this address'),
    },
  });
  const userinfo = (method: 'get' | 'post') => op({
    method, path: PATHS.userinfo, security: [{ bearer: [] }],
    summary: 'UserInfo: the claims of the token\'s subject (sub; email, name as granted); any access token of this issuer that carries openid',
    responses: { 200: { description: 'Claims', schema: UserInfo }, 400: oauth('invalid_request'), 401: oauth('invalid_token'), 403: oauth('insufficient_scope') },
  });
  const device = (method: 'get' | 'post') => op({
    method, path: PATHS.code_verification,
    summary: method === 'get'
      ? 'Device sign-in page: the code entry form (or the confirmation, given ?user_code=)'
      : 'Device sign-in page: submits the user code (a limited number of wrong codes per address, then 429)',
    ...(method === 'get' ? { query: z.object({ user_code: z.string().optional() }) } : { bodyContent: form(z.object({ xsrf: z.string(), user_code: z.string().optional(), confirm: z.string().optional(), abort: z.string().optional() })) }),
    responses: method === 'get' ? { 200: Html('The page'), 400: Html('An unknown user_code: the entry page again') } : {
      200: Html('The next page, or the entry page again saying the code is wrong (counted towards the limit)'),
      400: Html('A stale form: the entry page again (counted towards the limit)'),
      303: { description: 'On to sign-in and consent', headers: ['Location'] },
      429: Html('Too many wrong codes from this address or for this code; the page says when to retry (Retry-After)'),
    },
  });
  const interaction = (method: 'get' | 'post') => op({
    method, path: `${PATHS.interaction}/{uid}`,
    summary: method === 'get' ? 'Sign-in or consent page of one authorization request' : 'Submits the sign-in or consent form',
    params: z.object({ uid: z.string() }),
    ...(method === 'post' ? { bodyContent: form(z.object({ action: z.enum(['password', 'session', 'allow', 'deny']), email: z.string().optional(), password: z.string().optional() })) } : {}),
    responses: method === 'get' ? { 200: Html('The page'), 400: Html('An expired or unknown request') } : {
      200: Html('The page'),
      303: { description: 'On with the authorization', headers: ['Location'] },
      400: Html('An expired or unknown request'),
      401: Html('Wrong email or password: the page again'),
    },
  });
  return [
    metadata(DISCOVERY, 'OpenID Connect discovery'),
    metadata(AS_METADATA, 'OAuth 2.0 authorization server metadata (RFC 8414), the same document'),
    op({ method: 'get', path: PATHS.jwks, summary: 'The signing keys (JWKS)', responses: { 200: { description: 'The key set', schema: Jwks } } }),
    authorize(),
    op({
      method: 'post', path: PATHS.pushed_authorization_request,
      summary: `Pushed authorization request (RFC 9126): the authorization parameters sent ahead; the answer's request_uri goes to the authorization endpoint. ${clientAuth}`,
      bodyContent: form(AuthorizationParams), responses: { 201: { description: 'Stored', schema: Par }, 400: oauth('invalid_request...'), 401: oauth('invalid_client') },
    }),
    op({
      method: 'post', path: PATHS.token, summary: `Token endpoint: authorization code, refresh token (rotated) and device code grants. ${clientAuth}`,
      bodyContent: form(TokenRequest),
      responses: {
        200: { description: 'Tokens', schema: TokenResponse },
        400: oauth('invalid_grant, invalid_request, authorization_pending, slow_down, expired_token...'),
        401: oauth('invalid_client'),
        429: oauth('temporarily_unavailable: too many requests from this address'),
      },
    }),
    userinfo('get'),
    userinfo('post'),
    op({
      method: 'post', path: PATHS.introspection,
      summary: `Token introspection (RFC 7662) of the access and refresh tokens this issuer made, JWT access tokens included; a client learns only about its own tokens. ${clientAuth}`,
      bodyContent: form(TokenOnly),
      responses: { 200: { description: 'The token\'s state', schema: Introspection }, 400: oauth('invalid_request'), 401: oauth('invalid_client'), 429: oauth('temporarily_unavailable') },
    }),
    op({
      method: 'post', path: PATHS.revocation, summary: `Token revocation (RFC 7009): ends an access or refresh token and its grant. ${clientAuth}`,
      bodyContent: form(TokenOnly),
      responses: { 200: { description: 'Revoked (or nothing to revoke)' }, 400: oauth('invalid_request'), 401: oauth('invalid_client'), 429: oauth('temporarily_unavailable') },
    }),
    op({
      method: 'post', path: PATHS.device_authorization,
      summary: `Device authorization (RFC 8628): a device code and the user code a person enters at verification_uri. ${clientAuth}`,
      bodyContent: form(z.object({ client_id: z.string(), scope: z.string().optional(), resource: z.string().optional() })),
      responses: { 200: { description: 'The codes', schema: DeviceAuthorization }, 400: oauth('invalid_request, invalid_scope...'), 401: oauth('invalid_client') },
    }),
    device('get'),
    device('post'),
    op({
      method: 'get', path: `${PATHS.authorization}/{uid}`, summary: 'Where an authorization resumes after sign-in and consent: on to redirect_uri',
      params: z.object({ uid: z.string() }),
      responses: {
        200: Html('response_mode=form_post: the form that carries the answer to redirect_uri'),
        303: { description: 'Back to redirect_uri with code (or error) and state, or to the next page', headers: ['Location'] },
        400: oauth('An expired or unknown request; a browser (Accept: text/html) gets the same as an HTML page'),
      },
    }),
    op({
      method: 'get', path: `${PATHS.code_verification}/{uid}`, summary: 'Device sign-in: where the device flow resumes after sign-in and consent',
      params: z.object({ uid: z.string() }),
      responses: { 200: Html('The outcome page'), 400: Html('An expired or unknown request') },
    }),
    interaction('get'),
    interaction('post'),
  ];
}
