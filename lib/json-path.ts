// A small JSONPath subset for naming values in an upstream's JSON answer (an integration auth's
// identity_claims): the root `$`, then member steps `.name`, `['name']` or `["name"]`, and array
// index steps `[0]`. No wildcards, filters, slices, recursive descent or scripts: an expression
// names at most one value, and evaluating it only reads own properties of parsed JSON, so
// `__proto__`, `constructor` and the like name data members or nothing, never the prototype chain.

export const JSON_PATH_MAX_LENGTH = 256;
export const JSON_PATH_MAX_STEPS = 16;
const MAX_INDEX = 1_000_000;

export type JsonPathStep = { kind: 'member'; name: string } | { kind: 'index'; index: number };

export type JsonPathParse = { ok: true; steps: JsonPathStep[] } | { ok: false; reason: string };

const DOT_NAME = /^[A-Za-z_$][A-Za-z0-9_$-]*/;
const INDEX = /^(0|[1-9][0-9]{0,6})\]/;

const refuse = (reason: string): JsonPathParse => ({ ok: false, reason });

/** Reads a quoted member name after `[`; the text after its closing `]`, or a reason. */
function quotedMember(text: string, at: number): { name: string; next: number } | string {
  const quote = text[at];
  let name = '';
  for (let i = at + 1; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') {
      const escaped = text[i + 1];
      if (escaped !== quote && escaped !== '\\') return 'has an escape other than \\\\ or an escaped quote';
      name += escaped;
      i += 1;
    } else if (c === quote) {
      if (text[i + 1] !== ']') return 'has a quoted member without its closing ]';
      if (name === '') return 'names an empty member';
      return { name, next: i + 2 };
    } else if (c.charCodeAt(0) < 0x20) {
      return 'has a control character in a member name';
    } else {
      name += c;
    }
  }
  return 'has a quoted member without its closing quote';
}

/** Parses an expression of the subset; the reason names what is wrong, never echoes much of it. */
export function parseJsonPathExpression(text: unknown): JsonPathParse {
  if (typeof text !== 'string') return refuse('must be a string');
  if (text.length > JSON_PATH_MAX_LENGTH) return refuse(`is longer than ${JSON_PATH_MAX_LENGTH} characters`);
  if (!text.startsWith('$')) return refuse('must start at the root $');
  const steps: JsonPathStep[] = [];
  let i = 1;
  while (i < text.length) {
    if (steps.length >= JSON_PATH_MAX_STEPS) return refuse(`has more than ${JSON_PATH_MAX_STEPS} steps`);
    const c = text[i];
    if (c === '.') {
      if (text[i + 1] === '.') return refuse('uses recursive descent (..), which is not supported');
      const name = DOT_NAME.exec(text.slice(i + 1));
      if (!name) return refuse(text[i + 1] === '*' ? 'uses a wildcard, which is not supported' : 'has a . not followed by a member name');
      steps.push({ kind: 'member', name: name[0] });
      i += 1 + name[0].length;
    } else if (c === '[') {
      const next = text[i + 1];
      if (next === "'" || next === '"') {
        const member = quotedMember(text, i + 1);
        if (typeof member === 'string') return refuse(member);
        steps.push({ kind: 'member', name: member.name });
        i = member.next;
      } else if (next === '?' || next === '(') {
        return refuse('uses a filter or script expression, which is not supported');
      } else if (next === '*') {
        return refuse('uses a wildcard, which is not supported');
      } else {
        const index = INDEX.exec(text.slice(i + 1));
        if (!index || Number(index[1]) > MAX_INDEX) return refuse('has a [ ] that is neither a quoted member nor an array index (0 to 1000000)');
        steps.push({ kind: 'index', index: Number(index[1]) });
        i += 1 + index[0].length;
      }
    } else {
      return refuse(`has ${JSON.stringify(c)} where a . or [ step was expected`);
    }
  }
  return { ok: true, steps };
}

/** The value the steps name in `document` (parsed JSON), or undefined when it names nothing. */
export function evaluateJsonPath(steps: readonly JsonPathStep[], document: unknown): unknown {
  let current: unknown = document;
  for (const step of steps) {
    if (step.kind === 'index') {
      if (!Array.isArray(current) || step.index >= current.length) return undefined;
      current = current[step.index];
    } else {
      if (typeof current !== 'object' || current === null || Array.isArray(current)) return undefined;
      if (!Object.hasOwn(current, step.name)) return undefined;
      current = (current as Record<string, unknown>)[step.name];
    }
  }
  return current;
}

/** Parses and evaluates; undefined for an expression outside the subset or naming nothing. */
export function selectJsonPath(expression: string, document: unknown): unknown {
  const parsed = parseJsonPathExpression(expression);
  return parsed.ok ? evaluateJsonPath(parsed.steps, document) : undefined;
}
