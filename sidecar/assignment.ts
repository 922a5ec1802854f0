// The run assignment a warm sidecar receives as one JSON line on stdin.
import { AUTH_TYPES, type AuthType, type IntegrationSource } from '../lib/afps/manifest-types.ts';
import { parseHostPort, type PlatformEndpoint } from '../lib/egress.ts';

export interface ModelAssignment {
  /** OpenAI-compatible base URL, without the trailing /chat/completions */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** the organization's default outbound proxy (HTTP CONNECT): model calls go through it; absent: direct */
  proxy?: OutboundProxyAssignment | null;
  /** the run's model settings (its own, else the model's): what a call leaves unset takes these */
  defaults?: { temperature: number | null; reasoningEffort: string | null };
  /** what the model accepts: every call is checked against it (absent: calls pass as they come) */
  accepts?: { supportsTemperature: boolean; reasoningLevels: string[] };
  /** the OpenAI endpoints besides chat completions the provider serves (absent: none, chat only) */
  offers?: SidecarModelEndpoint[];
  /**
   * the provider model names an embeddings call may name: the organization's enabled models on the
   * run model's credential (same key, same base URL); absent: the run's model only
   */
  embeddingModels?: string[];
}

export const SIDECAR_MODEL_ENDPOINTS = ['responses', 'embeddings'] as const;
export type SidecarModelEndpoint = (typeof SIDECAR_MODEL_ENDPOINTS)[number];

export interface OutboundProxyAssignment {
  url: string;
  username?: string | null;
  password?: string | null;
}

/** A proxy entry of the assignment (messages name the field, never the credentials). */
function parseProxy(p: unknown, field: string): OutboundProxyAssignment | null {
  if (p === null || p === undefined) return null;
  if (!isObject(p)) fail(`${field} must be an object or null`);
  const optionalText = (v: unknown, name: string) => {
    if (v !== undefined && v !== null && typeof v !== 'string') fail(`${field}.${name} must be a string or null`);
    return (v as string | null | undefined) ?? null;
  };
  return { url: httpUrl(p.url, `${field}.url`), username: optionalText(p.username, 'username'), password: optionalText(p.password, 'password') };
}

export type { IntegrationAssignment, LocalIntegrationAssignment } from '../lib/afps/integration-assignment.ts';
import type { IntegrationAssignment, LocalIntegrationAssignment } from '../lib/afps/integration-assignment.ts';

export interface SidecarAssignment {
  runId: string;
  /** full URL the signed run events are POSTed to */
  eventsUrl: string;
  /** whsec_... signing secret of this run */
  eventSecret: string;
  /** the run's own bearer token: every request to the sidecar presents it (its agent got it on stdin) */
  token: string;
  model: ModelAssignment | null;
  outputSchema: Record<string, unknown> | null;
  runtimeTools: string[];
  heartbeatSeconds: number;
  historyUrl?: string;
  memoryUrl?: string;
  /** where publish_file posts each file, signed like the events, to make it a durable file of the run */
  publishUrl?: string;
  /** where the agent's checkpoints go after each completed step, and where a resumed run reads the one it starts from; signed like the events */
  checkpointUrl?: string;
  /** the run continues from another run's checkpoint, which checkpointUrl answers; else its agent starts afresh */
  resumes: boolean;
  /** the sequence of the run's first event from this sandbox (a run woken from its park goes on from its last); 1 when absent */
  firstSequence?: number;
  /** base of the run's connection routes (`<base>/<connectionId>/refresh`), signed like the events */
  connectionsUrl?: string;
  /** where an approval request is POSTed and its decision read (`<base>/<approvalId>`), signed like the events */
  approvalsUrl?: string;
  /** the tools whose calls wait for a person's approval, and how long a request waits; absent: none */
  approvals?: { tools: string[]; timeoutSeconds: number } | null;
  /** folder publish_file writes into; absent means the tool answers that publishing is unavailable */
  filesDir?: string;
  /** absolute path of a unix socket to serve on as well: the way in for an agent in its own network namespace */
  socketPath?: string;
  /** host:port entries the model provider may be at although internal (EGRESS_ALLOW_INTERNAL_HOSTS) */
  egressAllowInternalHosts: string[];
  /** the platform's own endpoints: the model provider may never be one of them */
  egressPlatformEndpoints: PlatformEndpoint[];
  /** certificate authorities (PEM) trusted beside the system's for the TLS the sidecar opens (SANDBOX_EGRESS_CA_FILE) */
  egressExtraCa?: string;
  integrations: IntegrationAssignment[];
  /** local integrations: each one's MCP server behind a bridge its runner started (the docker backend) */
  localIntegrations: LocalIntegrationAssignment[];
  /** the organization's default outbound proxy (HTTP CONNECT): integration calls (api_call, remote MCP) go through it; absent: direct */
  proxy?: OutboundProxyAssignment | null;
  /** model usage limits: the run's own, and what its organization had left of the month at boot */
  budget: { run: SpendLimit | null; org: SpendLimit | null };
  /** the run's trace context (absent: tracing is off and nothing is recorded) */
  trace?: TraceAssignment;
}

