// JSON Schema (draft 2020-12) as manifests use it: input, output and connect-form schemas.
// Compiled by lib/tenant-ajv.ts: patterns on a linear-time engine, format checks bounded.
import type { Ajv2020, ValidateFunction } from 'ajv/dist/2020.js';
import { UnsafePatternError } from '../linear-regex.ts';
import { newTenantAjv } from '../tenant-ajv.ts';

// Checks schemas against the 2020-12 meta-schema; never holds a manifest's schema, so one
// manifest's $id cannot clash with, or remove, anything another manifest relies on.
const metaChecker = newTenantAjv();

/** A compiler of its own per schema; the meta-schema check already ran on metaChecker. */
function compilerFor(): Ajv2020 {
  return newTenantAjv({ validateSchema: false });
}

/** Where in a schema each of its patterns sits, so a refusal can name it. */
function patternPaths(node: unknown, path: string, out: Map<string, string>): void {
  if (typeof node !== 'object' || node === null) return;
  if (Array.isArray(node)) {
    node.forEach((item, i) => patternPaths(item, `${path}/${i}`, out));
    return;
  }
  for (const [key, value] of Object.entries(node)) {
    const at = `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if (key === 'pattern' && typeof value === 'string' && !out.has(value)) out.set(value, at);
    if (key === 'patternProperties' && typeof value === 'object' && value !== null) {
      for (const name of Object.keys(value)) if (!out.has(name)) out.set(name, `${at}/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`);
    }
    patternPaths(value, at, out);
  }
}

/** A schema a linear-time engine cannot run; the message names the pattern and where it sits. */
export class UnsafeSchemaError extends Error {
  constructor(readonly pointer: string, readonly pattern: string, reason: string) {
    super(`${pointer || '(root)'}: ${reason}`);
    this.name = 'UnsafeSchemaError';
  }
}

function describe(schema: object, err: UnsafePatternError): UnsafeSchemaError {
  const paths = new Map<string, string>();
  patternPaths(schema, '', paths);
  return new UnsafeSchemaError(paths.get(err.pattern) ?? '', err.pattern, err.message);
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
      entry = err instanceof UnsafePatternError ? describe(schema, err) : err as Error;
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
    if (err instanceof UnsafeSchemaError) return `has a pattern the platform cannot evaluate safely: ${err.message}`;
    return `is not a valid JSON Schema: ${(err as Error).message}`;
  }
}

/** A validator for data against a manifest's schema (input, output, connect form); throws when it cannot compile. */
export function compileJsonSchema(schema: object): ValidateFunction {
  return compileChecked(schema);
}
