// Thin calls to the Restate admin API (registration, SQL introspection, invocation control). The
// admin address may be a comma-separated list (the nodes of a cluster): each call goes to a node that answers.
import { restateFetch } from '../lib/restate-failover.ts';

export interface Deployment {
  id: string;
  services: Array<{ name: string; ty?: string }>;
}

export interface RegisterOptions {
  /** Replace the deployment registered at the same address even if its services changed. */
  force?: boolean;
  /** How long to keep trying while the endpoint (or the server) is still starting (ms). */
  retryForMs?: number;
}

export class RestateAdminError extends Error {
  constructor(readonly status: number, readonly body: string, action: string) {
    super(`${action} failed with ${status}: ${body.slice(0, 500)}`);
    this.name = 'RestateAdminError';
  }
}

const RETRY_INTERVAL_MS = 100;

/** Registers (or refreshes) the service endpoint at endpointUrl; retries briefly while it starts. */
export async function registerDeployment(adminUrl: string, endpointUrl: string, opts: RegisterOptions = {}): Promise<Deployment> {
  const deadline = performance.now() + (opts.retryForMs ?? 10_000);
  const body = JSON.stringify({ uri: endpointUrl, force: opts.force ?? false });
  for (;;) {
    const outcome = await postDeployment(adminUrl, body).catch((err: Error) => err);
    if (!(outcome instanceof Error)) return outcome;
    // A conflict (services changed without force) will not fix itself by waiting.
    const conflict = outcome instanceof RestateAdminError && outcome.status === 409;
    if (conflict || performance.now() + RETRY_INTERVAL_MS > deadline) throw outcome;
    await new Promise((r) => setTimeout(r, RETRY_INTERVAL_MS));
  }
}

async function postDeployment(adminUrl: string, body: string): Promise<Deployment> {
  const res = await restateFetch(adminUrl, '/deployments', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (!res.ok) throw new RestateAdminError(res.status, text, 'registering a deployment');
  return JSON.parse(text) as Deployment;
}

/** Runs a SQL query on the admin introspection API (tables such as sys_invocation, sys_journal). */
export async function queryInvocations<Row = Record<string, unknown>>(adminUrl: string, sql: string): Promise<Row[]> {
  const res = await restateFetch(adminUrl, '/query', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query: sql }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (!res.ok) throw new RestateAdminError(res.status, text, 'query');
  return (JSON.parse(text) as { rows: Row[] }).rows;
}

/** Columns of sys_invocation; the query API leaves out the ones that are null. */
export interface WorkflowInvocation {
  id: string;
  status: string;
  created_at: string;
  modified_at: string;
  journal_size: number;
  retry_count?: number;
  last_failure?: string;
  pinned_deployment_id?: string;
  /** once completed: 'success' or 'failure' */
  completion_result?: string;
  /** once completed with a failure: `[code] message`, e.g. `[500] run failed: sandbox_lost`, `[409] killed` */
  completion_failure?: string;
}

/** The main invocation of a workflow (e.g. the `run` workflow of one run id), or null if none is known. */
export async function findWorkflowInvocation(adminUrl: string, workflow: string, key: string): Promise<WorkflowInvocation | null> {
  const rows = await queryInvocations<WorkflowInvocation>(
    adminUrl,
    'SELECT id, status, created_at, modified_at, journal_size, retry_count, last_failure, pinned_deployment_id, completion_result, completion_failure ' +
      `FROM sys_invocation WHERE target_service_name = ${sqlString(workflow)} AND target_service_key = ${sqlString(key)} ` +
      `AND target_handler_name = 'run' ORDER BY created_at DESC LIMIT 1`,
  );
  return rows[0] ?? null;
}

/** Where a workflow's main invocation stands; completion_* are set once it completed (killed: `[409] killed`). */
export interface WorkflowInvocationState {
  key: string;
  id: string;
  status: string;
  completion_result?: string;
  completion_failure?: string;
}

/** The main invocations of the given workflow keys, by key; a key the engine does not know is absent. */
export async function workflowInvocationStates(adminUrl: string, workflow: string, keys: string[]): Promise<Map<string, WorkflowInvocationState>> {
  const states = new Map<string, WorkflowInvocationState>();
  if (keys.length === 0) return states;
  const rows = await queryInvocations<WorkflowInvocationState>(
    adminUrl,
    'SELECT target_service_key AS key, id, status, completion_result, completion_failure FROM sys_invocation ' +
      `WHERE target_service_name = ${sqlString(workflow)} AND target_handler_name = 'run' ` +
      `AND target_service_key IN (${keys.map(sqlString).join(', ')}) ORDER BY created_at`,
  );
  // The latest invocation of a key wins (a workflow key has one within the engine's retention).
  for (const row of rows) states.set(row.key, row);
  return states;
}

/** Quotes a value for use in a query string literal. */
export function sqlString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** Asks the invocation to stop; its handler sees a cancellation and may still clean up. */
export function cancelInvocation(adminUrl: string, invocationId: string): Promise<void> {
  return invocationCommand(adminUrl, invocationId, 'cancel');
}

/** Stops the invocation at once, without running any more of its code. */
export function killInvocation(adminUrl: string, invocationId: string): Promise<void> {
  return invocationCommand(adminUrl, invocationId, 'kill');
}

async function invocationCommand(adminUrl: string, invocationId: string, command: 'cancel' | 'kill'): Promise<void> {
  const res = await restateFetch(adminUrl, `/invocations/${encodeURIComponent(invocationId)}/${command}`, {
    method: 'PATCH',
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (!res.ok) throw new RestateAdminError(res.status, text, `${command} ${invocationId}`);
}
