// Text PostgreSQL cannot store (U+0000) or that is not Unicode at all (a lone UTF-16 surrogate):
// refused where requests enter, so no value reaches a query or a log that would choke on it.
const FORBIDDEN = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function hasForbiddenText(s: string): boolean {
  return FORBIDDEN.test(s);
}

/** A value printable in a problem document whatever it holds (NUL and lone surrogates escaped). */
export function printable(s: string): string {
  return JSON.stringify(s.length > 64 ? `${s.slice(0, 64)}...` : s).slice(1, -1);
}
