// The one grammar a login success criterion may use, so that every criterion accepted at import
// can be evaluated:
//
//   condition  := expression "==" value
//   expression := "status" | "header." NAME | "cookie." NAME | "body" PATH
//   value      := 'single-quoted string' | number | true | false | null | /regex/flags
//
// PATH is a JSON path of ".member" and "[index]" steps. Compound conditions, other operators,
// double-quoted or unquoted strings, xpath and regexes that do not compile are refused. Regexes
// run on the linear-time engine (upstream responses are untrusted input), so those it cannot
// run (backreferences, lookaround) are refused too.
import { compileLinear, UnsafePatternError } from '../linear-regex.ts';

export type CriterionExpression =
  | { source: 'status' }
  | { source: 'header'; name: string }
  | { source: 'cookie'; name: string }
  | { source: 'body'; path: JsonPathStep[] };

export type JsonPathStep = string | number;

export type CriterionValue =
  | { kind: 'string'; value: string }
  | { kind: 'number'; value: number }
  | { kind: 'boolean'; value: boolean }
  | { kind: 'null' }
  | { kind: 'regex'; value: { test(text: string): boolean } };

export interface SuccessCriterion {
  expression: CriterionExpression;
  value: CriterionValue;
}

export type CriterionParse = { ok: true; criterion: SuccessCriterion } | { ok: false; reason: string };

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const MEMBER = /^[A-Za-z0-9_$-]+$/;
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?$/;
const COMPOUND = /&&|\|\||(?:^|\s)(?:and|or)(?:\s|$)/i;
const REGEX_FLAGS = /^[imsu]*$/;

/** `data.items[0].id` (or `.data...`) → ['data', 'items', 0, 'id']; null when not a path. */
export function parseJsonPath(text: string): JsonPathStep[] | null {
  const steps: JsonPathStep[] = [];
  let rest = text;
  let first = true;
  while (rest.length > 0) {
    const index = /^\[(0|[1-9]\d*)\]/.exec(rest);
    if (index) {
      steps.push(Number(index[1]));
      rest = rest.slice(index[0].length);
    } else {
      const member = (first ? /^\.?([A-Za-z0-9_$-]+)/ : /^\.([A-Za-z0-9_$-]+)/).exec(rest);
      if (!member || !MEMBER.test(member[1])) return null;
      steps.push(member[1]);
      rest = rest.slice(member[0].length);
    }
    first = false;
  }
  return steps;
}

/** Masks single- and double-quoted text so operators inside strings are not seen. */
function maskQuoted(text: string): string {
  return text.replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/g, (m) => ' '.repeat(m.length));
}

function parseExpression(text: string): CriterionExpression | string {
  if (text === '') return 'names no expression before ==';
  if (COMPOUND.test(text)) return 'is a compound condition; use one comparison per criterion';
  if (text.startsWith('/') || /^xpath\b/i.test(text) || text.includes('//') || text.includes('@')) {
    return 'uses an xpath expression, which cannot be evaluated';
  }
  if (text === 'status') return { source: 'status' };
  if (text.startsWith('header.') && TOKEN.test(text.slice(7))) return { source: 'header', name: text.slice(7) };
  if (text.startsWith('cookie.') && TOKEN.test(text.slice(7))) return { source: 'cookie', name: text.slice(7) };
  if (text === 'body') return { source: 'body', path: [] };
  if (text.startsWith('body.') || text.startsWith('body[')) {
    const path = parseJsonPath(text.slice(4).replace(/^\./, ''));
    if (path && path.length > 0) return { source: 'body', path };
  }
  return `has an expression ${JSON.stringify(text)} that cannot be evaluated; use status, header.<name>, cookie.<name> or body.<path>`;
}

/** Reads one value literal at the start of `text`; returns it and the text after it. */
function parseValue(text: string): { value: CriterionValue; rest: string } | string {
  if (text === '') return 'names no value after ==';
  if (text.startsWith('"')) return 'quotes a string with double quotes; string values use single quotes';

  if (text.startsWith("'")) {
    let out = '';
    for (let i = 1; i < text.length; i++) {
      const c = text[i];
      if (c === '\\' && i + 1 < text.length) {
        out += text[++i];
      } else if (c === "'") {
        return { value: { kind: 'string', value: out }, rest: text.slice(i + 1) };
      } else {
        out += c;
      }
    }
    return 'has a string value without its closing quote';
  }

  if (text.startsWith('/')) {
    let inClass = false;
    for (let i = 1; i < text.length; i++) {
      const c = text[i];
      if (c === '\\') { i++; continue; }
      if (c === '[') inClass = true;
      else if (c === ']') inClass = false;
      else if (c === '/' && !inClass) {
        const source = text.slice(1, i);
        const flags = /^[A-Za-z]*/.exec(text.slice(i + 1))![0];
        if (!REGEX_FLAGS.test(flags)) return `has regex flags ${JSON.stringify(flags)}; only i, m, s and u are supported`;
        if (source === '') return 'has an empty regex';
        try {
          return { value: { kind: 'regex', value: compileLinear(source, flags) }, rest: text.slice(i + 1 + flags.length) };
        } catch (err) {
          if (err instanceof UnsafePatternError) return `has a regex that ${err.reason}`;
          throw err;
        }
      }
    }
    return 'has a regex without its closing slash';
  }

  const word = /^\S+/.exec(text)![0];
  const rest = text.slice(word.length);
  if (NUMBER.test(word)) return { value: { kind: 'number', value: Number(word) }, rest };
  if (word === 'true' || word === 'false') return { value: { kind: 'boolean', value: word === 'true' }, rest };
  if (word === 'null') return { value: { kind: 'null' }, rest };
  return `has an unquoted string ${JSON.stringify(word)}; string values use single quotes`;
}

export function parseSuccessCriterion(condition: string): CriterionParse {
  const masked = maskQuoted(condition);
  const at = masked.indexOf('==');
  if (at < 0) {
    if (COMPOUND.test(masked)) return { ok: false, reason: 'is a compound condition; use one comparison per criterion' };
    if (/!=|<|>|=~|=/.test(masked)) return { ok: false, reason: 'uses an operator other than ==; only == is supported' };
    return { ok: false, reason: 'must be one comparison of the form <expression> == <value>' };
  }

  const left = condition.slice(0, at).trim();
  if (/[!<>=~]$/.test(left)) return { ok: false, reason: 'uses an operator other than ==; only == is supported' };
  const expression = parseExpression(left);
  if (typeof expression === 'string') return { ok: false, reason: expression };

  const right = condition.slice(at + 2).trim();
  if (right.startsWith('=')) return { ok: false, reason: 'uses an operator other than ==; only == is supported' };
  const parsed = parseValue(right);
  if (typeof parsed === 'string') return { ok: false, reason: parsed };

  const rest = parsed.rest.trim();
  if (rest !== '') {
    if (COMPOUND.test(rest)) return { ok: false, reason: 'is a compound condition; use one comparison per criterion' };
    return { ok: false, reason: `has text after the value (${JSON.stringify(rest)}); a criterion is one comparison` };
  }

  if (expression.source === 'status' && !(parsed.value.kind === 'number' && Number.isInteger(parsed.value.value))) {
    return { ok: false, reason: 'compares status with something other than an HTTP status number' };
  }
  return { ok: true, criterion: { expression, value: parsed.value } };
}
