// The instance, credential and context a command runs with, and the calls it makes: the SDK's
// fetch (credentials and context headers, problem documents as PlatformError, 429/503 retried
// after Retry-After) and helpers (Link paging, long polls for a run's ending).
//   instance: --url, else AGENT_PLATFORM_URL, else the one `login`/`use` saved
//   credential: --api-key, else AGENT_PLATFORM_API_KEY, else the tokens of `login` (refreshed
//   when they are about to expire)
//   organization and space (signed-in people only: an API key is bound to its own): --org and
//   --space, else AGENT_PLATFORM_ORG / AGENT_PLATFORM_SPACE, else the defaults saved by `use`
import fs from 'node:fs';
import path from 'node:path';
import { createHelpers, platformFetch, PlatformError, type Helpers } from '../sdk/src/core.ts';
import { configFile, instanceOf, normalizeUrl, readConfig, writeConfig, type Config, type InstanceState, type Tokens } from './config.ts';
import { refresh } from './oauth.ts';
import { UsageError, type Out } from './output.ts';

export interface Globals {
  url?: string;
  apiKey?: string;
  org?: string;
  space?: string;
}

export interface Session {
  base: string;
  auth: 'api_key' | 'oauth' | 'session';
  org?: string;
  space?: string;
  config: Config;
  instance: InstanceState;
  /** the credential and context headers, for streams made outside the SDK's fetch */
  headers: Record<string, string>;
  fetch: typeof fetch;
  helpers: Helpers;
  out: Out;
}

/** Refresh this long before expiry, so a token does not lapse between the check and the call. */
const REFRESH_MARGIN_MS = 60_000;

export function resolveUrl(globals: Globals, config: Config): string {
  const raw = globals.url ?? process.env.AGENT_PLATFORM_URL ?? config.url;
  if (!raw) throw new UsageError('no instance: pass --url URL, set AGENT_PLATFORM_URL, or run `agent-platform login --url URL`');
  try {
    return normalizeUrl(raw);
  } catch (err) {
    throw new UsageError(`--url: ${(err as Error).message}`);
  }
}

/** fetch that reports an unreachable instance as a PlatformError of status 0. */
function reaching(base: typeof fetch): typeof fetch {
  return async (input, init) => {
    try {
      return await base(input, init);
    } catch (err) {
      if (err instanceof PlatformError || (err as Error).name === 'AbortError') throw err;
      const cause = (err as Error).cause as Error | undefined;
      throw new PlatformError(0, { code: 'unreachable', detail: `Cannot reach the instance: ${cause?.message ?? (err as Error).message}` });
    }
  };
}

/**
 * The tokens of base, refreshed under a lock file: refresh tokens rotate and a reused one ends the
 * grant, so two commands started together must not both spend the same one. The second waits,
 * then finds the tokens the first saved.
 */
async function refreshed(base: string): Promise<Tokens> {
  const lock = `${configFile()}.lock`;
  fs.mkdirSync(path.dirname(lock), { recursive: true, mode: 0o700 });
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      fs.closeSync(fs.openSync(lock, 'wx', 0o600));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // a lock left by a command that was killed
      const age = Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 30_000 || Date.now() > deadline) fs.rmSync(lock, { force: true });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    const config = readConfig();
    const instance = instanceOf(config, base);
    if (!instance.tokens) throw new PlatformError(401, { code: 'not_signed_in', detail: `Not signed in to ${base}: run \`agent-platform login --url ${base}\`.` });
    if (instance.tokens.expires_at - REFRESH_MARGIN_MS >= Date.now()) return instance.tokens;
    try {
      instance.tokens = await refresh(base, instance.tokens);
    } catch (err) {
      if (err instanceof PlatformError && err.status === 401) {
        delete instance.tokens;
        writeConfig(config);
      }
      throw err;
    }
    writeConfig(config);
    return instance.tokens;
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

