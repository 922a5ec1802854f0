// A worker's own sandbox host (issue 31): a Restate service named for the worker
// (`sandboxHost_<workerId>`), registered only at that worker's endpoint, so the engine routes every
// call to the one process whose data directory holds the sandbox. Its handlers are the run
// workflow's sandbox steps; each first checks the run is placed on this worker and refuses it
// otherwise (403), so no worker acts on another's sandbox.
import './polyfill.ts';
import * as restate from '@restatedev/restate-sdk';
import { TerminalError, type Context, type RunOptions } from '@restatedev/restate-sdk';
import { isActivityFailure, type BootCheck, type BootContext, type ParkOutcome, type RunActivities, type RunEnding, type SandboxRef } from './run-types.ts';
import { failed } from './run-endings.ts';

export const SANDBOX_HOST_PREFIX = 'sandboxHost_';

export function sandboxHostName(workerId: string): string {
  return `${SANDBOX_HOST_PREFIX}${workerId}`;
}

/** One boot attempt as the workflow journals it: the sandbox, a refusal, or a failure to retry. */
export type BootAttempt = { sandbox: SandboxRef } | { ending: RunEnding } | { error: string; ms: number };

export interface SandboxCall {
  runId: string;
  sandboxId: string;
}

export interface BootCall extends BootContext {
  runId: string;
}

export interface ParkCall extends SandboxCall {
  approvalId: string;
}

/** Starts a sandbox; a refusal is an ending, anything else an error the workflow's boot budget retries. */
export async function bootAttempt(activities: RunActivities, runId: string, context: BootContext): Promise<BootAttempt> {
  const began = Date.now();
  try {
    return { sandbox: await activities.boot(runId, context) };
  } catch (err) {
    // A refused boot is journaled as a result, so it is never retried.
    if (isActivityFailure(err)) return { ending: failed(err.code, err.message, err.details) };
    return { error: err instanceof Error ? err.message : String(err), ms: Date.now() - began };
  }
}

const CHECK_RETRY: Pick<RunOptions<unknown>, 'maxRetryAttempts' | 'maxRetryDuration' | 'initialRetryInterval' | 'maxRetryInterval'> = { maxRetryAttempts: 6, maxRetryDuration: 60_000, initialRetryInterval: 500, maxRetryInterval: 10_000 };
const TEARDOWN_RETRY: Pick<RunOptions<unknown>, 'maxRetryDuration' | 'initialRetryInterval' | 'maxRetryInterval'> = { maxRetryDuration: 300_000, initialRetryInterval: 500, maxRetryInterval: 30_000 };

function validId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= 200;
}

export function createSandboxHostService(workerId: string, activities: RunActivities, placedHere: (runId: string) => Promise<boolean>) {
  async function mine(ctx: Context, call: Partial<SandboxCall> | undefined, withSandbox: boolean): Promise<void> {
    if (!validId(call?.runId) || (withSandbox && !validId(call?.sandboxId))) throw new TerminalError('invalid sandbox host call', { errorCode: 400 });
    const here = await ctx.run('placement', () => placedHere(call.runId!), CHECK_RETRY);
    if (!here) throw new TerminalError(`run ${call.runId} is not placed on worker ${workerId}: it does not act on another worker's sandbox`, { errorCode: 403 });
  }
  return restate.service({
    name: sandboxHostName(workerId),
    handlers: {
      boot: async (ctx: Context, call: BootCall): Promise<BootAttempt> => {
        await mine(ctx, call as Partial<SandboxCall>, false);
        const context: BootContext = { ...(call.traceparent ? { traceparent: call.traceparent } : {}), ...(call.wake === true ? { wake: true } : {}) };
        return ctx.run('boot', () => bootAttempt(activities, call.runId, context));
      },
      bootCheck: async (ctx: Context, call: SandboxCall): Promise<BootCheck> => {
        await mine(ctx, call, true);
        return ctx.run('boot check', () => activities.bootCheck(call.runId, call.sandboxId), CHECK_RETRY);
      },
      sandboxAlive: async (ctx: Context, call: SandboxCall): Promise<boolean | 'ending' | 'ended'> => {
        await mine(ctx, call, true);
        return ctx.run('sandbox alive', () => activities.sandboxAlive(call.runId, call.sandboxId), CHECK_RETRY);
      },
      park: async (ctx: Context, call: ParkCall): Promise<ParkOutcome> => {
        await mine(ctx, call, true);
        if (!validId(call.approvalId)) throw new TerminalError('invalid sandbox host call', { errorCode: 400 });
        if (!activities.park) return { parked: false };
        return ctx.run('park', () => activities.park!(call.runId, call.sandboxId, call.approvalId), TEARDOWN_RETRY);
      },
      teardown: async (ctx: Context, call: SandboxCall): Promise<void> => {
        await mine(ctx, call, true);
        await ctx.run('teardown', () => activities.teardown(call.runId, call.sandboxId), TEARDOWN_RETRY);
      },
    },
  });
}
