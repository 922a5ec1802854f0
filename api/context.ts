// What the pipeline learns about a request, attached to it once and read by every later stage.
import type { Request } from './http.ts';
import type { OrgRole, Permission } from '../lib/permissions.ts';

export type CredentialKind = 'session' | 'api_key' | 'oidc';

export interface Principal {
  kind: CredentialKind;
  userId: string;
  email?: string;
  sessionId?: string;
  /** session realm: platform, or end_user:<spaceId> */
  realm?: string;
  apiKeyId?: string;
  /** an API key is bound to one organization and pinned to one space */
  boundOrgId?: string;
  boundSpaceId?: string;
  keyScopes?: readonly string[];
  /** an OIDC access token: the client it was issued to, its level and its scopes */
  oauthClientId?: string;
  oauthLevel?: 'instance' | 'org' | 'space';
  tokenScopes?: readonly string[];
  /** an OIDC access token: the grant it was issued under (revoking it ends the token) */
  grantId?: string;
  /**
   * A delegated credential's ceiling: the permissions it was granted (an API key's scopes, an OAuth
   * token's consented scopes, for an end-user token cut to the space allowlist). Whatever the role,
   * it never acts beyond them. Absent for a session, which acts with its role.
   */
  ceiling?: ReadonlySet<string>;
  /** a refreshed session cookie to send back */
  refreshedCookie?: string;
}

export interface OrgContext {
  id: string;
  role: OrgRole;
  apiVersion: string | null;
}

export interface SpaceContext {
  id: string;
  kind: 'team' | 'personal';
}

export interface RequestContext {
  requestId: string;
  ip: string;
  userAgent: string | undefined;
  principal?: Principal;
  org?: OrgContext;
  space?: SpaceContext;
  permissions: ReadonlySet<Permission>;
  /** set when an API key acts on behalf of an end-user (Service-User) */
  endUserId?: string;
  apiVersion?: string;
  viewAs?: string;
}
