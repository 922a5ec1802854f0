// Judges a connect.login response: its success criteria and the outputs it yields. Pure, so
// the code that performs the login (one request, no redirects) and the tests share it.
import type { LoginOutput } from './manifest-types.ts';
import { parseJsonPath, type CriterionValue, type JsonPathStep, type SuccessCriterion } from './success-criterion.ts';

export interface LoginResponse {
  status: number;
  /** header name (any case) → value */
  headers: Record<string, string>;
  /** cookies the response set: name → value */
  cookies: Record<string, string>;
  /** the raw body text; JSON paths parse it on demand */
  body: string;
}

function header(response: LoginResponse, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(response.headers)) if (key.toLowerCase() === wanted) return value;
  return undefined;
}

function cookie(response: LoginResponse, name: string): string | undefined {
  return Object.hasOwn(response.cookies, name) ? response.cookies[name] : undefined;
}

function atPath(bodyText: string, path: JsonPathStep[]): unknown {
  let node: unknown;
  try {
    node = JSON.parse(bodyText);
  } catch {
    return path.length === 0 ? bodyText : undefined;
  }
  for (const step of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = typeof step === 'number'
      ? (Array.isArray(node) ? node[step] : undefined)
      : Object.hasOwn(node, step) ? (node as Record<string, unknown>)[step] : undefined;
  }
  return node;
}

function matches(actual: unknown, expected: CriterionValue): boolean {
  if (actual === undefined) return false;
  switch (expected.kind) {
    case 'regex':
      return (typeof actual === 'string' || typeof actual === 'number') && expected.value.test(String(actual));
    case 'string':
      return actual === expected.value;
    case 'number':
      // headers and cookies are text: 42 matches "42" there
      return actual === expected.value || (typeof actual === 'string' && actual === String(expected.value));
    case 'boolean':
      return actual === expected.value;
    case 'null':
      return actual === null;
  }
}

export function evaluateSuccessCriterion(criterion: SuccessCriterion, response: LoginResponse): boolean {
  const { expression, value } = criterion;
  switch (expression.source) {
    case 'status':
      return matches(response.status, value);
    case 'header':
      return matches(header(response, expression.name), value);
    case 'cookie':
      return matches(cookie(response, expression.name), value);
    case 'body':
      return matches(atPath(response.body, expression.path), value);
  }
}

/** The value an output takes from the response, as text; undefined when the response lacks it. */
export function extractLoginOutput(output: LoginOutput, response: LoginResponse): string | undefined {
  if (output.from === 'cookie') return cookie(response, output.name);
  if (output.from === 'header') return header(response, output.name);
  const path = parseJsonPath(output.path);
  const value = path ? atPath(response.body, path) : undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}
