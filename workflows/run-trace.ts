// The run's trace as the workflow sees it. The workflow's own span has an id derived from the run
// (the same on every replay and after a restart) and is exported as a record when the run ends;
// each step is a span under it, started inside the step's closure, which the engine runs once per
// attempt and never on replay. Nothing here is journaled: tracing on or off never changes a journal.
import {
  derivedId, exportSpanRecords, formatTraceparent, parseTraceparent, tracingActive, withSpan,
  type SpanAttributes, type TraceContext,
} from '../lib/tracing/index.ts';
import type { RunTraceInput } from './run-types.ts';

export interface RunTrace {
  /** runs one step's work in its span (call inside the step's ctx.run closure) */
  step<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /** the context the sandbox continues: the workflow's span */
  readonly traceparent: string | undefined;
  /** exports the workflow's span (call inside the closure of the last step, which runs once) */
  end(attributes: SpanAttributes): void;
}

const OFF: RunTrace = { step: (_name, fn) => fn(), traceparent: undefined, end: () => {} };

export function runTrace(runId: string, input: RunTraceInput | undefined): RunTrace {
  if (!tracingActive()) return OFF;
  const launch = parseTraceparent(input?.traceparent);
  // a run submitted without its launch's context (resubmitted by the sweeper) still gets one trace
  const traceId = launch?.traceId ?? derivedId(16, 'run', runId);
  const workflow: TraceContext = { traceId, spanId: derivedId(8, 'run workflow', runId, traceId), sampled: launch?.sampled ?? true };
  const tenant = { orgId: input?.orgId, spaceId: input?.spaceId, runId };
  const startedAt = input?.at ?? Date.now();
  return {
    step: (name, fn) => withSpan(`run ${name}`, { 'agent_platform.step': name }, fn, { parent: workflow, tenant }),
    traceparent: formatTraceparent(workflow),
    end(attributes) {
      if (!workflow.sampled) return;
      exportSpanRecords([{
        name: 'run workflow', traceId, spanId: workflow.spanId, ...(launch ? { parentSpanId: launch.spanId } : {}),
        kind: 'internal', start: startedAt, end: Date.now(), attributes: { 'gen_ai.operation.name': 'invoke_agent', ...attributes },
      }], tenant);
    },
  };
}
