// The cases of tenant-isolation-matrix.test.ts: for every route of the built app, either an isolation
// probe or the reason it holds no other tenant's data; and the path of each route filled with
// tenant A's resources.
import type { RouteDef } from '../../api/route.ts';
import type { Tenant } from '../support/tenant-world.ts';

export interface Probe {
  /** a body that passes validation, so the call reaches the lookup that must miss */
  body?: (a: Tenant) => unknown;
  query?: string;
  /** a list: A's own caller sees this item, no caller of B or of s2 does */
  lists?: (a: Tenant) => string;
  /** the list's path for a caller's own organization (routes that carry it in the path) */
  ownPath?: (caller: Tenant) => string;
  /** why no cross-space probe applies (organization-level resources) */
  orgLevel?: string;
  /**
   * authority follows the space the path or the package names, not X-Space-Id: only the member of
   * s2 who holds no role in s1 probes across spaces (A's owner legitimately reaches s1 from anywhere)
   */
  s2Member?: true;
  /** no path parameter, but the body names A's resource */
  byBody?: true;
}
/** own: what the run's own secret gets when it is not a 2xx (a connection route naming a connection the run did not bind) */
export type Case = Probe | { exempt: string } | { runner: true; own?: { status: number; code: string } };

const PUBLIC = { exempt: 'public: instance documents and health, no tenant data' };
const ACCOUNT = { exempt: "account-level: acts on the caller's own account, no organization or space" };
const OWN_SPACE = { exempt: "creates in the caller's own space (key pin or X-Space-Id; header binding is in tenant-isolation.test.ts)" };
const REALTIME = { exempt: "a stream never ends, so it cannot be read here: realtime-streams.test.ts proves other tenants' runs are 404 and never streamed" };
const ORG = "organization-level resource: every space of the organization shares it";
const PROXY = { exempt: 'no path parameter: the headers name the integration; other organizations and spaces get credential_not_found (credential-proxy.test.ts)' };

