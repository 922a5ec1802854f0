// The Restate services this process serves.
import type { RunActivities } from './run-types.ts';
import { createRunWorkflow } from './run.ts';

export interface WorkflowServices {
  definitions: unknown[];
}

export function buildWorkflowServices(activities: RunActivities, opts: { signalKey: Buffer; extra?: unknown[] }): WorkflowServices {
  return { definitions: [createRunWorkflow(activities, { signalKey: opts.signalKey }), ...(opts.extra ?? [])] };
}
