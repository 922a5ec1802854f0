// The one lookup of an OAuth client by its client_id, shared by the oidc module's provider (its
// Client model) and the client routes. URL-named clients (client ID metadata documents) are
// resolved by metadata-document.ts and cached in oauth_clients with registration metadata_document.
import type pg from 'pg';
import type { SecretBox } from '../../../lib/crypto.ts';
import { isUrlClientId, resolveUrlClient, type UrlClientOptions } from './metadata-document.ts';

export type OAuthClientLevel = 'instance' | 'org' | 'space';
export type OAuthClientRegistration = 'api' | 'dynamic' | 'metadata_document';
export type TokenEndpointAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post';

export interface OAuthClientRecord {
  clientId: string;
  level: OAuthClientLevel;
  orgId: string | null;
  spaceId: string | null;
  name: string;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  grantTypes: string[];
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  /** the plaintext secret (opened from secret_sealed); null for public clients */
  clientSecret: string | null;
  /** the scopes this client may be granted */
  scopes: string[];
  allowSignup: boolean;
  registration: OAuthClientRegistration;
  metadata: Record<string, unknown>;
  createdBy: string | null;
  createdAt: Date;
  updatedAt: Date;
}

interface Row {
  id: string; level: OAuthClientLevel; org_id: string | null; space_id: string | null; name: string;
  redirect_uris: string[]; post_logout_redirect_uris: string[]; grant_types: string[];
  token_endpoint_auth_method: TokenEndpointAuthMethod; secret_sealed: string | null; scopes: string[];
  allow_signup: boolean; registration: OAuthClientRegistration; metadata: Record<string, unknown>;
  created_by: string | null; created_at: Date; updated_at: Date;
}

export function recordOf(row: Row, secrets: SecretBox): OAuthClientRecord {
  return {
    clientId: row.id, level: row.level, orgId: row.org_id, spaceId: row.space_id, name: row.name,
    redirectUris: row.redirect_uris, postLogoutRedirectUris: row.post_logout_redirect_uris,
    grantTypes: row.grant_types, tokenEndpointAuthMethod: row.token_endpoint_auth_method,
    clientSecret: row.secret_sealed ? secrets.open(row.secret_sealed) : null,
    scopes: row.scopes, allowSignup: row.allow_signup, registration: row.registration,
    metadata: row.metadata, createdBy: row.created_by, createdAt: row.created_at, updatedAt: row.updated_at,
  };
}

/**
 * The client named clientId, or null. Not tenant-scoped: the provider looks clients up by id alone.
 * An https client_id is a client ID metadata document, fetched (or read from its cache) here;
 * urlClients defaults to what the oidc module configured from the settings.
 */
export async function findOAuthClient(deps: { pool: pg.Pool; secrets: SecretBox; urlClients?: UrlClientOptions }, clientId: string): Promise<OAuthClientRecord | null> {
  if (clientId.length === 0 || clientId.length > 2048) return null;
  if (isUrlClientId(clientId)) return resolveUrlClient(deps, clientId);
  const { rows } = await deps.pool.query<Row>('SELECT * FROM oauth_clients WHERE id = $1', [clientId]);
  return rows[0] ? recordOf(rows[0], deps.secrets) : null;
}
