// The Agent Platform SDK: typed operations from the generated document types, plus the helpers.
import { createCoreClient, type ClientOptions } from './core.ts';
import { IDEMPOTENT_OPERATIONS } from './generated/operations.ts';
import type { components, paths } from './generated/schema.ts';

export { PlatformError, nextLink, idempotentOperationsOf, unwrap, type ClientOptions, type Credentials, type FieldError } from './core.ts';
export type { components, paths };

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
/** A run as the API returns it. */
export type Run = Json<paths['/api/runs/{id}']['get']['responses'][200]>;

type ListOf<P extends keyof paths> = paths[P] extends { get: { responses: { 200: infer R } } } ? Json<R> : never;
/** The paths whose GET answers a list envelope. */
export type ListPath = { [P in keyof paths]: ListOf<P> extends { object: 'list'; data: unknown[] } ? P : never }[keyof paths];
/** An item of the list at P. */
export type ListItem<P extends ListPath> = ListOf<P> extends { data: Array<infer I> } ? I : never;

export interface PageOptions {
  /** values of the path's {placeholders} */
  params?: Record<string, string>;
  query?: Record<string, string | number | undefined>;
}

export interface TypedHelpers {
  /** the run once it has ended, long-polling GET /api/runs/{id}?wait */
  waitForRun(id: string, opts?: { timeoutMs?: number }): Promise<Run>;
  /** every item of the list at path, page after page, following Link rel="next" */
  paginate<P extends ListPath>(path: P, opts?: PageOptions): AsyncGenerator<ListItem<P>>;
}

export type PlatformClient = Omit<ReturnType<typeof createCoreClient<paths>>, keyof TypedHelpers> & TypedHelpers;

/** A client for one instance: pass an API key, or a session cookie with the organization and space. */
export function createPlatformClient(options: Omit<ClientOptions, 'idempotentOperations'>): PlatformClient {
  const client = createCoreClient<paths>({ ...options, idempotentOperations: IDEMPOTENT_OPERATIONS });
  const { waitForRun, paginate } = client;
  return Object.assign(client, {
    waitForRun: (id: string, opts?: { timeoutMs?: number }) => waitForRun(id, opts) as Promise<Run>,
    paginate: <P extends ListPath>(path: P, opts: PageOptions = {}) => {
      const concrete = String(path).replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(opts.params?.[name] ?? ''));
      return paginate(concrete, opts.query) as AsyncGenerator<ListItem<P>>;
    },
  });
}
