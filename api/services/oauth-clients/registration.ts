// Dynamic client registration (RFC 7591): anyone may register a public client (no secret, PKCE)
// at the instance level. What it may do is decided at authorization time, by the user who signs in.
import type pg from 'pg';
import { newId } from '../../../lib/ids.ts';
import { vetPublicClientMetadata } from './public-client-metadata.ts';

export interface RegisteredClient {
  client_id: string;
  client_id_issued_at: number;
  client_name: string;
  redirect_uris: string[];
  post_logout_redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: 'none';
  scope: string;
  [info: string]: unknown;
}

/** Registers the client the metadata describes; a ClientMetadataError when it is refused. */
export async function registerDynamicClient(pool: pg.Pool, metadata: unknown): Promise<RegisteredClient> {
  const m = vetPublicClientMetadata(metadata, { name: 'Dynamically registered client' });
  const id = newId('oac');
  const { rows } = await pool.query<{ created_at: Date }>(
    `INSERT INTO oauth_clients (id, level, name, redirect_uris, post_logout_redirect_uris, grant_types, token_endpoint_auth_method,
                                scopes, registration, metadata)
     VALUES ($1, 'instance', $2, $3, $4, $5, 'none', $6, 'dynamic', $7) RETURNING created_at`,
    [id, m.name, m.redirectUris, m.postLogoutRedirectUris, m.grantTypes, m.scopes, JSON.stringify(m.extra)],
  );
  return {
    client_id: id,
    client_id_issued_at: Math.floor(rows[0].created_at.getTime() / 1000),
    client_name: m.name,
    redirect_uris: m.redirectUris,
    post_logout_redirect_uris: m.postLogoutRedirectUris,
    grant_types: m.grantTypes,
    response_types: m.grantTypes.includes('authorization_code') ? ['code'] : [],
    token_endpoint_auth_method: 'none',
    scope: m.scopes.join(' '),
    ...m.extra,
  };
}
