import './polyfill.ts';
import { signalMacValid, type SignalKind } from '../lib/signal-mac.ts';
import * as restate from '@restatedev/restate-sdk';
import { CancelledError, RestatePromise, TerminalError, TimeoutError, type RunOptions, type WorkflowContext, type WorkflowSharedContext } from '@restatedev/restate-sdk';
import {
  OPERATOR_CANCEL_CODE, RunEndedBadly, bootTimedOut, cancelled, failed, fromTerminalSignal, heartbeatLost, sandboxLost, terminalSignalProblem, timedOut,
} from './run-endings.ts';
import {
  RESULT_STATE, RUN_WORKFLOW_NAME, approvalPromise, approvalRequestedPromise,
  type ApprovalDecidedSignal, type ApprovalRequestedSignal, type BootCheck, type BootContext, type CancelSignal, type FleetActivities, type ParkOutcome, type RecordedEnding, type RunActivities, type RunEnding, type RunWorkflowInput, type RunWorkflowResult, type SandboxRef, type SignalAck, type TerminalSignal,
} from './run-types.ts';
import { runTrace, type RunTrace } from './run-trace.ts';
import { bootAttempt, sandboxHostName, type BootAttempt } from './sandbox-host.ts';

type StepName = 'boot' | 'liveness' | 'finalize' | 'teardown' | 'park';
export type StepRetry = Pick<RunOptions<unknown>, 'maxRetryAttempts' | 'maxRetryDuration' | 'initialRetryInterval' | 'maxRetryInterval' | 'retryIntervalFactor'>;

export interface RunWorkflowOptions {
  /** Retry policy per step; every step gives up eventually so a broken activity cannot hold a run. */
  retry?: Partial<Record<StepName, StepRetry>>;
  /** When set, signals must carry a MAC made with this key (lib/signal-mac.ts). */
  signalKey?: Buffer;
  /**
   * The fleet of sandbox hosts: each run is placed on a worker, and the steps that touch its sandbox
   * go to that worker's own service. Unset: every step runs here (one worker).
   */
  fleet?: FleetActivities;
}

/** A signal as sent: its body plus the MAC that shows the platform sent it. */
interface SignedSignal {
  mac?: string;
}

const DEFAULT_RETRY: Record<StepName, StepRetry> = {
  boot: { maxRetryAttempts: 5, maxRetryDuration: 120_000, initialRetryInterval: 500, maxRetryInterval: 10_000 },
  liveness: { maxRetryAttempts: 6, maxRetryDuration: 60_000, initialRetryInterval: 500, maxRetryInterval: 10_000 },
  // The ending is only recorded here, so this one is patient before it gives up.
  finalize: { maxRetryDuration: 600_000, initialRetryInterval: 500, maxRetryInterval: 30_000 },
  teardown: { maxRetryDuration: 300_000, initialRetryInterval: 500, maxRetryInterval: 30_000 },
  park: { maxRetryAttempts: 3, maxRetryDuration: 120_000, initialRetryInterval: 1_000, maxRetryInterval: 10_000 },
};

/** The runner's signals, each a durable promise of the workflow resolved by a shared handler. */
interface Signals {
  started: RestatePromise<StartedSignal>;
  terminal: RestatePromise<TerminalSignal>;
  cancel: RestatePromise<CancelSignal>;
}

/** How many times a run is booted when its sandboxes go with workers that die before it starts. */
const MAX_BOOTS = 3;

/** What a call to another worker's sandbox host gave: its answer, or the worker was lost meanwhile. */
type Hosted<T> = { answer: T } | { lost: true };

/**
 * How the boot phase ends: the run started (from then on its liveness is watched), it ended, it was
 * finalized elsewhere, or its sandbox went with a worker that died before the first event.
 */
type StartOutcome =
  | { startedAt: number }
  | { ending: RunEnding; recorded?: RecordedEnding }
  | { endedElsewhere: true }
  | { lostWithWorker: true };

/** When the started signal was taken in; the execution phase's liveness counts from there. */
interface StartedSignal {
  at: number;
}

/** How long a workflow whose run was finalized elsewhere waits for the signal that follows. */
const ENDED_ELSEWHERE_GRACE_MS = 5_000;

/** What the execution phase's liveness remembers between ticks; all from journaled values. */
interface LivenessView {
  tickMs: number;
  staleMs: number;
  /** how much later than its tick a probe may answer before the platform counts as not listening */
  lateMs: number;
  /** when the last probe answered (the execution's start before the first) */
  lookedAt: number;
  /** silence is counted from here at the earliest */
  recordableFrom: number;
}

/**
 * The sandbox the run holds now: the one boot started, none while the run is parked, a fresh one
 * once it was woken. finish tears down whichever it holds at the end.
 */
interface Held {
  sandbox: SandboxRef | null;
}

/** What finish leaves: the workflow's result, and the ending the run holds now (its own or an earlier one). */
interface FinishOutcome {
  result: RunWorkflowResult;
  recorded: RecordedEnding;
}