export interface TraceAssignment {
  traceparent: string;
  captureMessageContent: boolean;
  provider?: string;
  agentName?: string;
}

function parseTrace(v: unknown): TraceAssignment | undefined {
  if (v === null || v === undefined) return undefined;
  if (!isObject(v) || typeof v.traceparent !== 'string') fail('trace must be an object with a traceparent');
  const text = (x: unknown) => (typeof x === 'string' && x !== '' ? x : undefined);
  return { traceparent: v.traceparent, captureMessageContent: v.captureMessageContent === true, provider: text(v.provider), agentName: text(v.agentName) };
}

/** Tokens (prompt + completion) and USD still allowed; null: no limit. */
export interface SpendLimit {
  maxTokens: number | null;
  maxCostUsd: number | null;
}

function parseSpendLimit(v: unknown, field: string): SpendLimit | null {
  if (v === null || v === undefined) return null;
  if (!isObject(v)) fail(`${field} must be an object or null`);
  const limit = (x: unknown, name: string) => {
    if (x === null || x === undefined) return null;
    if (typeof x !== 'number' || !(x >= 0)) fail(`${field}.${name} must be a non-negative number or null`);
    return x;
  };
  return { maxTokens: limit(v.maxTokens, 'maxTokens'), maxCostUsd: limit(v.maxCostUsd, 'maxCostUsd') };
}

/** base64url of at least 32 random bytes: guessing it is out of reach */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43,}$/;

