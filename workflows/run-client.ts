import './polyfill.ts';
import { signalMac, type SignalKind } from '../lib/signal-mac.ts';
import { randomUUID } from 'node:crypto';
import * as clients from '@restatedev/restate-sdk-clients';
import { failoverFetch, primaryAddress } from '../lib/restate-failover.ts';
import type { RunWorkflow } from './run.ts';
import { RUN_WORKFLOW_NAME, type ApprovalDecidedSignal, type ApprovalRequestedSignal, type RunWorkflowInput, type CancelSignal, type RunWorkflowResult, type SignalAck, type TerminalSignal } from './run-types.ts';

export interface RunSubmission {
  invocationId: string;
  /** False when the run's workflow had already been submitted (submitting again is harmless). */
  firstSubmission: boolean;
}

export interface RunWorkflowClient {
  /** Starts the run's workflow; the workflow key (run id) makes it idempotent. */
  submit(runId: string, input?: RunWorkflowInput): Promise<RunSubmission>;
  /** The runner's first event arrived. Resolves once the engine has durably taken the signal. */
  started(runId: string): Promise<void>;
  /** The runner reported its end (output already validated by the API); as started. */
  terminal(runId: string, payload: TerminalSignal): Promise<void>;
  cancel(runId: string, reason?: string): Promise<SignalAck>;
  /** The run's sidecar asked for an approval: the workflow starts its expiry timer and pauses the run's timeout. */
  approvalRequested(runId: string, request: ApprovalRequestedSignal): Promise<void>;
  /** A person decided the approval: the workflow's wait for it ends. */
  approvalDecided(runId: string, approvalId: string, status: ApprovalDecidedSignal['status']): Promise<void>;
  /** Waits for the workflow to finish and returns its result. */
  attach(runId: string): Promise<RunWorkflowResult>;
  /** The result if the workflow has finished, otherwise null (also when it was never submitted). */
  output(runId: string): Promise<RunWorkflowResult | null>;
}

const SEND_RETRY_MS = 15_000;

/** The engine refused a signal (4xx): retrying cannot help. */
class SignalRefused extends Error {}

/** Typed access to the `run` workflow through the Restate ingress (one address, or a cluster's comma-separated list: failover). */
export function createRunWorkflowClient(ingressUrl: string, opts: { signalKey?: Buffer; signalRetryMs?: number } = {}): RunWorkflowClient {
  const sign = <B extends object>(runId: string, kind: SignalKind, body: B): B & { mac?: string } =>
    opts.signalKey ? { ...body, mac: signalMac(opts.signalKey, runId, kind, body) } : body;
  // Only requests that are safe to repeat are retried by the library: workflow submissions and
  // calls carrying an idempotency key.
  const fetch = failoverFetch(ingressUrl);
  const base = primaryAddress(ingressUrl);
  const ingress = clients.connect({ url: base, fetch, retry: { maxAttempts: 5, maxDuration: 15_000 } });
  const workflow = (runId: string) => ingress.workflowClient<RunWorkflow>({ name: RUN_WORKFLOW_NAME }, runId);
  // A fresh key per logical call lets a retried request be answered from the first attempt.
  const once = <I>() => clients.rpc.opts<I, SignalAck>({ idempotencyKey: randomUUID() });

  /**
   * A one-way signal: the engine answers once the invocation is in its log (durable), without
   * waiting for the workflow to run it, so a runner's event is acknowledged in milliseconds and the
   * runner's next events are not held behind the engine's turn-around. Retried on network errors,
   * 429 and 5xx under the same idempotency key.
   */
  async function send(runId: string, handler: 'started' | 'terminal' | 'approvalRequested' | 'approvalDecided', body: object): Promise<void> {
    const url = `${base}/${RUN_WORKFLOW_NAME}/${encodeURIComponent(runId)}/${handler}/send`;
    const headers = { 'content-type': 'application/json', 'idempotency-key': randomUUID() };
    const payload = JSON.stringify(body);
    const deadline = Date.now() + (opts.signalRetryMs ?? SEND_RETRY_MS);
    for (let attempt = 0; ; attempt++) {
      let failure: Error;
      try {
        const res = await fetch(url, { method: 'POST', headers, body: payload });
        await res.arrayBuffer();
        if (res.ok) return;
        failure = new Error(`the engine answered ${res.status} to the ${handler} signal`);
        if (res.status !== 429 && res.status < 500) throw new SignalRefused(failure.message);
      } catch (err) {
        if (err instanceof SignalRefused) throw err;
        failure = err as Error;
      }
      const pause = 100 * 2 ** attempt;
      if (Date.now() + pause > deadline) throw failure;
      await new Promise((r) => setTimeout(r, pause));
    }
  }

  /**
   * A run that failed, timed out or was cancelled through the engine ends its workflow as a
   * failure on purpose; its result is still kept by the workflow. Other errors are rethrown.
   */
  async function orFailedResult(runId: string, err: unknown): Promise<RunWorkflowResult> {
    if (!(err instanceof clients.HttpCallError)) throw err;
    const kept = await Promise.resolve(workflow(runId).result()).catch(() => null);
    if (!kept) throw err;
    return kept;
  }

  return {
    async submit(runId, input) {
      const submission = await workflow(runId).workflowSubmit(input ?? {});
      return { invocationId: submission.invocationId, firstSubmission: submission.status === 'Accepted' };
    },
    started: (runId) => send(runId, 'started', sign(runId, 'started', {})),
    terminal: (runId, payload) => send(runId, 'terminal', sign(runId, 'terminal', payload)),
    approvalRequested: (runId, request) => send(runId, 'approvalRequested', sign(runId, 'approval_requested', request)),
    approvalDecided: (runId, approvalId, status) => send(runId, 'approvalDecided', sign(runId, 'approval_decided', { approvalId, status })),
    cancel: async (runId, reason) =>
      workflow(runId).cancel(sign(runId, 'cancel', reason === undefined ? {} : { reason }), once<(CancelSignal & { mac?: string }) | undefined>()),
    async attach(runId) {
      try {
        return await workflow(runId).workflowAttach();
      } catch (err) {
        return orFailedResult(runId, err);
      }
    },
    async output(runId) {
      try {
        const output = await workflow(runId).workflowOutput();
        return output.ready ? output.result : null;
      } catch (err) {
        if (err instanceof clients.HttpCallError && err.status === 404) return null;
        return orFailedResult(runId, err);
      }
    },
  };
}
