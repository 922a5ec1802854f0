import './polyfill.ts';
import { signalMac, type SignalKind } from '../lib/signal-mac.ts';
import { randomUUID } from 'node:crypto';
import * as clients from '@restatedev/restate-sdk-clients';
import type { RunWorkflow } from './run.ts';
import { RUN_WORKFLOW_NAME, type CancelSignal, type RunWorkflowResult, type SignalAck, type TerminalSignal } from './run-types.ts';

export interface RunSubmission {
  invocationId: string;
  /** False when the run's workflow had already been submitted (submitting again is harmless). */
  firstSubmission: boolean;
}

export interface RunWorkflowClient {
  /** Starts the run's workflow; the workflow key (run id) makes it idempotent. */
  submit(runId: string): Promise<RunSubmission>;
  /** The runner's first event arrived. */
  started(runId: string): Promise<SignalAck>;
  /** The runner reported its end (output already validated by the API). */
  terminal(runId: string, payload: TerminalSignal): Promise<SignalAck>;
  cancel(runId: string, reason?: string): Promise<SignalAck>;
  /** Waits for the workflow to finish and returns its result. */
  attach(runId: string): Promise<RunWorkflowResult>;
  /** The result if the workflow has finished, otherwise null (also when it was never submitted). */
  output(runId: string): Promise<RunWorkflowResult | null>;
}

/** Typed access to the `run` workflow through the Restate ingress. */
export function createRunWorkflowClient(ingressUrl: string, opts: { signalKey?: Buffer } = {}): RunWorkflowClient {
  const sign = <B extends object>(runId: string, kind: SignalKind, body: B): B & { mac?: string } =>
    opts.signalKey ? { ...body, mac: signalMac(opts.signalKey, runId, kind, body) } : body;
  // Only requests that are safe to repeat are retried by the library: workflow submissions and
  // calls carrying an idempotency key.
  const ingress = clients.connect({ url: ingressUrl, retry: { maxAttempts: 5, maxDuration: 15_000 } });
  const workflow = (runId: string) => ingress.workflowClient<RunWorkflow>({ name: RUN_WORKFLOW_NAME }, runId);
  // A fresh key per logical call lets a retried request be answered from the first attempt.
  const once = <I>() => clients.rpc.opts<I, SignalAck>({ idempotencyKey: randomUUID() });

  return {
    async submit(runId) {
      const submission = await workflow(runId).workflowSubmit();
      return { invocationId: submission.invocationId, firstSubmission: submission.status === 'Accepted' };
    },
    started: async (runId) => workflow(runId).started(sign(runId, 'started', {}), once<{ mac?: string } | undefined>()),
    terminal: async (runId, payload) => workflow(runId).terminal(sign(runId, 'terminal', payload), once<TerminalSignal & { mac?: string }>()),
    cancel: async (runId, reason) =>
      workflow(runId).cancel(sign(runId, 'cancel', reason === undefined ? {} : { reason }), once<(CancelSignal & { mac?: string }) | undefined>()),
    attach: (runId) => workflow(runId).workflowAttach(),
    async output(runId) {
      try {
        const output = await workflow(runId).workflowOutput();
        return output.ready ? output.result : null;
      } catch (err) {
        if (err instanceof clients.HttpCallError && err.status === 404) return null;
        throw err;
      }
    },
  };
}
