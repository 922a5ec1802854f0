// Which scopes an OAuth client can be granted. OpenID scopes (identity) are open to every client;
// resource scopes are the platform's key scopes (resource:action) the client was registered with,
// cut to what its level allows: a space-level client acts for an end-user, who can only ever be
// granted the fixed allowlist below.
import { KEY_SCOPES, SPACE_TOKEN_SCOPES, type KeyScope } from '../../../lib/permissions.ts';
import type { OAuthClientLevel, OAuthClientRecord } from '../../services/oauth-clients/store.ts';

export const OIDC_SCOPES = ['openid', 'profile', 'email', 'offline_access'] as const;

/** The only resource scopes a space-level (end-user) token can carry. */
export const SPACE_CLIENT_SCOPES = SPACE_TOKEN_SCOPES;

export function levelScopes(level: OAuthClientLevel): readonly string[] {
  return level === 'space' ? SPACE_CLIENT_SCOPES : KEY_SCOPES;
}

/** The resource scopes a client may be granted (its registered scopes within its level's). */
export function resourceScopes(c: Pick<OAuthClientRecord, 'level' | 'scopes'>): string[] {
  const registered = new Set(c.scopes);
  return levelScopes(c.level).filter((s) => registered.has(s));
}

/** What each grantable scope lets an application do, as the consent page says it. */
export const SCOPE_DESCRIPTIONS: Record<(typeof OIDC_SCOPES)[number] | KeyScope, string> = {
  openid: 'Know who you are (your account identifier)',
  profile: 'See your name',
  email: 'See your email address',
  offline_access: 'Keep this access while you are away (a refresh token), until you revoke it or change your password',
  'agents:read': 'See agents and their configuration',
  'agents:write': 'Create and edit agents',
  'agents:configure': 'Change the settings of agents',
  'agents:delete': 'Delete agents',
  'agents:run': 'Run agents',
  'skills:read': 'See skills',
  'skills:write': 'Create and edit skills',
  'skills:delete': 'Delete skills',
  'mcp-servers:read': 'See MCP server packages',
  'mcp-servers:write': 'Create and edit MCP server packages',
  'mcp-servers:delete': 'Delete MCP server packages',
  'integrations:read': 'See integrations',
  'integrations:write': 'Create and edit integrations',
  'integrations:delete': 'Delete integrations',
  'integrations:install': 'Install integrations',
  'integrations:uninstall': 'Uninstall integrations',
  'integrations:connect': 'Connect integrations to accounts',
  'integrations:disconnect': 'Disconnect integrations',
  'runs:read': 'See your runs and their results',
  'runs:read-all': 'See every run of the space, not only yours',
  'runs:cancel': 'Cancel runs',
  'runs:approve': "Approve or reject runs' tool calls",
  'runs:delete': 'Delete runs',
  'files:read': 'Read files',
  'files:delete': 'Delete files',
  'schedules:read': 'See schedules',
  'schedules:write': 'Create and edit schedules',
  'schedules:delete': 'Delete schedules',
  'models:read': 'See model settings',
  'models:write': 'Change model settings and credentials',
  'models:delete': 'Delete model settings',
  'proxies:read': 'See outbound proxies',
  'proxies:write': 'Create and edit outbound proxies',
  'proxies:delete': 'Delete outbound proxies',
  'spaces:read': 'See spaces',
  'spaces:write': 'Create and edit spaces',
  'spaces:delete': 'Delete spaces',
  'end-users:read': 'See end-users',
  'end-users:write': 'Create and edit end-users',
  'end-users:delete': 'Delete end-users',
  'credential-proxy:call': 'Call outside services with stored connection credentials',
  'llm-proxy:call': 'Call language models through the platform',
  'webhooks:read': 'See webhooks',
  'webhooks:write': 'Create and edit webhooks',
  'webhooks:delete': 'Delete webhooks',
  'org-webhooks:read': 'See the organization\'s webhooks',
  'oauth-clients:read': 'See OAuth applications',
  'oauth-clients:write': 'Create and edit OAuth applications',
  'oauth-clients:delete': 'Delete OAuth applications',
  'mcp:read': 'List the tools of the MCP endpoint',
  'mcp:invoke': 'Call the tools of the MCP endpoint',
};

export function scopeDescription(scope: string): string | undefined {
  return (SCOPE_DESCRIPTIONS as Record<string, string>)[scope];
}
