// The platform's own OAuth clients, part of every instance rather than rows of oauth_clients: the
// command-line client (cli/, `agent-platform login`) signs in with the device flow (RFC 8628) as a
// public client (no secret; the device code is its proof). It is instance-level: its access tokens
// act as the person, with X-Org-Id and X-Space-Id, like the dashboard's session. The provider's
// Client model (adapter.ts) answers these ids before looking at oauth_clients, so no stored or
// registered client can take one of them over.
import { KEY_SCOPES } from '../../../lib/permissions.ts';
import type { OAuthClientRecord } from '../../services/oauth-clients/store.ts';

export const CLI_CLIENT_ID = 'agent-platform-cli';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const SINCE = new Date('2026-01-01T00:00:00Z');

const CLI_CLIENT: OAuthClientRecord = {
  clientId: CLI_CLIENT_ID,
  level: 'instance',
  orgId: null,
  spaceId: null,
  name: 'Agent Platform CLI',
  redirectUris: [],
  postLogoutRedirectUris: [],
  grantTypes: [DEVICE_GRANT, 'refresh_token'],
  tokenEndpointAuthMethod: 'none',
  clientSecret: null,
  scopes: [...KEY_SCOPES],
  allowSignup: false,
  registration: 'api',
  metadata: { first_party: true },
  createdBy: null,
  createdAt: SINCE,
  updatedAt: SINCE,
};

/** The first-party client named clientId, or null. */
export function firstPartyClient(clientId: string): OAuthClientRecord | null {
  return clientId === CLI_CLIENT_ID ? CLI_CLIENT : null;
}
