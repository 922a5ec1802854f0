// Checks the agent's output against the agent's output schema, so the model hears about a
// mismatch while it can still correct it. The platform validates again at finalization.
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: its default export arrives wrapped under NodeNext resolution
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

export type OutputCheck = (value: unknown) => string[];

const newAjv = () => addFormats(new Ajv2020({ strict: false, allErrors: true, validateSchema: false }));
// built while the sidecar waits in the warm pool: ajv's first instance and compile are slow
let prepared: Ajv2020 | undefined;

/** Loads and exercises the validator ahead of need, so the run's own compile is quick. */
export function prepareOutputValidator(): void {
  newAjv().compile({ type: 'object', properties: { at: { type: 'string', format: 'date-time' }, n: { type: 'integer', minimum: 0 } } });
  prepared = newAjv();
}

/** A checker that lists problems as "<path> <message>"; no checker (always fine) for a schema ajv cannot compile. */
export function outputChecker(schema: Record<string, unknown> | null): OutputCheck {
  if (!schema) return () => [];
  const ajv = prepared ?? newAjv();
  prepared = undefined;
  let validate: ReturnType<Ajv2020['compile']>;
  try {
    validate = ajv.compile(schema);
  } catch {
    return () => [];
  }
  return (value) => {
    if (validate(value)) return [];
    return (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`);
  };
}
