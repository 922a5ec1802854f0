// The Restate services this process serves, and the background loops a worker runs beside them.
import type { AppDeps } from '../api/deps.ts';
import { createRunActivities } from '../activities/run-activities.ts';
import { createRunWorkflow } from './run.ts';
import type { RunWorkflowClient } from './run-client.ts';

export interface WorkflowHost {
  deps: AppDeps;
  runs: RunWorkflowClient;
}

export interface WorkflowServices {
  definitions: unknown[];
  /** starts background loops once the endpoint is registered */
  start(): void;
  stop(): Promise<void>;
}

export function buildWorkflowServices(host: WorkflowHost): WorkflowServices {
  const activities = createRunActivities(host.deps);
  return {
    definitions: [createRunWorkflow(activities.workflow)],
    start: () => activities.start(),
    stop: () => activities.stop(),
  };
}
