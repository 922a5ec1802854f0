import type { RunEnding, TerminalSignal } from './run-types.ts';

export function failed(code: string, message: string, details?: unknown): RunEnding {
  return { status: 'failed', error: details === undefined ? { code, message } : { code, message, details } };
}

export function timedOut(timeoutSeconds: number): RunEnding {
  return { status: 'timeout', error: { code: 'run_timeout', message: `The run did not finish within ${timeoutSeconds} s.` } };
}

export function cancelled(reason?: string): RunEnding {
  return { status: 'cancelled', error: { code: 'run_cancelled', message: reason ?? 'The run was cancelled.' } };
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
