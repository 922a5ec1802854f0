// Sign-in for people: the device authorization grant (RFC 8628) against the instance's own OpenID
// provider, as its first-party public client `agent-platform-cli`; refresh of the stored tokens
// (the provider rotates refresh tokens: the new one replaces the old at once) and their revocation
// (RFC 7009) on logout.
import { PlatformError } from '../sdk/src/core.ts';
import type { Tokens } from './config.ts';

export const CLI_CLIENT_ID = 'agent-platform-cli';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** identity and a refresh token, always asked; the API resource is named by `resource` */
const IDENTITY_SCOPES = ['openid', 'email', 'profile', 'offline_access'];

/**
 * The API scopes `login` asks for by default: what the routes of every command but `keys` declare
 * (api/routes). A token carries only the scopes granted at consent, and API keys are managed with a
 * signed-in session, never a token, so no key permission is asked.
 */
export const DEFAULT_API_SCOPES = [
  'spaces:read', // login's default space (GET /api/spaces)
  'agents:read', 'agents:write', 'agents:run', // agents list|show|run, runs rerun|resume, packages import|download of agents
  'skills:read', 'skills:write', 'mcp-servers:read', 'mcp-servers:write', 'integrations:read', 'integrations:write', // packages import|download of the other kinds
  'runs:read', 'runs:cancel', 'runs:approve', // runs list|show|logs|approvals (and the realtime stream), runs cancel, runs approve|reject
  'files:read', // a run's files
  'schedules:read', 'schedules:write', // schedules list|create|disable
];

/** The scope parameter of the device authorization request: identity plus these API scopes. */
export function scopeParam(apiScopes: readonly string[]): string {
  return [...IDENTITY_SCOPES, ...apiScopes].join(' ');
}

interface Discovery {
  issuer: string;
  token_endpoint: string;
  device_authorization_endpoint: string;
  revocation_endpoint?: string;
}

export interface DeviceStart {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string;
  expires_in: number;
  interval?: number;
}

async function transport(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    throw new PlatformError(0, { code: 'unreachable', detail: `Cannot reach ${new URL(url).origin}: ${(err as Error).cause ?? (err as Error).message}` });
  }
}

async function jsonOf(res: Response): Promise<Record<string, unknown>> {
  const text = await res.text();
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' ? v : {};
  } catch {
    return { error: `http_${res.status}`, error_description: text.slice(0, 300) };
  }
}

/** An OAuth error answer (RFC 6749 5.2) as a PlatformError. */
function oauthError(res: Response, body: Record<string, unknown>): PlatformError {
  return new PlatformError(res.status, {
    code: typeof body.error === 'string' ? body.error : `http_${res.status}`,
    detail: typeof body.error_description === 'string' ? body.error_description : `The provider answered ${res.status}.`,
    request_id: res.headers.get('request-id') ?? undefined,
  });
}

export async function discover(base: string): Promise<Discovery> {
  const res = await transport(`${base}/.well-known/openid-configuration`, { headers: { accept: 'application/json' } });
  const body = await jsonOf(res);
  if (!res.ok) throw oauthError(res, body);
  if (typeof body.device_authorization_endpoint !== 'string' || typeof body.token_endpoint !== 'string') {
    throw new PlatformError(res.status, { code: 'device_flow_unavailable', detail: `${base} does not offer the device flow.` });
  }
  return body as unknown as Discovery;
}

function form(fields: Record<string, string | undefined>): URLSearchParams {
  const f = new URLSearchParams();
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) f.set(k, v);
  return f;
}

async function post(url: string, fields: Record<string, string | undefined>): Promise<{ res: Response; body: Record<string, unknown> }> {
  const res = await transport(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body: form(fields) });
  return { res, body: await jsonOf(res) };
}