type Woken =
  | { by: 'started'; at: number }
  | { by: 'boot check' }
  | { by: 'terminal'; signal: TerminalSignal }
  | { by: 'cancel'; signal: CancelSignal }
  | { by: 'run timeout' }
  | { by: 'liveness tick' }
  | { by: 'approval requested'; request: ApprovalRequestedSignal }
  | { by: 'approval decided' }
  | { by: 'approval expired' }
  | { by: 'park' };

/** Builds the `run` workflow (key = run id) over the given activities. */
export function createRunWorkflow(activities: RunActivities, options: RunWorkflowOptions = {}) {
  const retry = { ...DEFAULT_RETRY, ...options.retry };
  const fleet = options.fleet;

  /** The worker holding the sandbox when it is not the one serving this workflow (a call then goes there). */
  function elsewhere(workerId: string | undefined): string | null {
    return fleet && workerId && workerId !== fleet.selfId ? workerId : null;
  }

  /**
   * Calls a handler of another worker's sandbox host. The engine delivers the call to that worker
   * alone and retries it while the worker is down; every `checkMs` the workflow looks whether the
   * worker was lost (its heartbeat stale past the fleet's window), and then gives the call up.
   */
  async function onHost<T>(ctx: WorkflowContext, workerId: string, method: string, parameter: unknown): Promise<Hosted<T>> {
    const call = ctx.genericCall<unknown, T>({
      service: sandboxHostName(workerId), method, parameter, inputSerde: restate.serde.json, outputSerde: restate.serde.json,
    });
    for (;;) {
      try {
        return { answer: await call.orTimeout(fleet!.checkMs) };
      } catch (err) {
        if (!(err instanceof TimeoutError)) throw err;
      }
      const lost = await ctx.run('worker lost?', () => fleet!.workerLost(workerId), retry.liveness);
      if (lost) {
        ctx.console.warn(`worker ${workerId} was lost; its ${method} call is given up`);
        ctx.cancel(await call.invocationId);
        return { lost: true };
      }
    }
  }

  /** With a signal key, an unsigned or wrongly signed signal is refused (see lib/signal-mac.ts). */
  function authenticate(runId: string, kind: SignalKind, body: unknown, mac: unknown): void {
    if (options.signalKey && !signalMacValid(options.signalKey, runId, kind, body, mac)) {
      throw new TerminalError(`unauthenticated ${kind} signal`, { errorCode: 401 });
    }
  }

  async function run(ctx: WorkflowContext, input?: RunWorkflowInput): Promise<RunWorkflowResult> {
    const runId = ctx.key;
    const trace = runTrace(runId, input?.trace);
    const signals = listen(ctx);
    const engine: EngineCancel = { cancelled: false };
    for (let boots = 1; ; boots++) {
      const booted = await boot(ctx, runId, trace).catch(unlessCancelled(engine, { ending: cancelledByOperator() }));
      if ('ending' in booted) return conclude(ctx, await finish(ctx, runId, trace, null, booted.ending, engine), engine.cancelled);
      const { sandbox } = booted;
      const start = await waitForStart(ctx, runId, trace, signals, sandbox).catch(unlessCancelled(engine, { ending: cancelledByOperator() } as StartOutcome));
      if ('lostWithWorker' in start && boots < MAX_BOOTS) {
        // The worker that started the sandbox died before the run's first event (the platform was
        // killed and restarted): the run has not started, so it is booted again rather than failed.
        ctx.console.warn(`the sandbox of run ${runId} went with a worker that died before the run started; booting it again`);
        await teardown(ctx, runId, trace, sandbox, engine);
        continue;
      }
      let ending: RunEnding;
      const held: Held = { sandbox };
      if ('startedAt' in start) {
        ending = await watchExecution(ctx, runId, trace, signals, held, start.startedAt).catch(unlessCancelled(engine, cancelledByOperator()));
      } else if ('endedElsewhere' in start) {
        ending = await endedElsewhere(ctx, signals).catch(unlessCancelled(engine, cancelledByOperator()));
      } else if ('lostWithWorker' in start) {
        ending = sandboxLost();
      } else {
        ending = start.ending;
      }
      return conclude(ctx, await finish(ctx, runId, trace, held.sandbox, ending, engine, 'recorded' in start ? start.recorded : undefined), engine.cancelled);
    }
  }

  /**
   * After finalize and teardown: a run recorded failed or timed out (and a cancellation through the
   * engine) ends the invocation as a failure, so the engine's UI lists it as such. The result stays
   * readable through the `result` handler.
   */
  async function conclude(ctx: WorkflowContext, outcome: FinishOutcome, cancelledByEngine: boolean): Promise<RunWorkflowResult> {
    const { result, recorded } = outcome;
    if (recorded.status === 'failed' || recorded.status === 'timeout') {
      ctx.set(RESULT_STATE, result);
      throw new RunEndedBadly(recorded.status, recorded.code);
    }
    if (cancelledByEngine) {
      ctx.set(RESULT_STATE, result);
      throw new CancelledError();
    }
    return result;
  }

  /**
   * Boots the sandbox, retrying a failed attempt within the step's budget. Each attempt's outcome is
   * journaled, and the budget counts attempts and the time spent in them and in the waits between
   * them, never time in which no worker ran the workflow: runs waiting to start when the platform
   * was killed get their full budget after the restart.
   */
  async function boot(ctx: WorkflowContext, runId: string, trace: RunTrace, wake = false): Promise<{ sandbox: SandboxRef } | { ending: RunEnding }> {
    const context: BootContext = { traceparent: trace.traceparent, ...(wake ? { wake: true } : {}) };
    const policy = retry.boot;
    const maxAttempts = Math.max(1, policy.maxRetryAttempts ?? DEFAULT_RETRY.boot.maxRetryAttempts!);
    const maxSpentMs = durationMs(policy.maxRetryDuration ?? DEFAULT_RETRY.boot.maxRetryDuration!);
    let delayMs = durationMs(policy.initialRetryInterval ?? DEFAULT_RETRY.boot.initialRetryInterval!);
    let spentMs = 0;
    for (let attempt = 1; ; attempt++) {
      const outcome = await bootOnce(ctx, runId, trace, context);
      if ('sandbox' in outcome || 'ending' in outcome) return outcome;
      spentMs += outcome.ms;
      ctx.console.warn(`boot attempt ${attempt} of run ${runId} failed: ${outcome.error}`);
      if (attempt >= maxAttempts || spentMs + delayMs > maxSpentMs) {
        const tried = attempt === 1 ? 'one attempt' : `${attempt} attempts`;
        return { ending: failed('boot_failed', `The sandbox could not be started (${tried} over ${Math.round(spentMs / 1000)} s); the last failed with: ${outcome.error}`) };
      }
      await ctx.sleep(delayMs, 'boot retry');
      spentMs += delayMs;
      delayMs = Math.min(delayMs * (policy.retryIntervalFactor ?? 2), durationMs(policy.maxRetryInterval ?? DEFAULT_RETRY.boot.maxRetryInterval!));
    }
  }

  /**
   * One boot attempt: with a fleet, the run is placed on a worker first, and booted there (here,
   * without a hop, when that is the worker serving this workflow).
   */
  async function bootOnce(ctx: WorkflowContext, runId: string, trace: RunTrace, context: BootContext): Promise<BootAttempt> {
    const local = () => ctx.run('boot', () => trace.step('boot', () => bootAttempt(activities, runId, context)));
    if (!fleet) return local();
    const placed = await ctx.run('place', () => fleet.place(runId), retry.liveness).catch((err) => {
      if (!isGiveUp(err)) throw err;
      return { error: err.message };
    });
    if ('error' in placed) return { error: placed.error, ms: 0 };
    const { workerId } = placed;
    const outcome = elsewhere(workerId)
      ? await onHost<BootAttempt>(ctx, workerId, 'boot', { runId, ...context }).then(
        (hosted) => ('lost' in hosted ? lostWhileBooting(ctx, runId, workerId, context) : hosted.answer),
        (err) => {
          if (!isGiveUp(err)) throw err;
          return { error: err.message, ms: 0 };
        },
      )
      : await local();
    if ('ending' in outcome && 'error' in outcome.ending && outcome.ending.error.code === 'run_not_pending' && !context.wake) return startedElsewhere(ctx, runId, outcome);
    return 'sandbox' in outcome ? { sandbox: { ...outcome.sandbox, workerId } } : outcome;
  }

  /**
   * A boot refused because the run is no longer pending. A run found running was started by a
   * sandbox this workflow holds no reference to: one a lost worker booted (its docker sandbox lives on
   * the host after the worker died, and its first event came after the loss was judged). The run
   * went with that worker: `sandbox_lost`, as for a run started before the loss. An ended run keeps
   * the refusal (its ending was recorded already).
   */
  async function startedElsewhere(ctx: WorkflowContext, runId: string, refused: BootAttempt): Promise<BootAttempt> {
    const status = await ctx.run('run status', () => fleet!.runStatus(runId), retry.liveness).catch((err) => {
      if (!isGiveUp(err)) throw err;
      return null;
    });
    return status === 'running' ? { ending: sandboxLost() } : refused;
  }

  /**
   * The worker booting the sandbox was lost before it answered. It may have started the sandbox, and
   * the run with it (its first event accepted), before it died: a started run is lost with the worker
   * (`sandbox_lost`); one not started is booted again elsewhere. (A woken run is running throughout:
   * its boot is retried.)
   */
  async function lostWhileBooting(ctx: WorkflowContext, runId: string, workerId: string, context: BootContext): Promise<BootAttempt> {
    const status = context.wake ? null : await ctx.run('run status', () => fleet!.runStatus(runId), retry.liveness).catch((err) => {
      if (!isGiveUp(err)) throw err;
      return null;
    });
    if (status === 'running') return { ending: sandboxLost() };
    return { error: `worker ${workerId} was lost while booting the sandbox`, ms: 0 };
  }

  /** The boot phase's look at the run and its sandbox, on the worker that holds the sandbox. */
  async function bootProbe(ctx: WorkflowContext, runId: string, trace: RunTrace, sandbox: SandboxRef): Promise<BootCheck & { checkedAt: number }> {
    const host = elsewhere(sandbox.workerId);
    if (!host) {
      return ctx.run('boot check', () => trace.step('boot check', async () => ({ ...(await activities.bootCheck(runId, sandbox.sandboxId)), checkedAt: Date.now() })), retry.liveness);
    }
    const hosted = await onHost<BootCheck>(ctx, host, 'bootCheck', { runId, sandboxId: sandbox.sandboxId });
    if ('answer' in hosted) return { ...hosted.answer, checkedAt: await ctx.date.now() };
    // The worker went with the sandbox: a run that had not started is booted elsewhere, a started one lost.
    const run = await ctx.run('run status', () => fleet!.runStatus(runId), retry.liveness);
    return { run, sandbox: run === 'pending' ? 'unknown' : 'gone', checkedAt: await ctx.date.now() };
  }

  /**
   * Boot phase: the runner's first event, a terminal or cancel signal, or a check every liveness
   * tick. A check finds a run whose first event was accepted (its signal follows), a sandbox that is
   * gone (`sandbox_lost`, at once) or that went with a worker that died, and the boot deadline.
   * The deadline counts only time in which the platform could record events: a check that answers
   * late (the database stalled, the worker was down) shows it was not listening, and that span is
   * not counted. A boot deadline is recorded only while the run is still pending.
   */
  async function waitForStart(ctx: WorkflowContext, runId: string, trace: RunTrace, signals: Signals, sandbox: SandboxRef): Promise<StartOutcome> {
    const bootMs = seconds(sandbox.bootSeconds);
    const heartbeatMs = seconds(sandbox.heartbeatSeconds);
    const tickMs = Math.min(heartbeatMs * 2, bootMs);
    const lateMs = heartbeatMs / 2;
    let lookedAt = await ctx.date.now();
    let countedMs = 0;
    for (;;) {
      const waitMs = Math.max(1, Math.min(tickMs, bootMs - countedMs));
      const woken = await firstOf([
        signals.started.map((signal) => ({ by: 'started', at: signal!.at })),
        signals.terminal.map((signal) => ({ by: 'terminal', signal: signal! })),
        signals.cancel.map((signal) => ({ by: 'cancel', signal: signal! })),
        ctx.sleep(waitMs, 'boot check').map(() => ({ by: 'boot check' })),
      ]);
      if (woken.by === 'started') return { startedAt: woken.at };
      if (woken.by === 'terminal') return { ending: fromTerminalSignal(woken.signal) };
      if (woken.by === 'cancel') return { ending: cancelled(woken.signal.reason) };
      let probe: BootCheck & { checkedAt: number };
      try {
        probe = await bootProbe(ctx, runId, trace, sandbox);
      } catch (err) {
        if (!isGiveUp(err)) throw err;
        // The platform could not look (its database unreachable): that time is not the sandbox's.
        ctx.console.warn(`the boot of run ${runId} could not be checked: ${err.message}`);
        lookedAt = await ctx.date.now();
        continue;
      }
      const late = probe.checkedAt - (lookedAt + waitMs) > lateMs;
      if (!late) countedMs += probe.checkedAt - lookedAt;
      lookedAt = probe.checkedAt;
      // a started run whose worker was lost (its sandbox went with it) is lost, not booted again
      if (probe.run === 'running' && probe.sandbox === 'gone') return { ending: sandboxLost() };
      if (probe.run === 'running') return { startedAt: probe.checkedAt };
      if (probe.run === 'ended') return { endedElsewhere: true };
      if (probe.run === 'gone') return { ending: sandboxLost() };
      if (probe.sandbox === 'unknown') return { lostWithWorker: true };
      if (probe.sandbox === 'gone') return { ending: sandboxLost() };
      // A sandbox whose sidecar holds the run's end is delivering it: not judged by the deadline.
      if (probe.sandbox === 'ending' || countedMs < bootMs) continue;
      const ending = bootTimedOut(sandbox.bootSeconds);
      const { finalized, recorded } = await ctx.run('finalize', () => trace.step('finalize', () => activities.finalize(runId, ending)), retry.finalize);
      if (finalized) return { ending, recorded: { status: 'failed', code: 'boot_timeout' } };
      // The first event was accepted just now (its signal follows), or the run ended otherwise.
      if (recorded?.status === 'running' || recorded?.status === 'pending') return { startedAt: await ctx.date.now() };
      return { endedElsewhere: true };
    }
  }

  /** Execution phase: a terminal or cancel signal, the run's timeout, or a failed liveness check. */
  async function watchExecution(ctx: WorkflowContext, runId: string, trace: RunTrace, signals: Signals, held: Held, executionStartedAt: number): Promise<RunEnding> {
    const sandbox = held.sandbox!;
    // Time spent waiting for a person's approval does not count: the timeout restarts with what is left.
    let timeoutLeftMs = seconds(sandbox.timeoutSeconds);
    let timeoutFrom = executionStartedAt;
    let approvals = 1;
    let nextApproval = ctx.promise<ApprovalRequestedSignal>(approvalRequestedPromise(approvals)).get();
    const heartbeatMs = seconds(sandbox.heartbeatSeconds);
    const view: LivenessView = {
      tickMs: heartbeatMs * 2,
      staleMs: heartbeatMs * 3,
      lateMs: heartbeatMs / 2,
      lookedAt: executionStartedAt,
      recordableFrom: executionStartedAt,
    };
    for (;;) {
      // One timer per tick keeps the journal proportional to the run's length: the liveness tick,
      // cut short to the run's timeout when that comes first (the time now is the last look's, or
      // the restart of the timeout after an approval: both journaled).
      const leftMs = timeoutFrom + timeoutLeftMs - Math.max(view.lookedAt, timeoutFrom);
      if (leftMs <= 0) return timedOut(sandbox.timeoutSeconds);
      const untilTimeout = leftMs <= view.tickMs;
      const woken = await firstOf([
        signals.terminal.map((signal) => ({ by: 'terminal', signal: signal! })),
        signals.cancel.map((signal) => ({ by: 'cancel', signal: signal! })),
        nextApproval.map((request) => ({ by: 'approval requested', request: request! })),
        untilTimeout
          ? ctx.sleep(leftMs, 'run timeout').map(() => ({ by: 'run timeout' }))
          : ctx.sleep(view.tickMs, 'liveness tick').map(() => ({ by: 'liveness tick' })),
      ]);
      if (woken.by === 'terminal') return fromTerminalSignal(woken.signal);
      if (woken.by === 'cancel') return cancelled(woken.signal.reason);
      if (woken.by === 'run timeout') return timedOut(sandbox.timeoutSeconds);
      if (woken.by === 'approval requested') {
        const waitFrom = await ctx.date.now();
        timeoutLeftMs -= waitFrom - timeoutFrom;
        const ended = await awaitApproval(ctx, runId, trace, signals, held, view, woken.request);
        if (ended) return ended;
        timeoutFrom = await ctx.date.now();
        timeoutLeftMs = Math.max(1, timeoutLeftMs);
        approvals += 1;
        nextApproval = ctx.promise<ApprovalRequestedSignal>(approvalRequestedPromise(approvals)).get();
        continue;
      }
      const lost = await checkLiveness(ctx, runId, trace, held.sandbox!, view);
      if (lost === 'ended') return endedElsewhere(ctx, signals);
      if (lost) return lost;
    }
  }

  /**
   * The run waits for a person's decision on a tool call: on the durable promise named for the
   * approval (what an operator sees), bounded by the request's own timeout, a durable timer whose
   * end expires the request. The sandbox is held at first, so its liveness is still watched; the
   * run's timeout is not. Past the park delay the run is parked (its state checkpointed, its
   * sandbox stopped): it then waits on the promise and the timer alone, and the decision (or the
   * expiry) wakes it in a fresh sandbox started from that checkpoint. Answers the run's ending when
   * it ended while waiting, else null.
   */
  async function awaitApproval(
    ctx: WorkflowContext, runId: string, trace: RunTrace, signals: Signals, held: Held, view: LivenessView, request: ApprovalRequestedSignal,
  ): Promise<RunEnding | null> {
    const decided = ctx.promise<ApprovalDecidedSignal>(approvalPromise(request.approvalId)).get();
    const expiry = ctx.sleep(seconds(request.timeoutSeconds), `approval ${request.approvalId} expiry`);
    const parkAfter = held.sandbox?.parkAfterSeconds && activities.park ? ctx.sleep(seconds(held.sandbox.parkAfterSeconds), `park ${request.approvalId}`) : null;
    let parkTried = false;
    for (;;) {
      const sandbox = held.sandbox!;
      const woken = await firstOf([
        decided.map(() => ({ by: 'approval decided' })),
        expiry.map(() => ({ by: 'approval expired' })),
        signals.terminal.map((signal) => ({ by: 'terminal', signal: signal! })),
        signals.cancel.map((signal) => ({ by: 'cancel', signal: signal! })),
        ...(parkAfter && !parkTried ? [parkAfter.map((): Woken => ({ by: 'park' }))] : []),
        ctx.sleep(view.tickMs, 'liveness tick').map(() => ({ by: 'liveness tick' })),
      ]);
      if (woken.by === 'approval decided') return null;
      if (woken.by === 'terminal') return fromTerminalSignal(woken.signal);
      if (woken.by === 'cancel') return cancelled(woken.signal.reason);
      if (woken.by === 'approval expired') {
        await ctx.run('expire approval', () => activities.expireApproval(runId, request.approvalId), retry.finalize);
        return null;
      }
      if (woken.by === 'park') {
        parkTried = true;
        if (await park(ctx, runId, trace, sandbox, request.approvalId)) {
          held.sandbox = null;
          return waitParked(ctx, runId, trace, signals, held, view, request, decided, expiry);
        }
        continue;
      }
      const lost = await checkLiveness(ctx, runId, trace, sandbox, view);
      if (lost === 'ended') return endedElsewhere(ctx, signals);
      if (lost) return lost;
    }
  }

  /** Parks the run (see RunActivities.park); a park that gives up leaves the run holding its sandbox. */
  async function park(ctx: WorkflowContext, runId: string, trace: RunTrace, sandbox: SandboxRef, approvalId: string): Promise<boolean> {
    try {
      const host = elsewhere(sandbox.workerId);
      if (host) {
        // the worker holding the sandbox parks it; a worker lost meanwhile leaves it to liveness
        const hosted = await onHost<ParkOutcome>(ctx, host, 'park', { runId, sandboxId: sandbox.sandboxId, approvalId });
        return 'answer' in hosted && hosted.answer.parked;
      }
      const { parked } = await ctx.run('park', () => trace.step('park', () => activities.park!(runId, sandbox.sandboxId, approvalId)), retry.park);
      return parked;
    } catch (err) {
      if (!isGiveUp(err)) throw err;
      ctx.console.warn(`run ${runId} could not be parked: ${err.message}`);
      return false;
    }
  }

  /**
   * A parked run holds no sandbox: it waits on the approval's durable promise and expiry timer (and
   * a cancel) only, so the engine shows it suspended on them. The decision or the expiry boots a
   * fresh sandbox from the run's checkpoint (the same run, still running), whose liveness is
   * watched from its boot on.
   */
  async function waitParked(
    ctx: WorkflowContext, runId: string, trace: RunTrace, signals: Signals, held: Held, view: LivenessView, request: ApprovalRequestedSignal,
    decided: RestatePromise<ApprovalDecidedSignal>, expiry: RestatePromise<void>,
  ): Promise<RunEnding | null> {
    const woken = await firstOf([
      decided.map(() => ({ by: 'approval decided' })),
      expiry.map(() => ({ by: 'approval expired' })),
      signals.cancel.map((signal) => ({ by: 'cancel', signal: signal! })),
    ]);
    if (woken.by === 'cancel') return cancelled(woken.signal.reason);
    if (woken.by === 'approval expired') await ctx.run('expire approval', () => activities.expireApproval(runId, request.approvalId), retry.finalize);
    const booted = await boot(ctx, runId, trace, true);
    if ('ending' in booted) return booted.ending;
    held.sandbox = booted.sandbox;
    // the fresh sandbox has the boot allowance before its silence counts (a lost one is seen at once)
    const wokenAt = await ctx.date.now();
    view.lookedAt = wokenAt;
    view.recordableFrom = wokenAt + seconds(booted.sandbox.bootSeconds);
    return null;
  }

  /**
   * The API recorded the run's ending before its signal reached this workflow: the signal follows
   * at once, so it is awaited briefly; should it be lost, the recorded ending stands all the same
   * (finish finds it) and the sandbox is torn down.
   */
  async function endedElsewhere(ctx: WorkflowContext, signals: Signals): Promise<RunEnding> {
    const woken = await firstOf([
      signals.terminal.map((signal) => ({ by: 'terminal', signal: signal! })),
      signals.cancel.map((signal) => ({ by: 'cancel', signal: signal! })),
      ctx.sleep(ENDED_ELSEWHERE_GRACE_MS, 'ended elsewhere').map(() => ({ by: 'liveness tick' })),
    ]);
    if (woken.by === 'terminal') return fromTerminalSignal(woken.signal);
    if (woken.by === 'cancel') return cancelled(woken.signal.reason);
    return sandboxLost();
  }

  /**
   * Judges the sandbox's silence only over time in which the platform could record its events: a
   * probe that answers late (the database stalled or refused, the engine was held up) shows that
   * the platform itself was not listening, so silence counts again from that answer.
   */
  async function checkLiveness(ctx: WorkflowContext, runId: string, trace: RunTrace, sandbox: SandboxRef, view: LivenessView): Promise<RunEnding | 'ended' | null> {
    let probe: { alive: boolean | 'ending' | 'ended'; lastEventAt: number | null; checkedAt: number };
    try {
      const host = elsewhere(sandbox.workerId);
      if (host) {
        // the sandbox's state from the worker holding it, the last event from the database here
        const hosted = await onHost<boolean | 'ending' | 'ended'>(ctx, host, 'sandboxAlive', { runId, sandboxId: sandbox.sandboxId });
        if ('lost' in hosted) return sandboxLost();
        probe = await ctx.run('liveness', () => trace.step('liveness', async () => ({ alive: hosted.answer, lastEventAt: await activities.lastHeartbeatAt(runId), checkedAt: Date.now() })), retry.liveness);
      } else {
        probe = await ctx.run('liveness', () => trace.step('liveness', async () => {
          const [alive, lastEventAt] = await Promise.all([
            activities.sandboxAlive(runId, sandbox.sandboxId),
            activities.lastHeartbeatAt(runId),
          ]);
          return { alive, lastEventAt, checkedAt: Date.now() };
        }), retry.liveness);
      }
    } catch (err) {
      if (!isGiveUp(err)) throw err;
      // The platform could not look (its database unreachable, say): that is not the sandbox's
      // silence, so the run waits for the next tick; its timeout still bounds it.
      ctx.console.warn(`liveness of run ${runId} could not be checked: ${err.message}`);
      view.lookedAt = view.recordableFrom = await ctx.date.now();
      return null;
    }
    const late = probe.checkedAt - (view.lookedAt + view.tickMs) > view.lateMs;
    view.lookedAt = probe.checkedAt;
    if (late) view.recordableFrom = probe.checkedAt;
    if (probe.alive === false) return sandboxLost();
    if (probe.alive === 'ended') return 'ended';
    // The sidecar holds the run's end and delivers it (or exits when it gives up): no heartbeats now.
    if (probe.alive === 'ending' || late) return null;
    const silentMs = probe.checkedAt - Math.max(probe.lastEventAt ?? view.recordableFrom, view.recordableFrom);
    return silentMs > view.staleMs ? heartbeatLost(silentMs) : null;
  }

  /**
   * Records the ending once (unless `recordedAlready`: the boot deadline recorded its own), then
   * tears the sandbox down whatever happened (a cancellation meanwhile included). A sandbox on this
   * worker is stopped in the same step as the recording, once the ending is recorded: one journaled
   * step for both. Should that stop fail, the recorded ending stands and the teardown step follows
   * with its own retries, as when the sandbox is held elsewhere.
   */
  async function finish(ctx: WorkflowContext, runId: string, trace: RunTrace, sandbox: SandboxRef | null, ending: RunEnding, engine: EngineCancel, recordedAlready?: RecordedEnding): Promise<FinishOutcome> {
    let tornDown = false;
    try {
      if (recordedAlready) return { result: { ending, finalized: true }, recorded: recordedAlready };
      const local = sandbox && !elsewhere(sandbox.workerId) ? sandbox : null;
      const step = local ? 'finish' : 'finalize';
      const { finalized, recorded, stopped } = await despiteCancel(engine, () => ctx.run(step, async (): Promise<{ finalized: boolean; recorded?: RecordedEnding; stopped?: true }> => {
        const outcome = await trace.step('finalize', () => activities.finalize(runId, ending));
        // without a sandbox, this is the run's last step
        if (!sandbox) trace.end(endingAttributes(ending));
        if (!local) return outcome;
        try {
          await trace.step('teardown', () => activities.teardown(runId, local.sandboxId));
          trace.end(endingAttributes(ending));
          return { ...outcome, stopped: true };
        } catch (err) {
          ctx.console.warn(`the sandbox ${local.sandboxId} of run ${runId} did not stop with the ending (${(err as Error).message}); its teardown follows`);
          return outcome;
        }
      }, retry.finalize));
      tornDown = stopped === true;
      // Older journals (and a run deleted meanwhile) carry no recorded ending: the workflow's own stands in.
      const held = finalized || !recorded ? { status: ending.status, code: 'error' in ending ? ending.error.code : undefined } : recorded;
      return { result: { ending, finalized }, recorded: held };
    } finally {
      if (sandbox && !tornDown) await teardown(ctx, runId, trace, sandbox, engine, ending);
    }
  }

  /** Stops the sandbox; given the run's ending, it is the run's last step and ends the workflow's span. */
  async function teardown(ctx: WorkflowContext, runId: string, trace: RunTrace, sandbox: SandboxRef, engine: EngineCancel, ending?: RunEnding): Promise<void> {
    try {
      const host = elsewhere(sandbox.workerId);
      if (host) {
        const hosted = await despiteCancel(engine, () => onHost<void>(ctx, host, 'teardown', { runId, sandboxId: sandbox.sandboxId }));
        // a lost worker's sandboxes went with it (or its reaper stops them should it come back)
        if ('lost' in hosted) ctx.console.warn(`sandbox ${sandbox.sandboxId} went with its lost worker ${host}`);
        if (ending) await ctx.run('teardown', () => trace.step('teardown', async () => trace.end(endingAttributes(ending))));
        return;
      }
      await despiteCancel(engine, () => ctx.run('teardown', () => trace.step('teardown', async () => {
        await activities.teardown(runId, sandbox.sandboxId);
        if (ending) trace.end(endingAttributes(ending));
      }), retry.teardown));
    } catch (err) {
      if (!isGiveUp(err)) throw err;
      ctx.console.warn(`teardown of sandbox ${sandbox.sandboxId} gave up: ${err.message}`);
    }
  }

  return restate.workflow({
    name: RUN_WORKFLOW_NAME,
    handlers: {
      run,
      /** The workflow's result once it ended, also when it ended as a failure; null before. */
      result: async (ctx: WorkflowSharedContext): Promise<RunWorkflowResult | null> => (await ctx.get<RunWorkflowResult>(RESULT_STATE)) ?? null,
      /** The runner's first event arrived. */
      started: async (ctx: WorkflowSharedContext, input?: SignedSignal): Promise<SignalAck> => {
        authenticate(ctx.key, 'started', {}, input?.mac);
        return signal<StartedSignal>(ctx, 'started', { at: await ctx.date.now() });
      },
      /** The runner reported its end. */
      terminal: async (ctx: WorkflowSharedContext, signed: TerminalSignal & SignedSignal): Promise<SignalAck> => {
        const { mac, ...payload } = signed ?? ({} as TerminalSignal & SignedSignal);
        authenticate(ctx.key, 'terminal', payload, mac);
        const problem = terminalSignalProblem(payload);
        if (problem) throw new TerminalError(`invalid terminal signal: ${problem}`, { errorCode: 400 });
        return signal(ctx, 'terminal', payload as TerminalSignal);
      },
      /** The run's sidecar asked for a person's approval of a tool call (the API stored the request). */
      approvalRequested: async (ctx: WorkflowSharedContext, signed: ApprovalRequestedSignal & SignedSignal): Promise<SignalAck> => {
        const { mac, ...payload } = signed ?? ({} as ApprovalRequestedSignal & SignedSignal);
        authenticate(ctx.key, 'approval_requested', payload, mac);
        if (!Number.isInteger(payload.sequence) || payload.sequence < 1 || typeof payload.approvalId !== 'string' || !Number.isInteger(payload.timeoutSeconds)) {
          throw new TerminalError('invalid approval request signal', { errorCode: 400 });
        }
        return resolvePromise(ctx, approvalRequestedPromise(payload.sequence), payload);
      },
      /** A person decided an approval request. */
      approvalDecided: async (ctx: WorkflowSharedContext, signed: { approvalId: string; status: ApprovalDecidedSignal['status'] } & SignedSignal): Promise<SignalAck> => {
        const { mac, ...payload } = signed ?? ({} as { approvalId: string; status: ApprovalDecidedSignal['status'] } & SignedSignal);
        authenticate(ctx.key, 'approval_decided', payload, mac);
        if (typeof payload.approvalId !== 'string' || (payload.status !== 'approved' && payload.status !== 'rejected')) {
          throw new TerminalError('invalid approval decision signal', { errorCode: 400 });
        }
        return resolvePromise<ApprovalDecidedSignal>(ctx, approvalPromise(payload.approvalId), { status: payload.status });
      },
      /** Someone asked to stop the run. */
      cancel: async (ctx: WorkflowSharedContext, request?: CancelSignal & SignedSignal): Promise<SignalAck> => {
        const body = typeof request?.reason === 'string' ? { reason: request.reason } : {};
        authenticate(ctx.key, 'cancel', body, request?.mac);
        return signal(ctx, 'cancel', body);
      },
    },
  });
}

