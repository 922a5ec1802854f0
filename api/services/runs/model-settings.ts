// A run's own model settings: asked for at launch, checked there against the model the run will
// use (its defaults filling what the launch leaves unset, as the model proxies fill a call's), and
// recorded with the run; the run's sidecar applies them as the defaults of every model call.
import { checkModelSettings, layeredSettings } from '../../../lib/model-settings.ts';
import { isProblem, problem } from '../../../lib/problem.ts';
import type { RunModel } from '../../modules/core-providers/resolve-model.ts';
import { toRunWire, type RunRow, type RunWire } from './records.ts';

/** As a launch body carries them. */
export interface LaunchModelSettings {
  temperature?: number;
  reasoning_effort?: string;
}

/** As the run records and shows them: null for a setting the launch left to the model. */
export interface RunModelSettings {
  temperature: number | null;
  reasoning_effort: string | null;
}

/** Recorded settings (a run's, a schedule's) as a launch body asks for them again; undefined for none. */
export function launchSettingsOf(recorded: RunModelSettings | null | undefined): LaunchModelSettings | undefined {
  if (!recorded) return undefined;
  return {
    ...(recorded.temperature != null ? { temperature: recorded.temperature } : {}),
    ...(recorded.reasoning_effort != null ? { reasoning_effort: recorded.reasoning_effort } : {}),
  };
}

/**
 * The settings a run records (null when the launch asks for none), after checking them with the
 * model's defaults against what the model accepts: 400 reasoning_unsupported,
 * reasoning_level_unsupported, temperature_unsupported, temperature_with_reasoning_unsupported.
 */
export function checkLaunchModelSettings(model: RunModel, asked: LaunchModelSettings | undefined): RunModelSettings | null {
  const temperature = asked?.temperature ?? null;
  const reasoningEffort = asked?.reasoning_effort ?? null;
  if (temperature === null && reasoningEffort === null) return null;
  try {
    checkModelSettings(
      { supportsTemperature: model.supportsTemperature, reasoningLevels: model.reasoningLevels },
      layeredSettings({ temperature, reasoningEffort }, model),
    );
  } catch (err) {
    if (!isProblem(err)) throw err;
    throw problem(err.code, {
      detail: `Model ${model.modelId}: ${err.detail}`,
      errors: err.errors?.map((e) => ({ ...e, field: `model_settings.${e.field}` })),
    });
  }
  return { temperature, reasoning_effort: reasoningEffort };
}

/** The run as the wire shows it (the shape of run_wire() in db/functions.sql), its model settings included. */
export type RunWithSettings = RunWire & { model_settings: RunModelSettings | null };

export function runWireWithSettings(row: RunRow & { model_settings?: unknown }): RunWithSettings {
  // in run_wire()'s key order (model_settings after model_id), so both writers give the same bytes
  const { id, object, status, kind, packageId, agent_version, source, draft_integrity, spaceId, input, result, error, triggered_by, rerun_of, resumed_from, model_id, ...tail } = toRunWire(row);
  const model_settings = (row.model_settings as RunModelSettings | null | undefined) ?? null;
  return { id, object, status, kind, packageId, agent_version, source, draft_integrity, spaceId, input, result, error, triggered_by, rerun_of, resumed_from, model_id, model_settings, ...tail };
}