export async function openSession(globals: Globals, out: Out): Promise<Session> {
  const config = readConfig();
  const base = resolveUrl(globals, config);
  const instance = instanceOf(config, base);
  const apiKey = globals.apiKey ?? process.env.AGENT_PLATFORM_API_KEY;
  let bearer: string;
  let auth: Session['auth'];
  let org: string | undefined;
  let space: string | undefined;
  if (apiKey) {
    bearer = apiKey;
    auth = 'api_key';
  } else {
    if (!instance.tokens) throw new PlatformError(401, { code: 'not_signed_in', detail: `Not signed in to ${base}: run \`agent-platform login --url ${base}\` or pass --api-key.` });
    if (instance.tokens.expires_at - REFRESH_MARGIN_MS < Date.now()) instance.tokens = await refreshed(base);
    bearer = instance.tokens.access_token;
    auth = 'oauth';
    org = globals.org ?? process.env.AGENT_PLATFORM_ORG ?? instance.org;
    space = globals.space ?? process.env.AGENT_PLATFORM_SPACE ?? instance.space;
  }
  const headers: Record<string, string> = { authorization: `Bearer ${bearer}` };
  if (org) headers['x-org-id'] = org;
  if (space) headers['x-space-id'] = space;
  const opts = { baseUrl: base, apiKey: bearer, orgId: org, spaceId: space, fetch: reaching(globalThis.fetch) };
  const fetchImpl = reaching(platformFetch(opts));
  return { base, auth, org, space, config, instance, headers, fetch: fetchImpl, helpers: createHelpers(opts, fetchImpl), out };
}

/** A signed-in session of a person (email and password), for the session-only operations. */
export interface PasswordSession extends Session {
  /** signs the session out (POST /api/auth/sign-out); never throws */
  end(): Promise<void>;
}

/**
 * Signs in with email and password (POST /api/auth/sign-in/email) for one command: the session
 * cookie is sent with X-Org-Id and X-Space-Id, and end() signs it out. Nothing is saved.
 */
export async function openPasswordSession(globals: Globals, person: { email: string; password: string }, out: Out): Promise<PasswordSession> {
  const config = readConfig();
  const base = resolveUrl(globals, config);
  const instance = instanceOf(config, base);
  const org = globals.org ?? process.env.AGENT_PLATFORM_ORG ?? instance.org;
  const space = globals.space ?? process.env.AGENT_PLATFORM_SPACE ?? instance.space;
  if (!org || !space) throw new UsageError('no organization and space: pass --org ID --space ID, set AGENT_PLATFORM_ORG and AGENT_PLATFORM_SPACE, or save them with `use`');
  const plain = reaching(platformFetch({ baseUrl: base, fetch: reaching(globalThis.fetch) }));
  const res = await plain(`${base}/api/auth/sign-in/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ email: person.email, password: person.password }),
  });
  await res.body?.cancel();
  const cookie = res.headers.getSetCookie().map((c) => c.split(';')[0].trim()).filter((c) => /^[^=]+=.+/.test(c)).join('; ');
  if (!cookie) throw new PlatformError(502, { code: 'no_session', detail: 'The instance signed in without setting a session cookie.' });
  const headers: Record<string, string> = { cookie, 'x-org-id': org, 'x-space-id': space };
  const opts = { baseUrl: base, cookie, orgId: org, spaceId: space, fetch: reaching(globalThis.fetch) };
  const fetchImpl = reaching(platformFetch(opts));
  let ended = false;
  return {
    base, auth: 'session', org, space, config, instance, headers, fetch: fetchImpl, helpers: createHelpers(opts, fetchImpl), out,
    async end() {
      if (ended) return;
      ended = true;
      try {
        const bye = await fetchImpl(`${base}/api/auth/sign-out`, { method: 'POST' });
        await bye.body?.cancel();
      } catch (err) {
        out.error(`warning: the session was not signed out: ${(err as Error).message}`);
      }
    },
  };
}

export interface CallOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
}

export function urlOf(s: Session, path: string, query: CallOptions['query'] = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
  return `${s.base}${path}${params.size ? `?${params}` : ''}`;
}

/** One call; answers the parsed JSON body (undefined for 204). */
export async function call<T = any>(s: Session, method: string, path: string, opts: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
  let body: RequestInit['body'];
  if (opts.body instanceof FormData) body = opts.body;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] = 'application/json';
  }
  const res = await s.fetch(urlOf(s, path, opts.query), { method, headers, body });
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

/** A path segment from a package id: '@scope/name' -> ['@scope', 'name']. */
export function packageParts(id: string): [string, string] {
  const m = /^(@[a-z0-9][a-z0-9-]*)\/([a-z0-9][a-z0-9._-]*)$/.exec(id);
  if (!m) throw new UsageError(`${id} is not a package id like @scope/name`);
  return [m[1], m[2]];
}
