// The credential proxy for remote runners: a request to X-Target with the integration's credential
// injected per delivery.http, only to a target authorized_uris binds safely, through the egress
// guard and the organization's default proxy when it has one (a token refresh on the way too); the
// upstream's own answer comes back with Proxy-Status. X-Session-Id groups a runner's calls:
// within CREDENTIAL_PROXY_LIMITS.session_ttl_seconds it stays with its caller and connection.
// The caller may not own the connection (an organization default, a shared connection), so the
// answer is scrubbed of the credential before it goes back: headers and body, the values as written
// and in their common encodings (percent, JSON, base64 of the value and of Basic pairs, the injected
// header whole). The upstream is asked for an unencoded answer and a compressed one is inflated
// first, so that compression cannot hide a value from the scrub.
import type { IncomingHttpHeaders } from 'node:http';
import zlib from 'node:zlib';
import { REDACTED, authorizeCredentialTarget, deliveryHeader, scrubForms, secretValues } from '../../../lib/afps/credential-delivery.ts';
import type { CacheStore } from '../../../lib/cache/store.ts';
import type { Config } from '../../../lib/config.ts';
import { problem } from '../../../lib/problem.ts';
import type { SpaceScope } from '../../../db/tenant.ts';
import { isUuid, listVisibleConnections, ownedBy, visibleConnection, type ConnectionRow } from './connections.ts';
import { integrationInSpace, literalHosts, type IntegrationDeps } from './context.ts';
import { readSettings } from './governance.ts';
import { usableCredentials } from './oauth.ts';
import { outbound, proxyRouteOf } from './outbound.ts';

export const PROXY_SERVICE = 'agent-platform-credential-proxy';
const UPSTREAM_TIMEOUT_MS = 30_000;
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length']);
/** request headers that belong to the platform, never forwarded upstream */
const PLATFORM_HEADERS = new Set(['authorization', 'cookie', 'x-integration-id', 'x-target', 'x-session-id', 'x-connection-id', 'x-org-id', 'x-space-id', 'service-user', 'service-version', 'idempotency-key', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'forwarded', 'traceparent']);

