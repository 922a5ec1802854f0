// The Agent Platform SDK: typed operations from the generated document types, plus the helpers.
import { createCoreClient, type ClientOptions } from './core.ts';
import { IDEMPOTENT_OPERATIONS } from './generated/operations.ts';
import type { components, paths } from './generated/schema.ts';

export { PlatformError, nextLink, idempotentOperationsOf, unwrap, type ClientOptions, type Credentials, type FieldError } from './core.ts';
export type { components, paths };

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never;
/** A run as the API returns it. */
export type Run = Json<paths['/api/runs/{id}']['get']['responses'][200]>;

/** A client for one instance: pass an API key, or a session cookie with the organization and space. */
export function createPlatformClient(options: Omit<ClientOptions, 'idempotentOperations'>) {
  const client = createCoreClient<paths>({ ...options, idempotentOperations: IDEMPOTENT_OPERATIONS });
  const waitForRun = client.waitForRun;
  return Object.assign(client, {
    /** the run once it has ended, long-polling GET /api/runs/{id}?wait */
    waitForRun: (id: string, opts?: { timeoutMs?: number }) => waitForRun(id, opts) as Promise<Run>,
  });
}
