// zod issues mapped to the spec's field codes: every offending field at once.
import type { z } from 'zod';
import { problem, type FieldError } from '../lib/problem.ts';

function pathString(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out;
}

function fieldCode(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return 'input' in issue && issue.input !== undefined ? 'invalid_type' : 'required';
    case 'too_small':
    case 'too_big':
    case 'not_multiple_of':
      return 'out_of_range';
    case 'invalid_format':
      return 'invalid_format';
    case 'unrecognized_keys':
      return 'unknown_field';
    case 'invalid_value':
    case 'custom':
      return 'invalid_value';
    case 'invalid_union':
      return 'invalid_union';
    case 'invalid_key':
      return 'invalid_key';
    case 'invalid_element':
      return 'invalid_element';
    default:
      return 'invalid_request';
  }
}

export function toFieldErrors(error: z.ZodError): FieldError[] {
  const out: FieldError[] = [];
  for (const issue of error.issues) {
    const code = fieldCode(issue);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        out.push({ field: pathString([...issue.path, key]), code, message: `Unknown field "${key}".` });
      }
      continue;
    }
    const message = code === 'required' ? 'This field is required.' : issue.message;
    out.push({ field: pathString(issue.path), code, message });
  }
  return out;
}

/** Validates a body: 400 validation_failed with errors[] on failure. */
export function parseBody<T extends z.ZodType>(schema: T, input: unknown): z.infer<T> {
  const result = schema.safeParse(input, { reportInput: true });
  if (result.success) return result.data;
  const errors = toFieldErrors(result.error);
  throw problem('validation_failed', { detail: `The request body is invalid (${errors.length} field${errors.length === 1 ? '' : 's'}).`, errors });
}

/** Validates query parameters or path parameters: one bad value is invalid_request with param. */
export function parseParams<T extends z.ZodType>(schema: T, input: unknown): z.infer<T> {
  const result = schema.safeParse(input, { reportInput: true });
  if (result.success) return result.data;
  const first = result.error.issues[0];
  const param = first.code === 'unrecognized_keys' ? first.keys[0] : pathString(first.path);
  throw problem('invalid_request', { param, detail: `Query parameter "${param}" is invalid: ${first.message}` });
}
