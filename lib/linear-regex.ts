// Tenant-supplied regular expressions (schema patterns, login success criteria) run on RE2
// through re2js: matching time grows linearly with the input, so no pattern can hold the thread.
// ECMAScript spellings RE2 lacks are mapped; what RE2 cannot express (backreferences,
// lookaround) is refused, never handed to the backtracking engine.
import { RE2JS } from 're2js';
import type { RegExpEngine, RegExpLike } from 'ajv/dist/types/index.js';

/** Why a tenant pattern cannot run on the linear-time engine. */
export class UnsafePatternError extends Error {
  constructor(readonly pattern: string, readonly reason: string) {
    super(`pattern ${JSON.stringify(pattern)} ${reason}`);
    this.name = 'UnsafePatternError';
  }
}

/** Largest RE2 program one pattern may compile to: matching cost is input length × program size. */
export const PATTERN_PROGRAM_LIMIT = 2000;
/** Largest total over one schema's patterns, which bounds the time a schema takes to compile. */
export const SCHEMA_PROGRAM_BUDGET = 10_000;

const FLAG_BITS: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL, u: 0 };

// ECMAScript's long property forms; RE2 knows the bare value (\p{Greek}, \p{Lu}).
const PROPERTY_PREFIX = /\\([pP])\{(?:Script|sc|General_Category|gc)=/g;

/** Refuses what RE2 cannot express, scanning escapes and classes the way the pattern parser does. */
function unsupportedSyntax(source: string): string | null {
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') {
      const next = source[i + 1] ?? '';
      if (next === 'k' || (/[1-9]/.test(next) && !inClass)) return 'uses a backreference, which the linear-time engine (RE2) does not support';
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
    } else if (c === '[') {
      inClass = true;
    } else if (c === '(' && /^\?(?:=|!|<=|<!)/.test(source.slice(i + 1, i + 4))) {
      return 'uses lookahead or lookbehind, which the linear-time engine (RE2) does not support';
    }
  }
  return null;
}

interface Compiled { re: RE2JS; size: number }

// Patterns repeat across schemas and launches; compiling is the expensive step, so keep it per
// pattern and flags, bounded.
const MAX_CACHED = 2000;
const cache = new Map<string, Compiled | UnsafePatternError>();

function compileUncached(source: string, flags: string): Compiled {
  let bits = 0;
  for (const flag of flags) {
    if (!(flag in FLAG_BITS)) throw new UnsafePatternError(source, `has flag ${JSON.stringify(flag)}; only i, m, s and u are supported`);
    bits |= FLAG_BITS[flag];
  }
  try {
    // compiling (not running) with the native engine only checks the ECMAScript syntax
    new RegExp(source, flags.includes('u') ? flags : `${flags}u`);
  } catch (err) {
    throw new UnsafePatternError(source, `does not compile: ${(err as Error).message}`);
  }
  const unsupported = unsupportedSyntax(source);
  if (unsupported) throw new UnsafePatternError(source, unsupported);
  let re: RE2JS;
  try {
    re = RE2JS.compile(RE2JS.translateRegExp(source.replace(PROPERTY_PREFIX, '\\$1{')), bits);
  } catch (err) {
    throw new UnsafePatternError(source, `cannot be compiled by the linear-time engine (RE2): ${(err as Error).message.replace(/^error parsing regexp: /, '')}`);
  }
  const size = re.programSize();
  if (size > PATTERN_PROGRAM_LIMIT) {
    throw new UnsafePatternError(source, `is too large for the linear-time engine (${size} instructions; at most ${PATTERN_PROGRAM_LIMIT})`);
  }
  return { re, size };
}

function compiled(source: string, flags: string): Compiled {
  const key = `${flags}/${source}`;
  let entry = cache.get(key);
  if (entry === undefined) {
    try {
      entry = compileUncached(source, flags);
    } catch (err) {
      if (!(err instanceof UnsafePatternError)) throw err;
      entry = err;
    }
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
    cache.set(key, entry);
  }
  if (entry instanceof UnsafePatternError) throw entry;
  return entry;
}

/** A tenant pattern compiled for linear-time matching; throws UnsafePatternError when it cannot be. */
export function compileLinear(source: string, flags = ''): RegExpLike {
  const { re } = compiled(source, flags);
  return { test: (text: string) => re.test(text), toString: () => `/${source}/${flags}` } as RegExpLike;
}

/**
 * ajv's `code.regExp` hook: every pattern, patternProperties key and propertyNames pattern of
 * one schema compiles through it. `budget` caps the schema's total program size.
 */
export function linearRegExpEngine(budget = SCHEMA_PROGRAM_BUDGET): RegExpEngine {
  let left = budget;
  const counted = new Set<string>();
  const engine = (source: string, flags: string): RegExpLike => {
    const { re, size } = compiled(source, flags);
    if (!counted.has(`${flags}/${source}`)) left -= size;
    counted.add(`${flags}/${source}`);
    if (left < 0) throw new UnsafePatternError(source, `brings the schema's patterns past the linear-time engine's budget of ${budget} instructions`);
    return { test: (text: string) => re.test(text), toString: () => `/${source}/${flags}` } as RegExpLike;
  };
  // ajv only reads `code` when generating standalone modules, which the platform never does
  return Object.assign(engine, { code: 'linearRegExp' });
}
