// The approval gate: a call of a tool the agent's manifest lists under `approvals.tools` is not
// made until a person approves it. The sidecar asks the platform (POST <approvalsUrl>, signed like
// the run events), then reads the request (GET <approvalsUrl>/<id>) until it is decided: approved,
// the tool runs and its answer goes to the model; rejected or expired, the model is told so, with
// the reason, and the tool is never called.
import { requestText } from '../lib/outbound-http.ts';
import { signedRunEventHeaders } from '../lib/run-events.ts';
import { toolError, type SidecarTool, type ToolAnswer } from './tool.ts';

export interface ApprovalGateOptions {
  approvalsUrl: string | undefined;
  secret: string;
  tools: readonly string[];
  timeoutSeconds: number;
  /** how often the decision is read in the first minute of a wait (then once a second) */
  pollMs?: number;
  /** a line for the run's log (never the arguments) */
  note?: (message: string) => void;
  /**
   * Asked when the platform wants the run parked: hands the run's pending state over as its
   * checkpoint; true once kept (the call is then held for good: a fresh sandbox makes it).
   */
  handOver?: () => Promise<boolean>;
  /** aborted when the run's session closes: a wait for a decision ends, holding nothing of the run */
  signal?: AbortSignal;
  /** awaited before an approval is asked: the run's events so far (its start) reach the platform first */
  beforeAsk?: () => Promise<void>;
}

interface ApprovalState {
  id: string;
  status: 'pending' | 'approved' | 'rejected' | 'expired';
  reason: string | null;
  /** the platform parks the run: its pending state is wanted */
  park?: boolean;
}

const REQUEST_TIMEOUT_MS = 15_000;
/** how long asking is retried (the platform restarting, say) before the call is answered as not approved */
const ASK_BUDGET_MS = 60_000;
/** past the request's own timeout, how long the sidecar waits for the platform to record its expiry */
const EXPIRY_GRACE_MS = 60_000;
const FAST_POLL_FOR_MS = 60_000;
const SLOW_POLL_MS = 1_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function stateOf(text: string): ApprovalState | null {
  try {
    const body = JSON.parse(text) as Partial<ApprovalState>;
    if (typeof body.id !== 'string' || !['pending', 'approved', 'rejected', 'expired'].includes(body.status as string)) return null;
    return { id: body.id, status: body.status as ApprovalState['status'], reason: typeof body.reason === 'string' ? body.reason : null, park: body.park === true };
  } catch {
    return null;
  }
}

async function ask(opts: ApprovalGateOptions, url: string, tool: string, args: Record<string, unknown>): Promise<ApprovalState | string> {
  const body = JSON.stringify({ tool, arguments: args, timeout_seconds: opts.timeoutSeconds });
  const deadline = Date.now() + ASK_BUDGET_MS;
  for (let attempt = 0; ; attempt++) {
    let problem: string;
    try {
      const res = await requestText(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...signedRunEventHeaders(opts.secret, body) },
        body,
        timeoutMs: REQUEST_TIMEOUT_MS,
      });
      const state = res.status === 201 ? stateOf(res.text) : null;
      if (state) return state;
      problem = `the platform answered ${res.status}`;
      // a refusal (the run ended, a malformed request) is final; an outage is retried
      if (res.status < 500 && res.status !== 408 && res.status !== 429) return problem;
    } catch {
      problem = 'the platform could not be reached';
    }
    const pause = Math.min(200 * 2 ** attempt, 5_000);
    if (Date.now() + pause > deadline) return problem;
    await sleep(pause);
  }
}

async function awaitDecision(opts: ApprovalGateOptions, url: string, asked: ApprovalState): Promise<ApprovalState> {
  const began = Date.now();
  const giveUpAt = began + opts.timeoutSeconds * 1000 + EXPIRY_GRACE_MS;
  const target = `${url}/${encodeURIComponent(asked.id)}`;
  for (;;) {
    await sleep(Date.now() - began < FAST_POLL_FOR_MS ? (opts.pollMs ?? 250) : SLOW_POLL_MS);
    opts.signal?.throwIfAborted();
    try {
      const res = await requestText(target, {
        headers: { accept: 'application/json', ...signedRunEventHeaders(opts.secret, '') },
        timeoutMs: REQUEST_TIMEOUT_MS,
      });
      const state = res.status === 200 ? stateOf(res.text) : null;
      if (state && state.status !== 'pending') return state;
      if (state?.park && opts.handOver && (await opts.handOver())) {
        // parked: this sandbox is stopped and never makes the call; a fresh one takes the decision
        opts.note?.(`the run parks while approval ${asked.id} is awaited`);
        const { signal } = opts;
        return new Promise<never>((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason), { once: true }));
      }
    } catch { /* read again at the next turn */ }
    if (Date.now() > giveUpAt) return { ...asked, status: 'expired', reason: `No decision was heard within ${opts.timeoutSeconds} seconds.` };
  }
}

/** What the model is told of a call that was not approved. */
export function refusalText(tool: string, state: ApprovalState): string {
  const because = state.reason ? ` Reason: ${state.reason}` : '';
  if (state.status === 'rejected') return `The call of ${tool} was rejected by a person (approval ${state.id}); it was not made.${because}`;
  return `The call of ${tool} was not approved in time (approval ${state.id} expired); it was not made.${because}`;
}

function gate(tool: SidecarTool, opts: ApprovalGateOptions): SidecarTool {
  return {
    ...tool,
    call: async (args): Promise<ToolAnswer> => {
      if (!opts.approvalsUrl) return toolError(`The call of ${tool.name} needs a person's approval, which this run cannot ask for; it was not made.`);
      await opts.beforeAsk?.();
      const asked = await ask(opts, opts.approvalsUrl, tool.name, args);
      if (typeof asked === 'string') return toolError(`The call of ${tool.name} needs a person's approval, which could not be asked for (${asked}); it was not made.`);
      opts.note?.(`waiting for approval ${asked.id} of a call of ${tool.name}`);
      const decided = asked.status === 'pending' ? await awaitDecision(opts, opts.approvalsUrl, asked) : asked;
      opts.note?.(`approval ${decided.id} of a call of ${tool.name}: ${decided.status}`);
      if (decided.status !== 'approved') return toolError(refusalText(tool.name, decided));
      return tool.call(args);
    },
  };
}

/** The tools, those the manifest gates wrapped so that each call waits for a person's approval. */
export function gatedTools(tools: SidecarTool[], opts: ApprovalGateOptions): SidecarTool[] {
  if (opts.tools.length === 0) return tools;
  const gated = new Set(opts.tools);
  return tools.map((t) => (gated.has(t.name) ? gate(t, opts) : t));
}
