// The run assignment a warm sidecar receives as one JSON line on stdin.
import { parseHostPort, type PlatformEndpoint } from '../lib/egress.ts';

export interface ModelAssignment {
  /** OpenAI-compatible base URL, without the trailing /chat/completions */
  baseUrl: string;
  apiKey: string;
  model: string;
}

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
  /** folder publish_file writes into; absent means the tool answers that publishing is unavailable */
  filesDir?: string;
  /** absolute path of a unix socket to serve on as well: the way in for an agent in its own network namespace */
  socketPath?: string;
  /** host:port entries the model provider may be at although internal (EGRESS_ALLOW_INTERNAL_HOSTS) */
  egressAllowInternalHosts: string[];
  /** the platform's own endpoints: the model provider may never be one of them */
  egressPlatformEndpoints: PlatformEndpoint[];
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
    filesDir: (raw.filesDir as string | undefined) || undefined,
    socketPath: raw.socketPath as string | undefined,
    egressAllowInternalHosts: allowInternal as string[],
    egressPlatformEndpoints: (endpoints as PlatformEndpoint[]).map((e) => ({ host: e.host, port: e.port })),
  };
}