export const CASES: Record<string, Case> = {
  'GET /health/live': PUBLIC, 'GET /health/ready': PUBLIC, 'GET /api/openapi.json': PUBLIC,
  'GET /api/docs': PUBLIC, 'GET /api/docs/reference.js': PUBLIC, 'GET /llms.txt': PUBLIC, 'GET /llms-full.txt': PUBLIC,
  'POST /api/auth/sign-up/email': ACCOUNT, 'POST /api/auth/sign-in/email': ACCOUNT, 'POST /api/auth/sign-out': ACCOUNT,
  'GET /api/auth/session': ACCOUNT, 'POST /api/auth/change-password': ACCOUNT, 'POST /api/auth/set-password': ACCOUNT,
  'POST /api/auth/request-password-reset': ACCOUNT, 'POST /api/auth/reset-password': ACCOUNT,
  'GET /api/auth/sign-in/options': ACCOUNT, 'POST /api/auth/verify-email': ACCOUNT, 'POST /api/auth/send-verification-email': ACCOUNT,
  'POST /api/auth/sign-in/magic-link': ACCOUNT, 'POST /api/auth/magic-link/verify': ACCOUNT,
  'GET /api/auth/sign-in/social': ACCOUNT, 'GET /api/auth/link/social': ACCOUNT, 'GET /api/auth/callback/social': ACCOUNT,
  'POST /api/auth/bootstrap/redeem': { exempt: 'instance bootstrap: creates the first organization, guarded by the bootstrap token' },
  'POST /api/invitations/{token}/accept': { exempt: 'the invitation token is the credential; it joins its own organization only (invitations.test.ts)' },

  'POST /api/end-users': OWN_SPACE,
  'GET /api/end-users': { lists: (a) => a.endUserId },
  'GET /api/end-users/{id}': {},
  'PATCH /api/end-users/{id}': { body: () => ({ name: 'Hijacked' }) },
  'DELETE /api/end-users/{id}': {},

  'POST /api/agents/{scope}/{name}/run': { body: () => ({ input: {} }) },
  'GET /api/agents/{scope}/{name}/runs': { lists: (a) => a.runId },
  'GET /api/runs': { lists: (a) => a.runId },
  'GET /api/runs/{id}': {},
  'GET /api/runs/{id}/logs': {},
  'POST /api/runs/{id}/cancel': { body: () => ({}) },
  'GET /api/runs/{id}/approvals': {},
  'POST /api/runs/{id}/approvals/{approval_id}': { body: () => ({ decision: 'approve' }) },
  'POST /api/runs/{id}/resume': { body: () => ({}) },
  'DELETE /api/runs/{id}': {},
  'PATCH /api/runs/{id}/sink/extend': { body: () => ({ seconds: 3600 }) },
  'POST /api/agents/{scope}/{name}/schedules': { body: () => ({ name: 'Probe', cron_expression: '0 3 * * *', timezone: 'UTC', input: {} }) },
  'GET /api/agents/{scope}/{name}/schedules': { lists: (a) => a.scheduleId },
  'GET /api/schedules': { lists: (a) => a.scheduleId },
  'GET /api/schedules/{id}': {},
  'PATCH /api/schedules/{id}': { body: () => ({ name: 'Hijacked' }) },
  'POST /api/schedules/{id}/enable': { body: () => ({}) },
  'POST /api/schedules/{id}/disable': { body: () => ({}) },
  'DELETE /api/schedules/{id}': {},
  'GET /api/schedules/{id}/runs': {},
  'POST /internal/runs/{id}/events': { runner: true },
  'POST /internal/runs/{id}/checkpoint': { runner: true, own: { status: 400, code: 'invalid_request' } },
  'GET /internal/runs/{id}/checkpoint': { runner: true },
  'GET /internal/runs/{id}/history': { runner: true },
  'GET /internal/runs/{id}/memory': { runner: true },
  'POST /internal/runs/{id}/approvals': { runner: true },
  'GET /internal/runs/{id}/approvals/{approval_id}': { runner: true, own: { status: 404, code: 'not_found' } },
  'GET /internal/runs/{id}/connections/{connectionId}': { runner: true, own: { status: 400, code: 'connection_not_in_run' } },
  'POST /internal/runs/{id}/connections/{connectionId}/refresh': { runner: true, own: { status: 400, code: 'connection_not_in_run' } },
  'POST /api/runs/inline': OWN_SPACE,
  'POST /api/runs/inline/validate': { exempt: 'checks a manifest given in the body; reads no stored resource' },
  'POST /api/runs/remote': { byBody: true, body: (a) => ({ packageId: `@${a.packageScope}/${a.agentName}` }) },
  'GET /api/realtime/runs/{id}': REALTIME,
  'GET /api/realtime/agents/{packageId}/runs': REALTIME,
  'GET /api/realtime/runs': REALTIME,
  'GET /api/agents/{scope}/{name}/config': {},
  'PUT /api/agents/{scope}/{name}/config': { body: () => ({}) },

  'GET /api/orgs': { lists: (a) => a.orgId, orgLevel: 'lists organizations, not spaces' },
  'POST /api/orgs': { exempt: 'account-level: creates a new organization owned by the caller' },
  'GET /api/orgs/{orgId}': { orgLevel: ORG },
  'PATCH /api/orgs/{orgId}': { orgLevel: ORG, body: () => ({ name: 'Hijacked' }) },
  'DELETE /api/orgs/{orgId}': { orgLevel: ORG },
  'GET /api/orgs/{orgId}/members': { orgLevel: ORG, lists: (a) => a.memberId, ownPath: (c) => `/api/orgs/${c.orgId}/members` },
  'GET /api/orgs/{orgId}/budget': { orgLevel: ORG },
  'PUT /api/orgs/{orgId}/budget': { orgLevel: ORG, body: () => ({ monthly_max_tokens: 1 }) },
  'POST /api/llm-proxy/chat/completions': { exempt: "X-Run-Id must name an open run of the caller's own space (llm-proxy.test.ts: other organization and other space refused)" },
  'GET /api/llm-proxy/models': { exempt: "X-Run-Id must name an open run of the caller's own space (llm-proxy.test.ts)" },
  'POST /api/llm-proxy/responses': { exempt: "X-Run-Id must name an open run of the caller's own space (llm-proxy-responses-and-embeddings.test.ts: another organization's run refused)" },
  'POST /api/llm-proxy/embeddings': { exempt: "X-Run-Id must name an open run of the caller's own space (llm-proxy-responses-and-embeddings.test.ts: another organization's run refused)" },
  'PATCH /api/orgs/{orgId}/members/{userId}': { orgLevel: ORG, body: () => ({ role: 'guest' }) },
  'DELETE /api/orgs/{orgId}/members/{userId}': { orgLevel: ORG },
  'POST /api/orgs/{orgId}/invitations': { orgLevel: ORG, body: () => ({ email: 'intruder@example.test', role: 'member' }) },
  'GET /api/orgs/{orgId}/invitations': { orgLevel: ORG, lists: (a) => a.invitationId, ownPath: (c) => `/api/orgs/${c.orgId}/invitations` },
  'DELETE /api/orgs/{orgId}/invitations/{invitationId}': { orgLevel: ORG },
  'GET /api/orgs/{orgId}/roles': { orgLevel: ORG, lists: (a) => a.roleId, ownPath: (c) => `/api/orgs/${c.orgId}/roles` },
  'POST /api/orgs/{orgId}/roles': { orgLevel: ORG, body: () => ({ key: 'hijack', name: 'Hijack', permissions: [] }) },
  'PATCH /api/orgs/{orgId}/roles/{roleId}': { orgLevel: ORG, body: () => ({ name: 'Hijacked' }) },
  'DELETE /api/orgs/{orgId}/roles/{roleId}': { orgLevel: ORG },

  'GET /api/spaces': { lists: (a) => a.s1, orgLevel: 'lists the organization\'s spaces; which team spaces a member sees is spaces.test.ts' },
  'POST /api/spaces': { exempt: "creates a space in the caller's own organization" },
  'GET /api/spaces/{spaceId}': { s2Member: true },
  'PATCH /api/spaces/{spaceId}': { s2Member: true, body: () => ({ name: 'Hijacked' }) },
  'DELETE /api/spaces/{spaceId}': { s2Member: true },
  'POST /api/spaces/{spaceId}/convert': { s2Member: true },
  'GET /api/spaces/{spaceId}/members': { s2Member: true },
  'POST /api/spaces/{spaceId}/members': { s2Member: true, body: (a) => ({ userId: a.memberId, role_key: 'viewer' }) },
  'PATCH /api/spaces/{spaceId}/members/{userId}': { s2Member: true, body: () => ({ role_key: 'viewer' }) },
  'DELETE /api/spaces/{spaceId}/members/{userId}': { s2Member: true },
  // s1 is private: neither B nor a member of the organization holding no role in s1 sees or joins it
  'POST /api/spaces/{spaceId}/join': { s2Member: true, body: () => ({ visibility: 'org', default_role: 'viewer' }) },
  'POST /api/spaces/{spaceId}/packages': { s2Member: true, body: (a) => ({ packageId: `@${a.packageScope}/${a.agentName}` }) },
  'PATCH /api/spaces/{spaceId}/packages/{scope}/{name}': { s2Member: true, body: () => ({ active: false }) },
  'DELETE /api/spaces/{spaceId}/packages/{scope}/{name}': { s2Member: true },

  'POST /api/api-keys': OWN_SPACE,
  'GET /api/api-keys': { lists: (a) => a.keyId },
  'GET /api/api-keys/available-scopes': { exempt: 'account-level: the scopes the caller could grant in its own space' },
  'DELETE /api/api-keys/{id}': {},

  'POST /api/packages/import': OWN_SPACE,
  'POST /api/packages/import-bundle': OWN_SPACE,
  'POST /api/packages/import-github': OWN_SPACE,
  'GET /api/packages': { lists: (a) => `@${a.packageScope}/${a.agentName}` },
  'GET /api/packages/{scope}/{name}': { s2Member: true },
  'DELETE /api/packages/{scope}/{name}': { s2Member: true },
  'GET /api/packages/{scope}/{name}/files': { s2Member: true },
  'GET /api/packages/{scope}/{name}/files/content': { s2Member: true, query: '?path=manifest.json' },
  'GET /api/packages/{scope}/{name}/{version}/download': { s2Member: true },
  'GET /api/packages/{scope}/{name}/versions': { s2Member: true },
  'POST /api/packages/{scope}/{name}/versions/{version}/yank': { s2Member: true },
  'GET /api/packages/{scope}/{name}/draft': { s2Member: true },
  'PUT /api/packages/{scope}/{name}/draft': { s2Member: true, body: () => ({ manifest: {} }) },
  'PUT /api/packages/{scope}/{name}/draft/files': { s2Member: true, body: () => ({ path: 'prompt.md', content: 'hijacked' }) },
  'DELETE /api/packages/{scope}/{name}/draft/files': { s2Member: true, query: '?path=prompt.md' },
  'POST /api/packages/{scope}/{name}/draft/move': { s2Member: true, body: () => ({ from: 'prompt.md', to: 'moved.md' }) },
  'POST /api/packages/{scope}/{name}/publish': { s2Member: true, body: () => ({}) },
  'POST /api/packages/skills/{scope}/{name}/versions/{version}/restore': { s2Member: true },
  'PUT /api/packages/{scope}/{name}/home': { s2Member: true, body: () => ({}) },
  'POST /api/packages/{scope}/{name}/fork': { s2Member: true, body: (a) => ({ name: `@${a.packageScope}/probe-fork` }) },
  'GET /api/agents/{scope}/{name}/bundle': { s2Member: true },
  'PUT /api/packages/{scope}/{name}/dist-tags/{tag}': { s2Member: true, body: () => ({ version: '1.0.0' }) },
  'DELETE /api/packages/{scope}/{name}/dist-tags/{tag}': { s2Member: true },

  'POST /api/model-provider-credentials': { exempt: "creates in the caller's own organization" },
  'GET /api/model-provider-credentials': { orgLevel: ORG, lists: (a) => a.credentialId },
  'POST /api/model-provider-credentials/test': { exempt: 'tests a credential given in the body; reads no stored resource' },
  'POST /api/model-provider-credentials/discover': { orgLevel: ORG, byBody: true, body: (a) => ({ credential_id: a.credentialId }) },
  'POST /api/model-provider-pairings': { exempt: "starts a pairing in the caller's own organization" },
  'GET /api/model-provider-pairings/{id}': { orgLevel: ORG },
  'POST /api/model-provider-pairings/redeem': { exempt: 'no caller credential: the one-time pairing token is the credential and creates one credential only in the organization of the member who started the pairing (models-pairing.test.ts)' },
  'GET /api/model-provider-credentials/{id}': { orgLevel: ORG },
  'PATCH /api/model-provider-credentials/{id}': { orgLevel: ORG, body: () => ({ name: 'Hijacked' }) },
  'DELETE /api/model-provider-credentials/{id}': { orgLevel: ORG },
  'POST /api/model-provider-credentials/{id}/test': { orgLevel: ORG },
  'GET /api/models/openrouter': { exempt: "a public provider's catalog, no tenant data" },
  'POST /api/models/test': { orgLevel: ORG, byBody: true, body: (a) => ({ credential_id: a.credentialId, model: 'fake' }) },
  'POST /api/models': { orgLevel: ORG, byBody: true, body: (a) => ({ credential_id: a.credentialId, model: 'stolen' }) },
  'GET /api/models': { orgLevel: ORG, lists: (a) => a.modelId },
  'GET /api/models/{id}': { orgLevel: ORG },
  'PATCH /api/models/{id}': { orgLevel: ORG, body: () => ({ name: 'Hijacked' }) },
  'DELETE /api/models/{id}': { orgLevel: ORG },
  'POST /api/models/{id}/test': { orgLevel: ORG },
  'POST /api/proxies': { exempt: "creates in the caller's own organization" },
  'GET /api/proxies': { orgLevel: ORG, lists: (a) => a.proxyId },
  'GET /api/proxies/{id}': { orgLevel: ORG },
  'PATCH /api/proxies/{id}': { orgLevel: ORG, body: () => ({ name: 'Hijacked' }) },
  'DELETE /api/proxies/{id}': { orgLevel: ORG },
  'POST /api/proxies/{id}/test': { orgLevel: ORG, body: () => ({ target_url: 'http://127.0.0.1:9/' }) },

  'POST /api/mcp/o/{org}': { orgLevel: "one MCP endpoint per organization; what it invokes is each operation's own case" },
  'GET /.well-known/oauth-protected-resource/api/mcp/o/{org}': { exempt: 'public: protected-resource metadata (RFC 9728) built from the path and the instance address; reads no tenant data' },
  'GET /api/integrations': { lists: (a) => `@${a.packageScope}/${a.integrationName}` },
  'POST /api/integrations/{scope}/{name}/auths/{auth_key}/connect/fields': { body: () => ({ credentials: { api_key: 'stolen' } }) },
  'POST /api/integrations/{scope}/{name}/auths/{auth_key}/connect/session': { body: () => ({}) },
  'PUT /api/integrations/{scope}/{name}/settings': { body: () => ({ personal_connections_disabled: true }) },
  'GET /api/integrations/connect/start': { exempt: 'public: the single-use link token is the credential; it acts only for the link\'s creator in its space (integrations-connect.test.ts)' },
  'POST /api/integrations/connect/start': { exempt: 'public: the single-use link token is the credential; it acts only for the link\'s creator in its space (integrations-connect.test.ts)' },
  'GET /api/integrations/connect/callback': { exempt: 'public: the OAuth state names one pending link, used once, for its creator (integrations-oauth.test.ts)' },
  'GET /api/connections': { lists: (a) => a.connectionId },
  'GET /api/connections/{id}': {},
  'PATCH /api/connections/{id}': { body: () => ({ label: 'Hijacked' }) },
  'DELETE /api/connections/{id}': {},
  'PUT /api/connections/{id}/pins': { body: () => ({ agents: [] }) },
  'GET /api/agents/{scope}/{name}/connection-readiness': {},
  'GET /api/credential-proxy/proxy': PROXY,
  'POST /api/credential-proxy/proxy': PROXY,
  'PUT /api/credential-proxy/proxy': PROXY,
  'PATCH /api/credential-proxy/proxy': PROXY,
  'DELETE /api/credential-proxy/proxy': PROXY,
  // chat module: sessions are their owner's own; enforced skills belong to one space
  'POST /api/chat/sessions': OWN_SPACE,
  'GET /api/chat/sessions': { lists: (a) => a.chatSessionId },
  'GET /api/chat/sessions/{id}': {},
  'POST /api/chat/sessions/{id}/messages': { body: () => ({ content: 'hello' }) },
  'DELETE /api/chat/sessions/{id}': {},
  'GET /api/chat/enforced-skills': { lists: (a) => a.enforcedSkillId },
  'PUT /api/chat/enforced-skills': { exempt: "replaces the enforced skills of the caller's own space (X-Space-Id); a package not reachable there is not_found (chat-sessions.test.ts)" },

  // webhooks: authority follows the webhook's space, not X-Space-Id (A's owner reaches s1's webhook from anywhere)
  'POST /api/webhooks': { s2Member: true, byBody: true, body: (a) => ({ level: 'space', spaceId: a.s1, url: 'https://hooks.example.test/x', events: ['run.success'] }) },
  'GET /api/webhooks': { lists: (a) => a.webhookId, query: '?all=true' },
  'GET /api/webhooks/{id}': { s2Member: true },
  'PATCH /api/webhooks/{id}': { s2Member: true, body: () => ({ url: 'https://hijack.example.test/' }) },
  'DELETE /api/webhooks/{id}': { s2Member: true },
  'POST /api/webhooks/{id}/rotate': { s2Member: true },
  'GET /api/webhooks/{id}/deliveries': { s2Member: true },
  // OAuth clients: authority follows the client's space, not X-Space-Id (A's owner reaches s1's client from anywhere)
  'POST /api/oauth/clients': OWN_SPACE,
  'GET /api/oauth/clients': { lists: (a) => a.oauthClientId },
  'GET /api/oauth/clients/{id}': { s2Member: true },
  'PATCH /api/oauth/clients/{id}': { s2Member: true, body: () => ({ name: 'Hijacked' }) },
  'DELETE /api/oauth/clients/{id}': { s2Member: true },
  'POST /api/oauth/clients/{id}/rotate-secret': { s2Member: true },
  'POST /api/auth/oauth2/register': { exempt: 'dynamic registration (RFC 7591): creates an instance-level client bound to no organization; reads no tenant data' },

  'GET /api/notifications': { lists: (a) => a.notificationId },
  'POST /api/notifications/{id}/read': {},
  'POST /api/notifications/read-all': { exempt: "marks only the caller's own notifications in its own space (notifications.test.ts)" },
  'POST /api/uploads': OWN_SPACE,
  'PUT /api/uploads/_content': { exempt: 'the sealed upload token is the credential; it writes only its own upload (files-suite.ts: forged and foreign tokens)' },
  'GET /api/files': { lists: (a) => a.fileId },
  'GET /api/files/{id}': {},
  'GET /api/files/{id}/content': {},
  'DELETE /api/files/{id}': {},
  'POST /api/files/{id}/keep': {},
  'GET /preview/files/{id}': { exempt: 'the sealed preview token is the credential and names its file; it opens no other file (files-suite.ts)' },
  'GET /api/runs/{id}/files': {},
  'POST /internal/runs/{id}/files': { runner: true },
};

