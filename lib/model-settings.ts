// What a model accepts (declared by the organization when adding it) against the settings a
// model or a run asks for: reasoning effort and temperature.
import { problem } from './problem.ts';

export const REASONING_LEVELS = ['minimal', 'low', 'medium', 'high'] as const;
export type ReasoningLevel = (typeof REASONING_LEVELS)[number];

export interface ModelCapabilities {
  supportsTemperature: boolean;
  /** empty: the model does not reason */
  reasoningLevels: readonly string[];
}

export interface ModelSettings {
  temperature?: number | null;
  reasoningEffort?: string | null;
}

/** Throws reasoning_unsupported, reasoning_level_unsupported, temperature_unsupported or temperature_with_reasoning_unsupported. */
export function checkModelSettings(caps: ModelCapabilities, settings: ModelSettings): void {
  const { temperature, reasoningEffort } = settings;
  if (reasoningEffort != null) {
    if (caps.reasoningLevels.length === 0) {
      throw problem('reasoning_unsupported', {
        detail: 'This model does not reason; leave reasoning_effort unset.',
        errors: [{ field: 'reasoning_effort', code: 'invalid_value', message: 'The model lacks reasoning.' }],
      });
    }
    if (!caps.reasoningLevels.includes(reasoningEffort)) {
      throw problem('reasoning_level_unsupported', {
        detail: `This model offers the reasoning levels ${caps.reasoningLevels.join(', ')}.`,
        errors: [{ field: 'reasoning_effort', code: 'invalid_value', message: `Not one of ${caps.reasoningLevels.join(', ')}.` }],
      });
    }
  }
  if (temperature != null) {
    if (!caps.supportsTemperature) {
      throw problem('temperature_unsupported', {
        detail: 'This model takes no custom temperature.',
        errors: [{ field: 'temperature', code: 'invalid_value', message: 'The model takes no custom temperature.' }],
      });
    }
    if (reasoningEffort != null) {
      throw problem('temperature_with_reasoning_unsupported', {
        detail: 'A temperature cannot be combined with a reasoning effort.',
        errors: [{ field: 'temperature', code: 'invalid_value', message: 'Not allowed together with reasoning_effort.' }],
      });
    }
  }
}

/** Each setting from the first layer that sets it: a call's own, then the run's, then the model's defaults. */
export function layeredSettings(...layers: Array<ModelSettings | null | undefined>): { temperature: number | null; reasoningEffort: string | null } {
  let temperature: number | null = null;
  let reasoningEffort: string | null = null;
  for (const layer of layers) {
    temperature ??= layer?.temperature ?? null;
    reasoningEffort ??= layer?.reasoningEffort ?? null;
  }
  return { temperature, reasoningEffort };
}
