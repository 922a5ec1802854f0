// Plain data exchanged between the run workflow, its activities and its callers: no engine types.

export const RUN_WORKFLOW_NAME = 'run';
/** The workflow state key holding its result when the invocation ends as a failure. */
export const RESULT_STATE = 'result';

/**
 * The run's trace, given with its submission and journaled as the workflow's input, so retries and
 * restarts continue the same trace: the launch's span, the tenant's ids, when it was submitted.
 */
export interface RunTraceInput {
  traceparent?: string;
  orgId?: string;
  spaceId?: string;
  /** epoch ms of the submission: where the workflow's span begins */
  at?: number;
}

export interface RunWorkflowInput {
  trace?: RunTraceInput;
}

/** What boot hands back: the sandbox and the timings that watch over it. */
export interface SandboxRef {
  sandboxId: string;
  /** The run's execution timeout, already clamped to the platform ceiling. */
  timeoutSeconds: number;
  /** How long the runner has to send its first event. */
  bootSeconds: number;
  /** How often the runner promises an event; liveness is checked every 2x, declared lost after 3x. */
  heartbeatSeconds: number;
  /** How long the run waits for an approval holding this sandbox before it is parked (absent: never parked). */
  parkAfterSeconds?: number;
  /** The worker holding the sandbox (a fleet's placement); unset: the worker serving the workflow. */
  workerId?: string;
}

export interface RunError {
  code: string;
  message: string;
  details?: unknown;
}

export type RunEnding =
  | { status: 'success'; output: unknown }
  | { status: 'failed'; error: RunError }
  | { status: 'timeout'; error: { code: 'run_timeout'; message: string } }
  | { status: 'cancelled'; error: { code: 'run_cancelled' | 'run_cancelled_by_operator'; message: string } };

/**
 * The ending a run holds in the db: status and, unless it succeeded, its error code. A run still
 * open (a boot deadline refused because the run had started meanwhile) shows as pending or running.
 */
export interface RecordedEnding {
  status: RunEnding['status'] | 'pending' | 'running';
  code?: string;
}

/** What the boot phase's check finds: the run in the db, and its sandbox as this worker sees it. */
export interface BootCheck {
  /** pending: no event accepted yet; running: its first event was accepted; ended: finalized; gone: deleted */
  run: 'pending' | 'running' | 'ended' | 'gone';
  /**
   * The sandbox's state; 'unknown' when this worker does not hold it: it was started by a worker
   * that has died since (a platform killed and restarted), and went with it.
   */
  sandbox: 'running' | 'ending' | 'gone' | 'unknown';
}

/** What the workflow hands the sandbox: the trace context its programs continue. */
export interface BootContext {
  traceparent?: string;
  /** the run is woken from its park: it is running already, and the sandbox starts from its own checkpoint */
  wake?: boolean;
}

/** What parking left: the run parked (its sandbox stopped, its state in its checkpoint), or it holds its sandbox still. */
export interface ParkOutcome {
  parked: boolean;
}

export interface RunActivities {
  /** Starts the sandbox. Throw an ActivityFailure to fail the run at once with its code; anything else is retried. */
  boot(runId: string, context?: BootContext): Promise<SandboxRef>;
  /** Epoch ms of the last event received for the run, from the db. */
  lastHeartbeatAt(runId: string): Promise<number | null>;
  /**
   * true: the sandbox runs. 'ending': the runner has handed its end to its sidecar, which is still
   * delivering it (heartbeats have stopped; the agent may have exited). 'ended': the run was
   * finalized elsewhere (the API records a runner's ending and a cancel as they arrive). false: the
   * sandbox is gone or the run is unknown.
   */
  sandboxAlive(runId: string, sandboxId: string): Promise<boolean | 'ending' | 'ended'>;
  /** The boot phase's look at the run and its sandbox, while the first event is awaited. */
  bootCheck(runId: string, sandboxId: string): Promise<BootCheck>;
  /**
   * Compare-and-set in the db; false means someone else finalized first, whose ending is `recorded`.
   * A boot_timeout is recorded only while the run is pending: a run whose first event was accepted
   * has started, and `recorded` then says it is running.
   */
  finalize(runId: string, ending: RunEnding): Promise<{ finalized: boolean; recorded?: RecordedEnding }>;
  teardown(runId: string, sandboxId: string): Promise<void>;
  /** An approval request's timer ran out: it expires unless it was decided meanwhile (then false). */
  expireApproval(runId: string, approvalId: string): Promise<boolean>;
  /**
   * The run has waited long for an approval: its sidecar hands over the run's pending state as its
   * checkpoint, then the sandbox is stopped and the run marked parked. Not parked when the request
   * was decided first or the handover did not come. Absent: runs are never parked.
   */
  park?(runId: string, sandboxId: string, approvalId: string): Promise<ParkOutcome>;
}

/**
 * The fleet (issue 31): which worker a run's sandbox is placed on, and whether a worker is lost.
 * Given to the run workflow, every step touching a sandbox held by another worker goes to that
 * worker's own sandbox host service; without it, every step runs in the serving process.
 */
export interface FleetActivities {
  /** the worker id of the process serving the workflow (its sandboxes are reached without a hop) */
  selfId: string;
  /** how often a call to another worker's host looks whether that worker was lost meanwhile (ms) */
  checkMs: number;
  /** places the run on a worker with capacity and records it; an error when none has any */
  place(runId: string): Promise<{ workerId: string } | { error: string }>;
  /** the worker's heartbeat is stale past the fleet's loss window (or it is unknown) */
  workerLost(workerId: string): Promise<boolean>;
  /** the run's status as recorded */
  runStatus(runId: string): Promise<'pending' | 'running' | 'ended' | 'gone'>;
}

/** An error shape activities throw to end the run without retries. */
export interface ActivityFailure {
  terminal: true;
  code: string;
  message: string;
  details?: unknown;
}

export function activityFailure(code: string, message: string, details?: unknown): ActivityFailure {
  return details === undefined ? { terminal: true, code, message } : { terminal: true, code, message, details };
}

export function isActivityFailure(value: unknown): value is ActivityFailure {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<ActivityFailure>;
  return candidate.terminal === true && typeof candidate.code === 'string' && typeof candidate.message === 'string';
}

/** The runner's end as reported by the API (output already validated). */
export type TerminalSignal =
  | { status: 'success'; output: unknown }
  | { status: 'failed'; error: RunError };

/** The run's sidecar asked for the approval of a tool call; the n-th request of the run. */
export interface ApprovalRequestedSignal {
  sequence: number;
  approvalId: string;
  timeoutSeconds: number;
}

/** A person decided an approval request. */
export interface ApprovalDecidedSignal {
  status: 'approved' | 'rejected';
}

/** The durable promise that hears of the run's n-th approval request. */
export function approvalRequestedPromise(sequence: number): string {
  return `approval-request-${sequence}`;
}

/** The durable promise a decision resolves: named for the approval, so an operator sees what the run waits for. */
export function approvalPromise(approvalId: string): string {
  return `approval ${approvalId}`;
}

export interface CancelSignal {
  reason?: string;
}

/** Whether a signal was the first of its kind for the run (later ones change nothing). */
export interface SignalAck {
  accepted: boolean;
}

export interface RunWorkflowResult {
  ending: RunEnding;
  /** True when this invocation's compare-and-set recorded the ending. */
  finalized: boolean;
}