export const keyOf = (r: RouteDef) => `${r.method.toUpperCase()} ${r.path}`;

/** The value of each path parameter, named by `<previous segment>/{<parameter>}`, for tenant A. */
export function fillPath(path: string, a: Tenant): string {
  const segs = path.split('/');
  const skill = path.includes('/skills/');
  const integration = path.startsWith('/api/integrations/');
  const values: Record<string, string> = {
    'orgs/{orgId}': a.orgId, 'members/{userId}': a.memberId, 'invitations/{invitationId}': a.invitationId,
    'roles/{roleId}': a.roleId, 'spaces/{spaceId}': a.s1, 'api-keys/{id}': a.keyId, 'end-users/{id}': a.endUserId,
    'runs/{id}': a.runId, 'agents/{scope}': `@${a.packageScope}`, 'packages/{scope}': `@${a.packageScope}`,
    'skills/{scope}': `@${a.packageScope}`, '{scope}/{name}': skill ? a.skillName : integration ? a.integrationName : a.agentName,
    'integrations/{scope}': `@${a.packageScope}`, 'auths/{auth_key}': 'key', 'connections/{id}': a.connectionId,
    '{name}/{version}': '1.0.0', 'versions/{version}': '1.0.0', 'dist-tags/{tag}': 'beta',
    'model-provider-credentials/{id}': a.credentialId, 'model-provider-pairings/{id}': a.pairingId, 'models/{id}': a.modelId, 'proxies/{id}': a.proxyId, 'o/{org}': a.orgId,
    'schedules/{id}': a.scheduleId,
    'webhooks/{id}': a.webhookId, 'notifications/{id}': a.notificationId, 'clients/{id}': a.oauthClientId,
    'files/{id}': a.fileId, 'sessions/{id}': a.chatSessionId, 'approvals/{approval_id}': 'apr_probe',
  };
  return segs.map((s, i) => {
    if (!/^\{\w+\}$/.test(s)) return s;
    const v = values[`${segs[i - 1]}/${s}`];
    if (v === undefined) throw new Error(`no value for ${segs[i - 1]}/${s} in ${path}: extend fillPath`);
    return v;
  }).join('/');
}