function tokensOf(body: Record<string, unknown>, previous?: Tokens): Tokens {
  if (typeof body.access_token !== 'string') throw new PlatformError(502, { code: 'invalid_token_response', detail: 'The token endpoint answered no access token.' });
  const expiresIn = typeof body.expires_in === 'number' ? body.expires_in : 300;
  return {
    access_token: body.access_token,
    refresh_token: typeof body.refresh_token === 'string' ? body.refresh_token : previous?.refresh_token,
    id_token: typeof body.id_token === 'string' ? body.id_token : previous?.id_token,
    expires_at: Date.now() + expiresIn * 1000,
    scope: typeof body.scope === 'string' ? body.scope : previous?.scope,
  };
}

export async function startDeviceFlow(base: string, apiScopes: readonly string[] = DEFAULT_API_SCOPES): Promise<{ discovery: Discovery; start: DeviceStart }> {
  const discovery = await discover(base);
  const { res, body } = await post(discovery.device_authorization_endpoint, { client_id: CLI_CLIENT_ID, scope: scopeParam(apiScopes), resource: `${discovery.issuer}/api` });
  if (!res.ok) throw oauthError(res, body);
  return { discovery, start: body as unknown as DeviceStart };
}

/** Polls the token endpoint at the asked interval (slower on slow_down) until approved, denied or expired. */
export async function pollDeviceFlow(discovery: Discovery, start: DeviceStart, onWait?: () => void): Promise<Tokens> {
  let interval = Math.max(1, start.interval ?? 5) * 1000;
  const deadline = Date.now() + start.expires_in * 1000;
  for (;;) {
    await new Promise((r) => setTimeout(r, interval));
    const { res, body } = await post(discovery.token_endpoint, { grant_type: DEVICE_GRANT, device_code: start.device_code, client_id: CLI_CLIENT_ID });
    if (res.ok) return tokensOf(body);
    if (body.error === 'authorization_pending') {
      onWait?.();
    } else if (body.error === 'slow_down') {
      interval += 5000;
    } else {
      throw oauthError(res, body);
    }
    if (Date.now() > deadline) throw new PlatformError(400, { code: 'expired_token', detail: 'The code expired before it was approved; run login again.' });
  }
}

/** New tokens for a refresh token; a refused refresh (revoked, expired) is a 401 invalid_grant. */
export async function refresh(base: string, tokens: Tokens): Promise<Tokens> {
  if (!tokens.refresh_token) throw new PlatformError(401, { code: 'session_expired', detail: 'The sign-in has expired and cannot be refreshed.' });
  const discovery = await discover(base);
  const { res, body } = await post(discovery.token_endpoint, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: CLI_CLIENT_ID });
  if (!res.ok) {
    const err = oauthError(res, body);
    // the provider says 400 invalid_grant; for the CLI it means "not signed in any more"
    throw err.code === 'invalid_grant' ? new PlatformError(401, { ...err.problem, detail: `The sign-in was revoked or has expired (${err.message}).` }) : err;
  }
  return tokensOf(body, tokens);
}

/**
 * Revokes the refresh token (RFC 7009). The provider then ends its grant, and the access tokens
 * of the grant (JWTs, which the revocation endpoint does not take) are refused from then on.
 */
export async function revoke(base: string, tokens: Tokens): Promise<void> {
  if (!tokens.refresh_token) return;
  const discovery = await discover(base);
  if (!discovery.revocation_endpoint) throw new PlatformError(0, { code: 'revocation_unavailable', detail: `${base} offers no revocation endpoint.` });
  const { res, body } = await post(discovery.revocation_endpoint, { token: tokens.refresh_token, token_type_hint: 'refresh_token', client_id: CLI_CLIENT_ID });
  if (!res.ok) throw oauthError(res, body);
}

/** The claims of a JWT, unverified (for display only: the server verifies them). */
export function claimsOf(jwt: string | undefined): Record<string, unknown> {
  if (!jwt) return {};
  try {
    return JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8'));
  } catch {
    return {};
  }
}
