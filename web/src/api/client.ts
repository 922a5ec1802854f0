// The dashboard's only way to the API: the SDK's typed client over the types generated from this
// instance's OpenAPI document (a breaking API change fails the dashboard's type-check). Requests
// go to this origin with the session cookie; the context the person chose (organization, space,
// role preview) is added as the headers the API reads.
import { createCoreClient, platformFetch, PlatformError, unwrap } from '../../../sdk/src/core.ts';
import type { components, paths } from '@api/schema';

export { PlatformError, unwrap };
export type Schemas = components['schemas'];

export interface Context {
  orgId: string | null;
  spaceId: string | null;
  /** X-View-As: `<org role>` or `<org role>:<space role key>`, for owners and admins */
  viewAs: string | null;
}

export const context: Context = { orgId: null, spaceId: null, viewAs: null };

/** fetch with the chosen context's headers; a request that sets one itself keeps its own */
function contextFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const request = new Request(input, { ...init, credentials: 'same-origin' });
  const set = (name: string, value: string | null) => {
    if (value && !request.headers.has(name)) request.headers.set(name, value);
  };
  set('X-Org-Id', context.orgId);
  set('X-Space-Id', context.spaceId);
  set('X-View-As', context.viewAs);
  return fetch(request);
}

/** The typed client; problems are thrown as PlatformError (title, detail, request id). */
const options = { baseUrl: location.origin, fetch: contextFetch, maxRetries: 2, maxRetryAfterSeconds: 5 };
export const api = createCoreClient<paths>(options);

const withProblems = platformFetch(options);
/** fetch through the same context, retries and problem handling (multipart bodies, raw bytes). */
export const rawFetch = (path: string, init?: RequestInit) => withProblems(`${location.origin}${path}`, init);

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
/** The 200 (or 201) body of an operation. */
export type Answer<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends { responses: infer R }
  ? R extends { 200: infer A } ? Json<A> : R extends { 201: infer A } ? Json<A> : never
  : never;

/** The query string of the realtime streams for a session (an EventSource sends no headers). */
export function streamQuery(extra: Record<string, string> = {}): string {
  const q = new URLSearchParams();
  if (context.orgId) q.set('orgId', context.orgId);
  if (context.spaceId) q.set('spaceId', context.spaceId);
  if (context.viewAs) q.set('view_as', context.viewAs);
  for (const [k, v] of Object.entries(extra)) q.set(k, v);
  return q.toString();
}

/** A new key for one logical launch (the same on every retry of it). */
export const idempotencyKey = () => crypto.randomUUID();

/** The agent's path parameters from its package id (@scope/name). */
export function agentParams(packageId: string): { scope: string; name: string } {
  const [scope, name] = packageId.split('/');
  return { scope, name };
}