export type RunWorkflow = ReturnType<typeof createRunWorkflow>;

function listen(ctx: WorkflowContext): Signals {
  return {
    started: ctx.promise<StartedSignal>('started').get(),
    terminal: ctx.promise<TerminalSignal>('terminal').get(),
    cancel: ctx.promise<CancelSignal>('cancel').get(),
  };
}

/** Resolves a signal's durable promise; only the first resolution counts. */
function signal<T>(ctx: WorkflowSharedContext, name: keyof Signals, value: T): Promise<SignalAck> {
  return resolvePromise(ctx, name, value);
}

async function resolvePromise<T>(ctx: WorkflowSharedContext, name: string, value: T): Promise<SignalAck> {
  try {
    await ctx.promise<T>(name).resolve(value);
    return { accepted: true };
  } catch (err) {
    if (isGiveUp(err)) return { accepted: false };
    throw err;
  }
}

/** Whether the engine delivered a cancellation (admin API or UI) to this invocation. */
interface EngineCancel {
  cancelled: boolean;
}

/** A cancellation through the engine ends the run cancelled, and is noted. */
function unlessCancelled<T>(engine: EngineCancel, fallback: T): (err: unknown) => T {
  return (err) => {
    if (!(err instanceof CancelledError)) throw err;
    engine.cancelled = true;
    return fallback;
  };
}

