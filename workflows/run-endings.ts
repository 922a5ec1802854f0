import { TerminalError } from '@restatedev/restate-sdk';
import type { RunEnding, TerminalSignal } from './run-types.ts';

/** A cancellation by an operator through the engine (its admin API or UI), not through the platform's API. */
export const OPERATOR_CANCEL_CODE = 'run_cancelled_by_operator';

/**
 * How a run's workflow ends when the run failed or timed out: a failure in the engine, after the
 * ending is recorded and the sandbox torn down. Expected, so logged quietly (workflows/endpoint.ts).
 */
export class RunEndedBadly extends TerminalError {
  constructor(status: 'failed' | 'timeout', code: string | undefined) {
    super(`run ${status}: ${code ?? 'unknown'}`);
    this.name = 'RunEndedBadly';
  }
}

export function failed(code: string, message: string, details?: unknown): RunEnding {
  return { status: 'failed', error: details === undefined ? { code, message } : { code, message, details } };
}

export function timedOut(timeoutSeconds: number): RunEnding {
  return { status: 'timeout', error: { code: 'run_timeout', message: `The run did not finish within ${timeoutSeconds} s.` } };
}

export function cancelled(reason?: string, code: 'run_cancelled' | typeof OPERATOR_CANCEL_CODE = 'run_cancelled'): RunEnding {
  return { status: 'cancelled', error: { code, message: reason ?? 'The run was cancelled.' } };
}

export function bootTimedOut(bootSeconds: number): RunEnding {
  return failed('boot_timeout', `The sandbox sent no event within ${bootSeconds} s of booting.`);
}

export function sandboxLost(): RunEnding {
  return failed('sandbox_lost', 'The sandbox is gone.');
}

export function heartbeatLost(silentMs: number): RunEnding {
  return failed('heartbeat_lost', `No event from the sandbox for ${Math.round(silentMs / 1000)} s.`);
}

export function fromTerminalSignal(signal: TerminalSignal): RunEnding {
  return signal.status === 'success'
    ? { status: 'success', output: signal.output }
    : { status: 'failed', error: signal.error };
}

/** Checks the shape of a terminal payload at the workflow's edge; returns a reason when it is unusable. */
export function terminalSignalProblem(payload: unknown): string | null {
  if (typeof payload !== 'object' || payload === null) return 'payload must be an object';
  const { status } = payload as { status?: unknown };
  if (status === 'success') return 'output' in payload ? null : 'a success needs output';
  if (status === 'failed') {
    const { error } = payload as { error?: { code?: unknown; message?: unknown } };
    if (typeof error?.code === 'string' && typeof error.message === 'string') return null;
    return 'a failure needs error.code and error.message';
  }
  return "status must be 'success' or 'failed'";
}