function fail(message: string): never {
  throw new Error(`invalid assignment: ${message}`);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function httpUrl(v: unknown, field: string): string {
  if (typeof v !== 'string') fail(`${field} must be a URL`);
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    fail(`${field} must be a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(`${field} must be http or https`);
  return v;
}

function optionalUrl(v: unknown, field: string): string | undefined {
  return v === undefined || v === null || v === '' ? undefined : httpUrl(v, field);
}

function parseApprovals(v: unknown): SidecarAssignment['approvals'] {
  if (v === null || v === undefined) return null;
  if (!isObject(v)) fail('approvals must be an object or null');
  if (!Array.isArray(v.tools) || !v.tools.every((t) => typeof t === 'string')) fail('approvals.tools must be an array of strings');
  if (typeof v.timeoutSeconds !== 'number' || !Number.isInteger(v.timeoutSeconds) || v.timeoutSeconds < 1) fail('approvals.timeoutSeconds must be a positive integer');
  return { tools: v.tools as string[], timeoutSeconds: v.timeoutSeconds };
}

/** Parses and checks the line; messages name fields only, never their (secret) values. */
export function parseAssignment(line: string): SidecarAssignment {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    fail('not JSON');
  }
  if (!isObject(raw)) fail('not an object');
  const { runId, eventsUrl, eventSecret, model, outputSchema, runtimeTools, heartbeatSeconds } = raw;
  if (typeof runId !== 'string' || runId === '') fail('runId must be a non-empty string');
  if (typeof eventSecret !== 'string' || !eventSecret.startsWith('whsec_') || eventSecret.length < 10) {
    fail('eventSecret must be a whsec_ secret');
  }
  if (typeof raw.token !== 'string' || !TOKEN_PATTERN.test(raw.token)) fail('token must be at least 43 base64url characters');
  let modelAssignment: ModelAssignment | null = null;
  if (model !== null && model !== undefined) {
    if (!isObject(model)) fail('model must be an object or null');
    if (typeof model.apiKey !== 'string') fail('model.apiKey must be a string');
    if (typeof model.model !== 'string' || model.model === '') fail('model.model must be a non-empty string');
    modelAssignment = { baseUrl: httpUrl(model.baseUrl, 'model.baseUrl').replace(/\/+$/, ''), apiKey: model.apiKey, model: model.model };
    const modelProxy = parseProxy(model.proxy, 'model.proxy');
    if (modelProxy) modelAssignment.proxy = modelProxy;
    if (model.defaults !== null && model.defaults !== undefined) {
      const d = model.defaults;
      if (!isObject(d)) fail('model.defaults must be an object or null');
      if (d.temperature != null && (typeof d.temperature !== 'number' || !Number.isFinite(d.temperature))) fail('model.defaults.temperature must be a number or null');
      if (d.reasoningEffort != null && typeof d.reasoningEffort !== 'string') fail('model.defaults.reasoningEffort must be a string or null');
      modelAssignment.defaults = { temperature: (d.temperature as number | null | undefined) ?? null, reasoningEffort: (d.reasoningEffort as string | null | undefined) ?? null };
    }
    if (model.accepts !== null && model.accepts !== undefined) {
      const a = model.accepts;
      if (!isObject(a) || typeof a.supportsTemperature !== 'boolean' || !stringList(a.reasoningLevels)) {
        fail('model.accepts must be {supportsTemperature: boolean, reasoningLevels: string[]}');
      }
      modelAssignment.accepts = { supportsTemperature: a.supportsTemperature, reasoningLevels: [...a.reasoningLevels] };
    }
    if (model.offers !== null && model.offers !== undefined) {
      const offers = model.offers;
      if (!stringList(offers) || !offers.every((e) => (SIDECAR_MODEL_ENDPOINTS as readonly string[]).includes(e))) {
        fail(`model.offers must be an array of ${SIDECAR_MODEL_ENDPOINTS.join(', ')}`);
      }
      modelAssignment.offers = [...offers] as SidecarModelEndpoint[];
    }
    if (model.embeddingModels !== null && model.embeddingModels !== undefined) {
      if (!stringList(model.embeddingModels)) fail('model.embeddingModels must be an array of strings');
      modelAssignment.embeddingModels = [...model.embeddingModels];
    }
  }
  if (outputSchema !== null && outputSchema !== undefined && !isObject(outputSchema)) fail('outputSchema must be an object or null');
  if (!Array.isArray(runtimeTools) || !runtimeTools.every((t) => typeof t === 'string')) fail('runtimeTools must be an array of strings');
  if (typeof heartbeatSeconds !== 'number' || !(heartbeatSeconds > 0)) fail('heartbeatSeconds must be a positive number');
  if (raw.filesDir !== undefined && typeof raw.filesDir !== 'string') fail('filesDir must be a string');
  if (raw.socketPath !== undefined && (typeof raw.socketPath !== 'string' || !raw.socketPath.startsWith('/'))) {
    fail('socketPath must be an absolute path');
  }
  const allowInternal = raw.egressAllowInternalHosts ?? [];
  if (!Array.isArray(allowInternal) || !allowInternal.every((h) => typeof h === 'string' && parseHostPort(h) !== null)) {
    fail('egressAllowInternalHosts must be an array of host:port strings');
  }
  const endpoints = raw.egressPlatformEndpoints ?? [];
  const isEndpoint = (e: unknown) => isObject(e) && typeof e.host === 'string' && Number.isInteger(e.port) && (e.port as number) > 0 && (e.port as number) < 65536;
  if (!Array.isArray(endpoints) || !endpoints.every(isEndpoint)) fail('egressPlatformEndpoints must be an array of {host, port}');
  if (raw.egressExtraCa !== undefined && (typeof raw.egressExtraCa !== 'string' || !raw.egressExtraCa.includes('-----BEGIN CERTIFICATE-----'))) {
    fail('egressExtraCa must be PEM certificates');
  }
  const integrations = raw.integrations ?? [];
  if (!Array.isArray(integrations)) fail('integrations must be an array');
  const localIntegrations = raw.localIntegrations ?? [];
  if (!Array.isArray(localIntegrations)) fail('localIntegrations must be an array');
  if (raw.budget !== undefined && raw.budget !== null && !isObject(raw.budget)) fail('budget must be an object or null');
  return {
    runId,
    eventsUrl: httpUrl(eventsUrl, 'eventsUrl'),
    eventSecret,
    token: raw.token,
    model: modelAssignment,
    outputSchema: (outputSchema as Record<string, unknown> | null | undefined) ?? null,
    runtimeTools: runtimeTools as string[],
    heartbeatSeconds,
    historyUrl: optionalUrl(raw.historyUrl, 'historyUrl'),
    memoryUrl: optionalUrl(raw.memoryUrl, 'memoryUrl'),
    publishUrl: optionalUrl(raw.publishUrl, 'publishUrl'),
    checkpointUrl: optionalUrl(raw.checkpointUrl, 'checkpointUrl'),
    resumes: raw.resumes === true,
    ...(Number.isInteger(raw.firstSequence) && (raw.firstSequence as number) >= 1 ? { firstSequence: raw.firstSequence as number } : {}),
    connectionsUrl: optionalUrl(raw.connectionsUrl, 'connectionsUrl'),
    approvalsUrl: optionalUrl(raw.approvalsUrl, 'approvalsUrl'),
    approvals: parseApprovals(raw.approvals),
    filesDir: (raw.filesDir as string | undefined) || undefined,
    socketPath: raw.socketPath as string | undefined,
    egressAllowInternalHosts: allowInternal as string[],
    egressPlatformEndpoints: (endpoints as PlatformEndpoint[]).map((e) => ({ host: e.host, port: e.port })),
    ...(raw.egressExtraCa ? { egressExtraCa: raw.egressExtraCa as string } : {}),
    integrations: integrations.map((entry, i) => parseIntegration(entry, `integrations[${i}]`)),
    localIntegrations: localIntegrations.map((entry, i) => parseLocalIntegration(entry, `localIntegrations[${i}]`)),
    proxy: parseProxy(raw.proxy, 'proxy'),
    budget: isObject(raw.budget)
      ? { run: parseSpendLimit(raw.budget.run, 'budget.run'), org: parseSpendLimit(raw.budget.org, 'budget.org') }
      : { run: null, org: null },
    trace: parseTrace(raw.trace),
  };
}

const TOOL_PREFIX = /^[a-z0-9][a-z0-9_-]*_[a-z0-9][a-z0-9_.-]*$/i;
const TOOL_NAME = /^[A-Za-z0-9_.-]+$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

function stringList(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((s) => typeof s === 'string');
}

function parseSource(v: unknown, field: string): IntegrationSource {
  if (!isObject(v)) fail(`${field} must be an object`);
  if (v.kind === 'none') return { kind: 'none' };
  if (v.kind === 'remote') {
    if (v.transport !== 'streamable-http' && v.transport !== 'sse') fail(`${field}.transport must be streamable-http or sse`);
    return { kind: 'remote', url: httpUrl(v.url, `${field}.url`), transport: v.transport };
  }
  // a local source's server is reached through localIntegrations, which its runner fills in; its
  // entry here carries the credential the egress proxy puts on the server's requests
  if (v.kind === 'local') return { kind: 'local', command: stringList(v.command) ? v.command : [] };
  fail(`${field}.kind must be none, remote or local`);
}

/** One entry of localIntegrations: the tools to serve and the bridge of their server. */
function parseLocalIntegration(v: unknown, field: string): LocalIntegrationAssignment {
  if (!isObject(v)) fail(`${field} must be an object`);
  const { packageId, toolPrefix, tools, bridge } = v;
  if (typeof packageId !== 'string' || !/^@[^/\s]+\/[^/\s]+$/.test(packageId)) fail(`${field}.packageId must be an @scope/name`);
  if (typeof toolPrefix !== 'string' || !TOOL_PREFIX.test(toolPrefix)) fail(`${field}.toolPrefix must be <scope>_<name>`);
  if (!stringList(tools) || tools.length === 0 || !tools.every((t) => TOOL_NAME.test(t))) fail(`${field}.tools must be a non-empty array of tool names`);
  if (!isObject(bridge) || typeof bridge.host !== 'string' || bridge.host === '') fail(`${field}.bridge.host must be a host`);
  if (!Number.isInteger(bridge.port) || (bridge.port as number) <= 0 || (bridge.port as number) >= 65536) fail(`${field}.bridge.port must be a port`);
  if (typeof bridge.token !== 'string' || !TOKEN_PATTERN.test(bridge.token)) fail(`${field}.bridge.token must be at least 43 base64url characters`);
  const parsed: LocalIntegrationAssignment = { packageId, toolPrefix, tools: [...new Set(tools)], bridge: { host: bridge.host, port: bridge.port as number, token: bridge.token } };
  const egress = v.egress;
  if (egress !== undefined && egress !== null) {
    if (!isObject(egress) || typeof egress.secret !== 'string' || !TOKEN_PATTERN.test(egress.secret)) fail(`${field}.egress.secret must be at least 43 base64url characters`);
    if (!stringList(egress.authorizedUris)) fail(`${field}.egress.authorizedUris must be an array of strings`);
    parsed.egress = { secret: egress.secret, authorizedUris: egress.authorizedUris };
  }
  return parsed;
}

/** One entry of integrations; messages name fields, never values (credentials are secret). */
function parseIntegration(v: unknown, field: string): IntegrationAssignment {
  if (!isObject(v)) fail(`${field} must be an object`);
  const { packageId, toolPrefix, tools, authKey, connectionId, authorizedUris, delivery, credentials } = v;
  if (typeof packageId !== 'string' || !/^@[^/\s]+\/[^/\s]+$/.test(packageId)) fail(`${field}.packageId must be an @scope/name`);
  if (typeof toolPrefix !== 'string' || !TOOL_PREFIX.test(toolPrefix)) fail(`${field}.toolPrefix must be <scope>_<name>`);
  if (!stringList(tools) || !tools.every((t) => TOOL_NAME.test(t))) fail(`${field}.tools must be an array of tool names`);
  if (tools.length === 0) fail(`${field}.tools is empty (no_tools_selected)`);
  // an integration declaring no auths comes without a connection: both null, nothing to deliver
  const connectionless = authKey === null && connectionId === null;
  if (!connectionless) {
    if (typeof authKey !== 'string' || authKey === '') fail(`${field}.authKey must be a non-empty string, or null with connectionId`);
    if (typeof connectionId !== 'string' || connectionId === '') fail(`${field}.connectionId must be a non-empty string, or null with authKey`);
  }
  if (v.authType !== undefined && !(AUTH_TYPES as readonly unknown[]).includes(v.authType)) fail(`${field}.authType must be one of ${AUTH_TYPES.join(', ')}`);
  if (!stringList(authorizedUris)) fail(`${field}.authorizedUris must be an array of strings`);
  let parsedDelivery: IntegrationAssignment['delivery'] = null;
  if (delivery !== null && delivery !== undefined) {
    if (!isObject(delivery) || delivery.in !== 'header') fail(`${field}.delivery must be {in: "header", name, value} or null`);
    if (typeof delivery.name !== 'string' || !HEADER_NAME.test(delivery.name)) fail(`${field}.delivery.name must be a header name`);
    if (delivery.prefix !== undefined && typeof delivery.prefix !== 'string') fail(`${field}.delivery.prefix must be a string`);
    if (typeof delivery.value !== 'string' || delivery.value === '') fail(`${field}.delivery.value must be a non-empty string`);
    parsedDelivery = { in: 'header', name: delivery.name, value: delivery.value, ...(delivery.prefix !== undefined ? { prefix: delivery.prefix as string } : {}) };
  }
  if (!isObject(credentials) || !Object.values(credentials).every((c) => typeof c === 'string')) {
    fail(`${field}.credentials must be an object of strings`);
  }
  const source = parseSource(v.source, `${field}.source`);
  if (connectionless) {
    // api_call (source none) only delivers a credential: without a connection it has nothing to do
    if (source.kind !== 'remote') fail(`${field}: only a remote source comes without a connection`);
    if (v.authType !== undefined || parsedDelivery !== null || authorizedUris.length > 0 || Object.keys(credentials).length > 0) {
      fail(`${field}: an integration without a connection has no authType, delivery, authorizedUris or credentials`);
    }
  }
  return {
    packageId,
    toolPrefix,
    tools: [...new Set(tools)],
    source,
    authKey: authKey as string | null,
    ...(v.authType !== undefined ? { authType: v.authType as AuthType } : {}),
    connectionId: connectionId as string | null,
    authorizedUris,
    delivery: parsedDelivery,
    credentials: { ...(credentials as Record<string, string>) },
  };
}
