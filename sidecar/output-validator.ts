// Checks the agent's output against the agent's output schema, so the model hears about a
// mismatch while it can still correct it. The platform validates again at finalization.
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { newTenantAjv } from '../lib/tenant-ajv.ts';

export type OutputCheck = (value: unknown) => string[];

const newAjv = () => newTenantAjv({ validateSchema: false });
// built while the sidecar waits in the warm pool: ajv's first instance and compile are slow
let prepared: Ajv2020 | undefined;

/** Loads and exercises the validator ahead of need, so the run's own compile is quick. */
export function prepareOutputValidator(): void {
  newAjv().compile({ type: 'object', properties: { at: { type: 'string', format: 'date-time' }, n: { type: 'integer', minimum: 0 }, id: { type: 'string', pattern: '^[a-z]+$' } } });
  prepared = newAjv();
}

/** A checker that lists problems as "<path> <message>"; a schema that cannot compile fails every output. */
export function outputChecker(schema: Record<string, unknown> | null): OutputCheck {
  if (!schema) return () => [];
  const ajv = prepared ?? newAjv();
  prepared = undefined;
  let validate: ReturnType<Ajv2020['compile']>;
  try {
    validate = ajv.compile(schema);
  } catch (err) {
    // never skip the check: an output cannot be shown to match a schema nobody can evaluate
    const problem = `(root) cannot be checked: the output schema cannot be compiled (${(err as Error).message})`;
    return () => [problem];
  }
  return (value) => {
    if (validate(value)) return [];
    return (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`);
  };
}
