// The tools of the integrations the run's agent selected, named `${toolPrefix}__${tool}`.
// source none: api_call, which puts the connection's credential on a request (delivery.http) only
// when the target falls under a safely bound authorized_uris entry. source remote: the vendor's MCP
// server, reached with the official SDK client, its selected tools served under the naming rule
// (one declaring no auths comes without a connection: no credential header, no refresh).
// source local: the server its runner started, reached the same way (local-integration-tools.ts).
// Every request goes through the egress guard, and through the organization's default proxy when
// it has one (the guard judges the target, then the proxy); credentials never reach the agent:
// they are scrubbed from results and errors, and a request carrying one the agent put there is refused.
import type { RecordingSpan } from '../lib/tracing/records.ts';
import type { IncomingMessage } from 'node:http';
import {
  authorizeCredentialTarget,
  carriesSecret,
  deliveryHeader,
  literalAuthorizedHosts,
  scrubSecrets,
  secretValues,
} from '../lib/afps/credential-delivery.ts';
import { EgressRefusal, effectivePort, guardedFetch, guardedRequest, type EgressOptions } from '../lib/egress.ts';
import type { McpToolResult } from '../lib/mcp/tool-shapes.ts';
import { fetchThroughProxy, ProxyFailure, requestThroughProxy, type OutboundProxy } from '../lib/proxy-tunnel.ts';
import type { IntegrationAssignment, LocalIntegrationAssignment } from './assignment.ts';
import { localConnection, localTools } from './local-integration-tools.ts';
import { servedTools } from './mcp-served-tools.ts';
import { toolError, type SidecarTool, type ToolAnswer } from './tool.ts';

/** what api_call hands back to the model at most */
export const API_CALL_MAX_RESPONSE_BYTES = 1024 * 1024;
const API_CALL_TIMEOUT_MS = 30_000;
const REMOTE_CONNECT_TIMEOUT_MS = 15_000;
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
/** headers the sidecar sets itself, or that would change how the request travels */
const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-authorization', 'proxy-connection']);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export interface IntegrationToolsContext {
  /** base egress options: the operator's allowlist and the platform's own endpoints */
  egress: EgressOptions;
  /** the organization's default outbound proxy: every integration call goes through it; null: direct */
  proxy?: OutboundProxy | null;
  /** asks the platform to refresh an OAuth connection's credential; absent: a 401 is answered as is */
  refreshCredential?: (integration: IntegrationAssignment) => Promise<CredentialRefresh>;
  /** a line for the run's log; never handed a secret */
  note?: (message: string) => void;
  /** a span for one upstream request (method and host only: never the path, query or headers); absent: untraced */
  upstreamSpan?: (method: string, target: URL) => RecordingSpan | null;
}

/** The platform's answer to a refresh: the new credential fields, or the code it refused with. */
export type CredentialRefresh = { ok: true; credentials: Record<string, string> } | { ok: false; code: string };

function refusal(code: string, message: string): ToolAnswer {
  return toolError(`${code}: ${message}`);
}

/** The code and message an outbound failure reaches the model as. */
function outboundFailure(err: unknown, host: string): ToolAnswer {
  if (err instanceof ProxyFailure) {
    if (err.kind === 'blocked') return refusal('blocked_target', `the organization's proxy: ${err.message}`);
    if (err.kind === 'unresolvable') return refusal('upstream_unresolvable', `the organization's proxy: ${err.message}`);
    if (err.kind === 'timeout') return refusal('upstream_timeout', `the organization's proxy: ${err.message}`);
    return refusal('upstream_unreachable', `${host} could not be reached through the organization's proxy: ${err.message}`);
  }
  if (err instanceof EgressRefusal) {
    if (err.kind === 'unresolvable') return refusal('upstream_unresolvable', `the host ${host} does not resolve`);
    if (err.kind === 'invalid_url') return refusal('unauthorized_target', err.message);
    return refusal('blocked_target', err.message);
  }
  const message = (err as Error)?.message ?? '';
  if (/timed out/i.test(message)) return refusal('upstream_timeout', `${host} did not answer in time`);
  if (err instanceof PayloadTooLarge) return refusal('payload_too_large', `the response is over ${API_CALL_MAX_RESPONSE_BYTES} bytes`);
  return refusal('upstream_unreachable', `${host} could not be reached`);
}

