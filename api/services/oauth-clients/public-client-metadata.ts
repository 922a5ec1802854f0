// Client metadata (RFC 7591 section 2) sent by a party the platform does not know: a dynamic
// registration or a client ID metadata document. Such clients are public (no secret, PKCE) and
// instance-level. Every member is hostile: sizes, counts and URI schemes are checked, unknown
// members are ignored (RFC 7591) but their number is capped.
import { hasForbiddenText } from '../../../lib/clean-text.ts';
import { CLIENT_LIMITS, grantTypesProblem, nameProblem, redirectUrisProblem, scopesProblem, unique } from './client-metadata.ts';
import { scopesForLevel } from './scopes.ts';

export type MetadataErrorCode = 'invalid_redirect_uri' | 'invalid_client_metadata';

export class ClientMetadataError extends Error {
  constructor(readonly error: MetadataErrorCode, readonly description: string) {
    super(description);
    this.name = 'ClientMetadataError';
  }
}

export interface PublicClientMetadata {
  name: string;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  grantTypes: string[];
  scopes: string[];
  /** informational members kept as sent: client_uri, logo_uri, tos_uri, policy_uri, software_id, software_version */
  extra: Record<string, string>;
}

const MAX_MEMBERS = 50;
const MAX_SCOPE_TEXT = 4000;
const INFO_URIS = ['client_uri', 'logo_uri', 'tos_uri', 'policy_uri'] as const;
const INFO_TEXTS = ['software_id', 'software_version'] as const;

function fail(error: MetadataErrorCode, description: string): never {
  throw new ClientMetadataError(error, description);
}

function httpsUri(raw: unknown, field: string): string {
  if (typeof raw !== 'string' || raw.length > CLIENT_LIMITS.maxUriLength || hasForbiddenText(raw)) fail('invalid_client_metadata', `${field} must be a URI of at most ${CLIENT_LIMITS.maxUriLength} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    fail('invalid_client_metadata', `${field} must be an absolute URI`);
  }
  if (url.protocol !== 'https:' || url.username || url.password) fail('invalid_client_metadata', `${field} must be an https URI without user information`);
  return raw;
}

/** Validated metadata of a public client, or a ClientMetadataError naming the RFC 7591 error. */
export function vetPublicClientMetadata(doc: unknown, defaults: { name: string }): PublicClientMetadata {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) fail('invalid_client_metadata', 'the metadata must be a JSON object');
  const m = doc as Record<string, unknown>;
  if (Object.keys(m).length > MAX_MEMBERS) fail('invalid_client_metadata', `at most ${MAX_MEMBERS} metadata members`);

  const method = m.token_endpoint_auth_method ?? 'none';
  if (method !== 'none') fail('invalid_client_metadata', 'only public clients are registered here: token_endpoint_auth_method must be none (use PKCE)');
  if (m.client_secret !== undefined || m.jwks !== undefined || m.jwks_uri !== undefined) fail('invalid_client_metadata', 'a public client carries no secret or keys');

  const grantTypes = m.grant_types === undefined ? ['authorization_code'] : m.grant_types;
  if (!Array.isArray(grantTypes)) fail('invalid_client_metadata', 'grant_types must be an array');
  if (m.response_types !== undefined) {
    const rt = m.response_types;
    if (!Array.isArray(rt) || rt.length === 0 || rt.length > 4 || rt.some((t) => t !== 'code')) fail('invalid_client_metadata', 'response_types may hold only code');
  }

  const redirectUris = m.redirect_uris === undefined ? [] : m.redirect_uris;
  const badRedirect = redirectUrisProblem(redirectUris, 'redirect_uris');
  if (badRedirect) fail('invalid_redirect_uri', `${badRedirect.field} ${badRedirect.reason}`);
  const postLogout = m.post_logout_redirect_uris === undefined ? [] : m.post_logout_redirect_uris;
  const badPostLogout = redirectUrisProblem(postLogout, 'post_logout_redirect_uris');
  if (badPostLogout) fail('invalid_client_metadata', `${badPostLogout.field} ${badPostLogout.reason}`);

  const grants = unique(grantTypes as string[]);
  const grantWhy = grantTypesProblem(grants, redirectUris as string[]);
  if (grantWhy) fail(grantWhy.includes('redirect URI') ? 'invalid_redirect_uri' : 'invalid_client_metadata', `grant_types: ${grantWhy}`);

  let scopes: string[] = [...scopesForLevel('instance')];
  if (m.scope !== undefined) {
    if (typeof m.scope !== 'string' || m.scope.length > MAX_SCOPE_TEXT) fail('invalid_client_metadata', `scope must be a space-separated string of at most ${MAX_SCOPE_TEXT} characters`);
    scopes = unique(m.scope.split(' ').filter(Boolean));
    const why = scopesProblem('instance', scopes);
    if (why) fail('invalid_client_metadata', `scope: ${why}`);
  }

  let name = defaults.name;
  if (m.client_name !== undefined) {
    const why = nameProblem(m.client_name);
    if (why) fail('invalid_client_metadata', `client_name ${why}`);
    name = (m.client_name as string).trim();
  }

  const extra: Record<string, string> = {};
  for (const field of INFO_URIS) if (m[field] !== undefined) extra[field] = httpsUri(m[field], field);
  for (const field of INFO_TEXTS) {
    const v = m[field];
    if (v === undefined) continue;
    if (typeof v !== 'string' || v.length > 255 || hasForbiddenText(v)) fail('invalid_client_metadata', `${field} must be a string of at most 255 characters`);
    extra[field] = v;
  }

  return { name, redirectUris: unique(redirectUris as string[]), postLogoutRedirectUris: unique(postLogout as string[]), grantTypes: grants, scopes, extra };
}