export interface ProxyRequest {
  method: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface ProxyAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function required(headers: IncomingHttpHeaders, name: string): string {
  const v = header(headers, name.toLowerCase());
  if (!v) throw problem('invalid_request', { param: name, detail: `The header ${name} is required.` });
  return v;
}

function badHeader(name: string, message: string): never {
  throw problem('invalid_request', { param: name, detail: `The header ${name} ${message}.` });
}

/** The connection the call uses: the one named (within an enforced default), else as a run would choose. */
async function chooseConnection(scope: SpaceScope, deps: IntegrationDeps, integrationId: string, named: string | undefined): Promise<ConnectionRow> {
  const settings = await readSettings(scope.pool, deps.secrets, scope.orgId, integrationId);
  if (named !== undefined) {
    if (!isUuid(named)) badHeader('X-Connection-Id', 'must be a UUID');
    if (settings.enforce_default && settings.default_connection_id && named !== settings.default_connection_id) {
      throw problem('connection_not_in_org_default', { param: 'X-Connection-Id', detail: `The organization enforces its default ${integrationId} connection.` });
    }
    const row = settings.default_connection_id === named
      ? (await scope.pool.query<ConnectionRow>('SELECT * FROM integration_connections WHERE org_id = $1 AND id = $2', [scope.orgId, named])).rows[0]
      : await visibleConnection(scope, named).catch(() => undefined);
    if (!row || row.integration_package_id !== integrationId) throw problem('credential_not_found', { detail: `No ${integrationId} connection ${named} is usable by this caller.` });
    return row;
  }
  if (settings.enforce_default && settings.default_connection_id) {
    const { rows } = await scope.pool.query<ConnectionRow>('SELECT * FROM integration_connections WHERE org_id = $1 AND id = $2', [scope.orgId, settings.default_connection_id]);
    if (rows[0]) return rows[0];
  }
  const visible = (await listVisibleConnections(scope, { integrationId })).filter((c) => !c.needs_reconnection);
  const own = visible.filter((c) => ownedBy(c, scope.actor) && (!settings.personal_connections_disabled || c.shared_with_org));
  const byDefault = visible.find((c) => c.id === settings.default_connection_id);
  const chosen = own.at(-1) ?? byDefault ?? visible.filter((c) => c.shared_with_org).at(-1);
  if (!chosen) throw problem('credential_not_found', { detail: `No usable ${integrationId} connection for this caller; connect one first.` });
  return chosen;
}

export async function proxyCredentialCall(scope: SpaceScope, deps: IntegrationDeps, config: Config, cache: CacheStore, req: ProxyRequest): Promise<ProxyAnswer> {
  const limits = config.CREDENTIAL_PROXY_LIMITS;
  const integrationId = required(req.headers, 'X-Integration-Id');
  const target = required(req.headers, 'X-Target');
  const sessionId = required(req.headers, 'X-Session-Id');
  if (!isUuid(sessionId)) badHeader('X-Session-Id', 'must be a UUID');
  let targetUrl: URL;
  try {
    targetUrl = new URL(target);
  } catch {
    badHeader('X-Target', 'must be a full http(s) URL');
  }
  if (targetUrl.protocol !== 'https:' && targetUrl.protocol !== 'http:') badHeader('X-Target', 'must be a full http(s) URL');
  const connectionHeader = header(req.headers, 'x-connection-id');
  // every header is judged before anything is looked up: a malformed one is the caller's fault whatever exists
  if (connectionHeader !== undefined && !isUuid(connectionHeader)) badHeader('X-Connection-Id', 'must be a UUID');
  if (req.body.length > limits.max_request_bytes) throw problem('payload_too_large', { detail: `The request body exceeds ${limits.max_request_bytes} bytes.` });

  const integration = await integrationInSpace(scope.pool, scope.orgId, scope.spaceId, integrationId).catch(() => {
    throw problem('credential_not_found', { detail: `No integration ${integrationId} is usable in this space.` });
  });
  // a session stays with the caller that opened it, and with its connection
  const caller = `${scope.orgId}:${scope.actor.apiKeyId ?? scope.actor.userId}:${scope.actor.endUserId ?? ''}:${integrationId}`;
  const sessionKey = `credential-proxy:session:${sessionId}`;
  const bound = await cache.get(sessionKey);
  let namedConnection = connectionHeader;
  if (bound) {
    const [owner, connectionId] = bound.split('|');
    if (owner !== caller) throw problem('forbidden', { param: 'X-Session-Id', detail: 'This proxy session belongs to another caller or integration.' });
    if (namedConnection === undefined) namedConnection = connectionId;
  }
  const connection = await chooseConnection(scope, deps, integrationId, namedConnection);
  const auth = integration.manifest.auths?.[connection.auth_key];
  if (!auth) throw problem('integration_auth_undeclared', { detail: `${integrationId}@${integration.version} declares no auth "${connection.auth_key}".` });
  if (connection.needs_reconnection) throw problem('credential_not_found', { detail: `Connection ${connection.id} must be reconnected.` });
  if (!bound) await cache.setIfAbsent(sessionKey, `${caller}|${connection.id}`, limits.session_ttl_seconds * 1000);

  const settings = await readSettings(scope.pool, deps.secrets, scope.orgId, integrationId);
  const via = await proxyRouteOf(scope, deps);
  const credentials = await usableCredentials(scope.pool, deps.secrets, { ...deps.egress, authorizedHosts: literalHosts(auth) }, via, connection, auth, settings.oauth_clients[connection.auth_key] ?? null);
  const verdict = authorizeCredentialTarget(auth.authorized_uris ?? [], credentials, targetUrl.toString());
  if (verdict === 'unauthorized_target') throw problem('unauthorized_target', { param: 'X-Target', detail: `${targetUrl.origin} is outside the authorized_uris of ${integrationId}.` });
  if (verdict === 'credential_exfiltration_refused') throw problem('credential_exfiltration_refused', { param: 'X-Target', detail: `No authorized_uris entry of ${integrationId} binds ${targetUrl.host} safely; the credential is not sent there.` });
  const injected = deliveryHeader(auth.delivery?.http ?? null, credentials);
  if (!injected) throw problem('credential_not_found', { detail: `${integrationId} declares no header delivery this connection can fill.` });

  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || PLATFORM_HEADERS.has(name)) continue;
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  headers[injected[0].toLowerCase()] = injected[1];
  headers['accept-encoding'] = 'identity';
  const answer = await outbound(targetUrl.toString(), {
    method: req.method, headers, body: req.body.length ? req.body : undefined, timeoutMs: UPSTREAM_TIMEOUT_MS, maxBytes: limits.max_response_bytes,
    onTimeout: () => problem('upstream_timeout', { detail: `${targetUrl.host} did not answer within ${UPSTREAM_TIMEOUT_MS / 1000} s.` }),
    via,
  }, { ...deps.egress, authorizedHosts: literalHosts(auth) });

