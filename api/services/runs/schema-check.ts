// Validating run input and output against the agent's JSON Schemas (compiled once per schema by
// lib/afps/json-schema.ts).
import type { ErrorObject } from 'ajv';
import { compileJsonSchema } from '../../../lib/afps/json-schema.ts';
import type { FieldError } from '../../../lib/problem.ts';

function pointerToPath(root: string, pointer: string): string {
  let out = root;
  for (const raw of pointer.split('/').slice(1)) {
    const seg = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(seg) ? `[${seg}]` : `.${seg}`;
  }
  return out;
}

function fieldCode(e: ErrorObject): string {
  switch (e.keyword) {
    case 'required': return 'required';
    case 'type': return 'invalid_type';
    case 'format': return 'invalid_format';
    case 'additionalProperties':
    case 'unevaluatedProperties': return 'unknown_field';
    case 'minimum': case 'maximum': case 'exclusiveMinimum': case 'exclusiveMaximum':
    case 'minLength': case 'maxLength': case 'minItems': case 'maxItems': case 'minProperties': case 'maxProperties':
    case 'multipleOf': return 'out_of_range';
    case 'anyOf': case 'oneOf': return 'invalid_union';
    default: return 'invalid_value';
  }
}

/** A stored schema that cannot be compiled (safely): nothing can be validated against it. */
export class UnusableSchemaError extends Error {
  constructor(readonly root: string, cause: Error) {
    super(`The ${root} schema cannot be evaluated: ${cause.message}`);
    this.name = 'UnusableSchemaError';
  }
}

/**
 * Field errors of `data` against `schema`, rooted at `root` (input, output); empty when valid.
 * Throws UnusableSchemaError rather than skip the check when the schema does not compile.
 */
export function schemaErrors(schema: object, data: unknown, root: string): FieldError[] {
  let validate: ReturnType<typeof compileJsonSchema>;
  try {
    validate = compileJsonSchema(schema);
  } catch (err) {
    throw new UnusableSchemaError(root, err as Error);
  }
  if (validate(data)) return [];
  return (validate.errors ?? []).map((e) => {
    let field = pointerToPath(root, e.instancePath);
    if (e.keyword === 'required') field += `.${(e.params as { missingProperty: string }).missingProperty}`;
    if (e.keyword === 'additionalProperties') field += `.${(e.params as { additionalProperty: string }).additionalProperty}`;
    return { field, code: fieldCode(e), message: e.message ?? 'is invalid' };
  });
}