/** A cancellation that arrives while the run is being wound up is noted, and the step taken again. */
async function despiteCancel<T>(engine: EngineCancel, step: () => PromiseLike<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (!(err instanceof CancelledError)) throw err;
    engine.cancelled = true;
    return step();
  }
}

function endingAttributes(ending: RunEnding): Record<string, string> {
  return 'error' in ending ? { 'agent_platform.run.status': ending.status, 'error.type': ending.error.code } : { 'agent_platform.run.status': ending.status };
}

function cancelledByOperator(): RunEnding {
  return cancelled('The run was cancelled by an operator through the workflow engine.', OPERATOR_CANCEL_CODE);
}

function firstOf(candidates: RestatePromise<Woken>[]): RestatePromise<Woken> {
  return RestatePromise.race(candidates);
}

/** A step that failed for good (retries exhausted or refused), as opposed to a cancellation or suspension. */
function isGiveUp(err: unknown): err is TerminalError {
  return err instanceof TerminalError && !(err instanceof CancelledError);
}

function durationMs(value: StepRetry['maxRetryDuration']): number {
  if (typeof value === 'number') return value;
  const d = (value ?? {}) as { days?: number; hours?: number; minutes?: number; seconds?: number; milliseconds?: number };
  return ((((d.days ?? 0) * 24 + (d.hours ?? 0)) * 60 + (d.minutes ?? 0)) * 60 + (d.seconds ?? 0)) * 1000 + (d.milliseconds ?? 0);
}

function seconds(value: number): number {
  // A zero or garbage timing would spin the loop; one second is the floor.
  return Math.max(1, Number.isFinite(value) ? value : 1) * 1000;
}
