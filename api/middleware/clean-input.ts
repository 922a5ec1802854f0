// The one place path parameters, query values and JSON bodies are checked for NUL bytes and lone
// surrogates: PostgreSQL refuses them mid-query, which used to surface as 500s deep in services.
import { hasForbiddenText, printable } from '../../lib/clean-text.ts';
import { problem, type FieldError } from '../../lib/problem.ts';
import type { Query } from '../http.ts';

/** Deeper than any body an operation accepts; bounds the walk and what validators recurse into. */
export const MAX_JSON_DEPTH = 64;
const MAX_REPORTED = 20;

function refuse(kind: 'Path parameter' | 'Query parameter', name: string): never {
  throw problem('invalid_request', { param: printable(name), detail: `${kind} "${printable(name)}" holds a NUL byte or an unpaired surrogate.` });
}

export function refuseBadParams(params: Record<string, string>): void {
  for (const name in params) if (hasForbiddenText(params[name])) refuse('Path parameter', name);
}

export function refuseBadQuery(query: Query): void {
  for (const name in query) {
    if (hasForbiddenText(name)) refuse('Query parameter', name);
    const v = query[name];
    if (typeof v === 'string') {
      if (hasForbiddenText(v)) refuse('Query parameter', name);
    } else if (v) {
      for (const item of v) if (hasForbiddenText(item)) refuse('Query parameter', name);
    }
  }
}

function fieldPath(parent: string, seg: string | number): string {
  if (typeof seg === 'number') return `${parent}[${seg}]`;
  return parent ? `${parent}.${printable(seg)}` : printable(seg);
}

/**
 * Walks a parsed JSON body without recursion: every key and string value with forbidden text is an
 * invalid_value field error (400 validation_failed); nesting past MAX_JSON_DEPTH is 400 invalid_request.
 */
export function refuseBadJson(body: unknown): void {
  const errors: FieldError[] = [];
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value: body, path: '', depth: 0 }];
  while (stack.length && errors.length < MAX_REPORTED) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value === 'string') {
      if (hasForbiddenText(value)) errors.push({ field: path, code: 'invalid_value', message: 'Text must not hold NUL bytes or unpaired surrogates.' });
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) throw problem('invalid_request', { detail: `The request body nests deeper than ${MAX_JSON_DEPTH} levels.` });
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], path: fieldPath(path, i), depth: depth + 1 });
      continue;
    }
    const keys = Object.keys(value);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i];
      const at = fieldPath(path, key);
      if (hasForbiddenText(key)) errors.push({ field: at, code: 'invalid_key', message: 'A key must not hold NUL bytes or unpaired surrogates.' });
      else stack.push({ value: (value as Record<string, unknown>)[key], path: at, depth: depth + 1 });
    }
  }
  if (errors.length) {
    throw problem('validation_failed', { detail: `The request body is invalid (${errors.length} field${errors.length === 1 ? '' : 's'}).`, errors });
  }
}