  const proxyStatus = `${PROXY_SERVICE}; received-status=${answer.status}`;
  if (answer.status === 401) {
    throw problem('credential_unusable', { detail: `${targetUrl.host} refused the ${integrationId} credential (401); reconnect connection ${connection.id}.`, headers: { 'Proxy-Status': proxyStatus } });
  }
  // header values and the body are read as latin1 (one char per byte): the forms are compared as their UTF-8 bytes
  const forms = scrubForms(secretValues(credentials, auth.authorized_uris ?? []), injected[1]).map((f) => Buffer.from(f, 'utf8').toString('latin1'));
  const body = scrubBytes(inflated(answer.headers['content-encoding'], answer.body, limits.max_response_bytes, targetUrl.host), forms);
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || name === 'set-cookie' || name === 'content-encoding') continue;
    out[name] = Array.isArray(value) ? value.map((v) => scrubText(v, forms)) : scrubText(value, forms);
  }
  out['proxy-status'] = proxyStatus;
  return { status: answer.status, headers: out, body };
}

function scrubText(text: string, forms: string[]): string {
  let out = text;
  for (const f of forms) if (out.includes(f)) out = out.split(f).join(REDACTED);
  return out;
}

/** The body with every form (latin1, as scrubForms' UTF-8 bytes) replaced, byte for byte elsewhere. */
function scrubBytes(body: Buffer, forms: string[]): Buffer {
  if (body.length === 0 || forms.length === 0) return body;
  const text = body.toString('latin1');
  const scrubbed = scrubText(text, forms);
  return scrubbed === text ? body : Buffer.from(scrubbed, 'latin1');
}

/** The body without its content coding (gzip, deflate, br), within the answer limit; another coding is refused. */
function inflated(coding: string | undefined, body: Buffer, maxBytes: number, host: string): Buffer {
  const codings = (coding ?? '').split(',').map((c) => c.trim().toLowerCase()).filter((c) => c && c !== 'identity');
  let out = body;
  try {
    for (const c of codings.reverse()) {
      if (c === 'gzip' || c === 'x-gzip') out = zlib.gunzipSync(out, { maxOutputLength: maxBytes });
      else if (c === 'deflate') out = zlib.inflateSync(out, { maxOutputLength: maxBytes });
      else if (c === 'br') out = zlib.brotliDecompressSync(out, { maxOutputLength: maxBytes });
      else throw new Error(c);
    }
  } catch {
    throw problem('upstream_unreachable', { detail: `The answer of ${host} is in a content coding the proxy cannot read (${coding}); it is not passed on.` });
  }
  return out;
}
