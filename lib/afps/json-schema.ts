// JSON Schema (draft 2020-12) as manifests use it: input, output and connect-form schemas.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS; its module object is the plugin function itself.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

// Not strict: schemas may carry annotations of their own (x-*, ui hints) that ajv does not know.
const OPTIONS = { strict: false, allErrors: true, logger: false } as const;

// Checks schemas against the 2020-12 meta-schema; never holds a manifest's schema, so one
// manifest's $id cannot clash with, or remove, anything another manifest relies on.
const metaChecker = new Ajv2020(OPTIONS);
addFormats(metaChecker);

/** A compiler of its own per schema; the meta-schema check already ran on metaChecker. */
function compilerFor(): Ajv2020 {
  const ajv = new Ajv2020({ ...OPTIONS, validateSchema: false });
  addFormats(ajv);
  return ajv;
}

// Versions are immutable and schemas repeat (re-imports, every launch of an agent): a compiled
// validator is kept per schema text, bounded.
const MAX_CACHED = 1000;
const compiled = new Map<string, ValidateFunction | Error>();

function compileChecked(schema: object): ValidateFunction {
  const key = JSON.stringify(schema);
  let entry = compiled.get(key);
  if (entry === undefined) {
    try {
      if (!metaChecker.validateSchema(schema)) throw new Error(metaChecker.errorsText(metaChecker.errors));
      entry = compilerFor().compile(schema);
    } catch (err) {
      entry = err as Error;
    }
    if (compiled.size >= MAX_CACHED) compiled.delete(compiled.keys().next().value!);
    compiled.set(key, entry);
  }
  if (entry instanceof Error) throw entry;
  return entry;
}

/** Why `schema` is not a usable JSON Schema object, or null when it compiles. */
export function jsonSchemaProblem(schema: unknown): string | null {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return 'must be a JSON Schema object';
  try {
    compileChecked(schema);
    return null;
  } catch (err) {
    return `is not a valid JSON Schema: ${(err as Error).message}`;
  }
}

/** A validator for data against a manifest's schema (input, output, connect form). */
export function compileJsonSchema(schema: object): ValidateFunction {
  return compileChecked(schema);
}