class PayloadTooLarge extends Error {}

async function readCapped(res: IncomingMessage, cap: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > cap) {
      res.destroy();
      throw new PayloadTooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function egressFor(integration: IntegrationAssignment, base: EgressOptions): EgressOptions {
  // an internal host needs both: named literally in authorized_uris and allowed by the operator;
  // an integration without auths has no authorized_uris: its server's URL is what names its host
  if (integration.connectionId === null && integration.source.kind === 'remote') {
    return { ...base, authorizedHosts: [new URL(integration.source.url).hostname.replace(/^\[(.*)\]$/, '$1')] };
  }
  return { ...base, authorizedHosts: literalAuthorizedHosts(integration.authorizedUris) };
}

/** The texts that must never reach the agent: credential values and the header built from them. */
function secretsOf(integration: IntegrationAssignment): string[] {
  const secrets = secretValues(integration.credentials, integration.authorizedUris);
  const header = deliveryHeader(integration.delivery, integration.credentials);
  if (header && header[1].length >= 4) secrets.push(header[1]);
  return [...new Set(secrets)].sort((a, b) => b.length - a.length);
}

interface UpstreamAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Why a credential may not go to a target: the code and message a caller answers with. */
export interface CredentialRefusal {
  code: 'unauthorized_target' | 'credential_exfiltration_refused' | 'credential_unusable';
  message: string;
}

/**
 * One integration's credential as the sidecar delivers it (delivery.http), shared by api_call and
 * the egress proxy of local MCP servers (local-egress-proxy.ts): where it may go, the header it
 * makes, and the mid-run refresh of an OAuth credential an upstream answered 401 (one refresh at a
 * time, the call retried once), so both behave the same way.
 */
export interface DeliveredCredential {
  readonly integration: IntegrationAssignment;
  /** the credential fields in use now (replaced by a refresh) */
  current(): Record<string, string>;
  /** every credential value this run held, longest first: never shown to the agent or a server */
  secrets(): string[];
  /** the delivery header's name, lower case (a caller's own header of that name is dropped); null without a delivery */
  readonly headerName: string | null;
  /** whether `target` may receive `credentials`: the header to put on it, or the refusal */
  authorize(credentials: Record<string, string>, target: URL): { header: [string, string] | null } | CredentialRefusal;
  /**
   * `send` with the credential in use; when `unauthorized` says the upstream refused it (401) and
   * it can be refreshed: refreshed once (or taken from a refresh another call made meanwhile),
   * `discard` handed the refused answer, and `send` again. `refusedRefresh`: the platform's code
   * when it could not refresh (an OAUTH_* code, or why the connection needs reconnecting).
   */
  withRefresh<T>(send: (credentials: Record<string, string>) => Promise<T>, unauthorized: (answer: T) => boolean, discard?: (answer: T) => void): Promise<{ answer: T; refusedRefresh?: string }>;
}

export function deliveredCredential(integration: IntegrationAssignment, ctx: Pick<IntegrationToolsContext, 'refreshCredential' | 'note'>): DeliveredCredential {
  /** the credential calls use now: replaced when the platform refreshed it */
  let current = integration.credentials;
  /** every credential value this integration ever held: an old one must not leak either */
  let secrets = secretsOf(integration);
  let refreshing: Promise<CredentialRefresh> | undefined;
  const refreshable = integration.authType === 'oauth2' && integration.connectionId !== null && ctx.refreshCredential !== undefined;

  /** One refresh at a time: calls meeting a 401 together share it. */
  const refresh = (): Promise<CredentialRefresh> => {
    refreshing ??= ctx.refreshCredential!(integration).then((outcome) => {
      if (outcome.ok) {
        current = outcome.credentials;
        secrets = [...new Set([...secrets, ...secretsOf({ ...integration, credentials: current })])].sort((a, b) => b.length - a.length);
      }
      return outcome;
    }).finally(() => {
      refreshing = undefined;
    });
    return refreshing;
  };

  return {
    integration,
    current: () => current,
    secrets: () => secrets,
    headerName: integration.delivery?.name.toLowerCase() ?? null,
    authorize(credentials, target) {
      // judged for each credential: authorized_uris may render its fields
      const decision = authorizeCredentialTarget(integration.authorizedUris, credentials, target.href);
      if (decision === 'unauthorized_target') {
        return { code: 'unauthorized_target', message: `${target.origin} is not under the integration's authorized_uris` };
      }
      if (decision === 'credential_exfiltration_refused') {
        return { code: 'credential_exfiltration_refused', message: 'no authorized_uris entry binds this host safely, or the URL carries a credential' };
      }
      const header = deliveryHeader(integration.delivery, credentials);
      if (integration.delivery && !header) {
        return { code: 'credential_unusable', message: 'the connection lacks a field the credential delivery names; reconnect it' };
      }
      return { header };
    },
    async withRefresh(send, unauthorized, discard) {
      const used = current;
      let answer = await send(used);
      let refusedRefresh: string | undefined;
      // an expired access token: refreshed once (or already refreshed by another call), the call retried once
      if (refreshable && unauthorized(answer)) {
        let retry = current !== used;
        if (!retry) {
          const outcome = await refresh();
          if (outcome.ok) {
            ctx.note?.(`${integration.packageId}: the upstream refused the access token (401); the platform refreshed it and the call was retried once`);
            retry = true;
          } else {
            refusedRefresh = outcome.code;
            ctx.note?.(`${integration.packageId}: the upstream refused the access token (401) and the platform could not refresh it (${outcome.code})`);
          }
        }
        if (retry) {
          discard?.(answer);
          answer = await send(current);
        }
      }
      return refusedRefresh === undefined ? { answer } : { answer, refusedRefresh };
    },
  };
}

function apiCallTool(integration: IntegrationAssignment, ctx: IntegrationToolsContext): SidecarTool {
  const egress = egressFor(integration, ctx.egress);
  const credential = deliveredCredential(integration, ctx);
  const deliveredName = credential.headerName ?? undefined;
  /** one host per integration: the first host:port a call reaches is the only one later calls may */
  let boundHost: string | undefined;

  return {
    name: `${integration.toolPrefix}__api_call`,
    description:
      `Calls the ${integration.packageId} API with the connected account's credential, which the platform adds itself. ` +
      `Allowed URLs: ${integration.authorizedUris.join(', ') || 'none'}. Never put credentials in the request.`,
    inputSchema: {
      type: 'object',
      properties: {
        method: { type: 'string', enum: [...METHODS] },
        url: { type: 'string', description: 'the full URL' },
        headers: { type: 'object', additionalProperties: { type: 'string' } },
        body: { description: 'a string sent as is, or JSON sent as application/json' },
      },
      required: ['method', 'url'],
    },
    async call(args) {
      const method = typeof args.method === 'string' ? args.method.toUpperCase() : '';
      if (!(METHODS as readonly string[]).includes(method)) return refusal('invalid_request', `method must be one of ${METHODS.join(', ')}`);
      if (typeof args.url !== 'string' || args.url === '') return refusal('invalid_request', 'url must be a URL');
      const rawHeaders = args.headers ?? {};
      if (typeof rawHeaders !== 'object' || rawHeaders === null || Array.isArray(rawHeaders)) {
        return refusal('invalid_request', 'headers must be an object of strings');
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(rawHeaders)) {
        if (!HEADER_NAME.test(name) || typeof value !== 'string' || /[\r\n\0]/.test(value)) {
          return refusal('invalid_request', 'headers must be an object of header names to single-line strings');
        }
        const lower = name.toLowerCase();
        if (RESERVED_HEADERS.has(lower) || lower === deliveredName) continue;
        headers[lower] = value;
      }
      let body: string | undefined;
      if (args.body !== undefined && args.body !== null) {
        if (method === 'GET' || method === 'HEAD') return refusal('invalid_request', `a ${method} request takes no body`);
        if (typeof args.body === 'string') body = args.body;
        else {
          body = JSON.stringify(args.body);
          headers['content-type'] ??= 'application/json';
        }
      }

      let target: URL;
      try {
        target = new URL(args.url);
      } catch {
        return refusal('unauthorized_target', 'the url cannot be parsed');
      }
      const decision = authorizeCredentialTarget(integration.authorizedUris, credential.current(), target.href);
      if (decision === 'unauthorized_target') {
        return refusal('unauthorized_target', `${target.origin} is not under the integration's authorized_uris`);
      }
      if (decision === 'credential_exfiltration_refused') {
        return refusal('credential_exfiltration_refused', 'no authorized_uris entry binds this host safely, or the URL carries a credential');
      }
      const headerText = Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\n');
      if (carriesSecret(headerText, credential.secrets()) || (body !== undefined && carriesSecret(body, credential.secrets()))) {
        return refusal('credential_exfiltration_refused', 'the request carries a credential value; the platform adds the credential itself');
      }
      const hostKey = `${target.hostname.toLowerCase()}:${effectivePort(target)}`;
      if (boundHost !== undefined && boundHost !== hostKey) {
        return refusal('unauthorized_target', `this integration already calls ${boundHost}: one host per integration`);
      }

      /** One request with `credentials` delivered; a ToolAnswer when refused or failed on the way. */
      const send = async (credentials: Record<string, string>): Promise<UpstreamAnswer | ToolAnswer> => {
        // checked again for a refreshed credential: authorized_uris may name its fields
        const authorized = credential.authorize(credentials, target);
        if ('code' in authorized) return refusal(authorized.code, authorized.message);
        const delivered = authorized.header;
        const sent = { ...headers };
        if (delivered) sent[delivered[0].toLowerCase()] = delivered[1];
        if (body !== undefined) sent['content-length'] = String(Buffer.byteLength(body));
        const span = ctx.upstreamSpan?.(method, target) ?? null;
        if (span) sent.traceparent = span.traceparent;
        let res: IncomingMessage;
        try {
          // redirects are not followed: the credential goes to the checked target only
          const init = { method, headers: sent, body, timeoutMs: API_CALL_TIMEOUT_MS };
          res = ctx.proxy
            ? await requestThroughProxy(target, init, ctx.proxy, { target: egress, proxy: ctx.egress })
            : await guardedRequest(target, init, egress);
        } catch (err) {
          span?.fail('unreachable');
          span?.end();
          return outboundFailure(err, target.host);
        }
        boundHost ??= hostKey;
        span?.set({ 'http.response.status_code': res.statusCode ?? 0 });
        if ((res.statusCode ?? 500) >= 500) span?.fail(`http_${res.statusCode}`);
        let content: Buffer;
        try {
          content = await readCapped(res, API_CALL_MAX_RESPONSE_BYTES);
        } catch (err) {
          span?.fail('response_broke_off');
          return outboundFailure(err, target.host);
        } finally {
          span?.end();
        }
        const shownHeaders: Record<string, string> = {};
        for (const [name, value] of Object.entries(res.headers)) {
          if (name === 'set-cookie' || value === undefined) continue;
          shownHeaders[name] = Array.isArray(value) ? value.join(', ') : value;
        }
        return { status: res.statusCode ?? 502, headers: shownHeaders, body: content.toString('utf8') };
      };

      const { answer, refusedRefresh } = await credential.withRefresh(send, (a) => 'status' in a && a.status === 401);
      if (!('status' in answer)) return answer;
      const shown = { status: answer.status, headers: answer.headers, body: answer.body, ...(refusedRefresh ? { credential_refresh: `refused: ${refusedRefresh}` } : {}) };
      return { text: scrubSecrets(JSON.stringify(shown), credential.secrets()), isError: answer.status >= 400 };
    },
  };
}

/** The SDK client of a remote integration's MCP server, connected lazily and again after a failure. */
interface RemoteConnection {
  client(): Promise<RemoteClient>;
  close(): Promise<void>;
}

interface RemoteClient {
  listTools(params?: undefined, options?: { timeout: number }): Promise<{ tools: Array<{ name: string; description?: string; inputSchema: Record<string, unknown> }> }>;
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}

function headerRecord(init: RequestInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  new Headers(init?.headers).forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

function remoteConnection(integration: IntegrationAssignment, ctx: IntegrationToolsContext): RemoteConnection {
  if (integration.source.kind !== 'remote') throw new Error('not a remote integration');
  const source = integration.source;
  const sourceUrl = new URL(source.url);
  const egress = egressFor(integration, ctx.egress);
  const delivered = deliveryHeader(integration.delivery, integration.credentials);
  // every request of the SDK goes through the egress guard; the credential only to the server's origin
  const fetchThroughGuard = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers = headerRecord(init);
    if (delivered && url.origin === sourceUrl.origin) headers[delivered[0].toLowerCase()] = delivered[1];
    const body = typeof init?.body === 'string' ? init.body : undefined;
    const call = { method: init?.method ?? 'GET', headers, body, signal: init?.signal ?? undefined, timeoutMs: 600_000 };
    return ctx.proxy ? fetchThroughProxy(url, call, ctx.proxy, { target: egress, proxy: ctx.egress }) : guardedFetch(url, call, egress);
  };
  let pending: Promise<RemoteClient> | undefined;
  const connect = async (): Promise<RemoteClient> => {
    // loaded on first use: runs without a remote integration do not pay for the SDK
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const client = new Client({ name: 'agent-platform-sidecar', version: '1.0.0' });
    const transport = source.transport === 'sse'
      ? new (await import('@modelcontextprotocol/sdk/client/sse.js')).SSEClientTransport(sourceUrl, { fetch: fetchThroughGuard })
      : new (await import('@modelcontextprotocol/sdk/client/streamableHttp.js')).StreamableHTTPClientTransport(sourceUrl, { fetch: fetchThroughGuard });
    await client.connect(transport, { timeout: REMOTE_CONNECT_TIMEOUT_MS });
    return client as unknown as RemoteClient;
  };
  return {
    client() {
      pending ??= connect().catch((err) => {
        pending = undefined;
        throw err;
      });
      return pending;
    },
    async close() {
      const current = pending;
      pending = undefined;
      if (current) await current.then((c) => c.close()).catch(() => undefined);
    },
  };
}

function remoteFailure(err: unknown, integration: IntegrationAssignment, secrets: string[]): ToolAnswer {
  const host = integration.source.kind === 'remote' ? new URL(integration.source.url).host : integration.packageId;
  if (err instanceof EgressRefusal || err instanceof ProxyFailure || /timed out/i.test((err as Error)?.message ?? '')) return outboundFailure(err, host);
  const message = scrubSecrets(String((err as Error)?.message ?? err), secrets).slice(0, 500);
  return refusal('upstream_unreachable', `the MCP server of ${integration.packageId} failed: ${message}`);
}

/** The selected tools of a remote integration, as served by its MCP server (listed once at the start). */
async function remoteTools(integration: IntegrationAssignment, ctx: IntegrationToolsContext, connections: Array<{ close(): Promise<void> }>): Promise<SidecarTool[]> {
  const connection = remoteConnection(integration, ctx);
  connections.push(connection);
  const secrets = secretsOf(integration);
  return servedTools({
    packageId: integration.packageId, toolPrefix: integration.toolPrefix, tools: integration.tools,
    client: () => connection.client(), listTimeoutMs: REMOTE_CONNECT_TIMEOUT_MS,
    failure: (err) => remoteFailure(err, integration, secrets),
    clean: (content) => JSON.parse(scrubSecrets(JSON.stringify(content), secrets)) as McpToolResult['content'],
  });
}

export interface IntegrationTools {
  tools: SidecarTool[];
  close(): Promise<void>;
}

/** Every integration's tools; remote and local servers are connected (and their tools listed) before this resolves. */
/** `trustOf`: the certificate authority a local server's runtime is to trust (its credential injected over HTTPS), by package */
export async function integrationTools(integrations: IntegrationAssignment[], ctx: IntegrationToolsContext, local: LocalIntegrationAssignment[] = [], trustOf: (packageId: string) => string | undefined = () => undefined): Promise<IntegrationTools> {
  const connections: Array<{ close(): Promise<void> }> = [];
  const localGroups = local.map((integration) => {
    const connection = localConnection(integration, trustOf(integration.packageId));
    connections.push(connection);
    return localTools(integration, connection);
  });
  const groups = await Promise.all(
    integrations.map(async (integration): Promise<SidecarTool[]> => {
      if (integration.source.kind === 'remote') return remoteTools(integration, ctx, connections);
      if (integration.source.kind === 'none') {
        // api_call is the only tool a source none integration has, and it needs a credential to add
        return integration.tools.includes('api_call') && integration.connectionId !== null ? [apiCallTool(integration, ctx)] : [];
      }
      // a local source's server is served through `local`, which its runner filled in
      return [];
    }),
  );
  groups.push(...(await Promise.all(localGroups)));
  return { tools: groups.flat(), close: async () => void (await Promise.all(connections.map((c) => c.close()))) };
}
