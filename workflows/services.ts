// The Restate services this process serves.
import type { FleetActivities, RunActivities } from './run-types.ts';
import { createRunWorkflow } from './run.ts';
import { createScheduleObject } from './schedule.ts';
import type { ScheduleActivities } from './schedule-types.ts';

export interface WorkflowServices {
  definitions: unknown[];
}

export function buildWorkflowServices(
  activities: RunActivities,
  opts: { signalKey: Buffer; schedules?: ScheduleActivities; extra?: unknown[]; fleet?: FleetActivities },
): WorkflowServices {
  const definitions: unknown[] = [createRunWorkflow(activities, { signalKey: opts.signalKey, fleet: opts.fleet })];
  if (opts.schedules) definitions.push(createScheduleObject(opts.schedules));
  definitions.push(...(opts.extra ?? []));
  return { definitions };
}
