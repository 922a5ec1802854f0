// The agent runtime's Headers (the Fetch standard's class, as node's own behaves). Node 20 defines
// Headers, Request and Response in undici's bundle, which it loads whole on first touch (its
// HTTP/1.1 and HTTP/2 clients, TLS and a WebAssembly parser with it): about half the CPU of a
// whole trivial run. Nothing of it can go into the runtime's startup snapshot (node cannot write
// its HTTP bindings into one), and the runtime never fetches through undici (sidecar-fetch.ts),
// yet the model library makes a Headers for every request. So the runtime installs this class as
// the global Headers: same validation, same lower-cased names, same combining (", ", or "; " for
// cookie), same sorted iteration with set-cookie values apart. Request and Response stay undici's.
import { types } from 'node:util';

/** HTTP whitespace, trimmed from both ends of a value */
function isHttpWhitespace(code: number): boolean {
  return code === 0x0a || code === 0x0d || code === 0x09 || code === 0x20;
}

function normalizeValue(value: string): string {
  let start = 0;
  let end = value.length;
  while (end > start && isHttpWhitespace(value.charCodeAt(end - 1))) end--;
  while (end > start && isHttpWhitespace(value.charCodeAt(start))) start++;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

/** RFC 9110's token: visible ASCII but the separators */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const INVALID_VALUE = /[\0\r\n]/;

function toByteString(value: unknown, what: string): string {
  if (typeof value === 'symbol') throw new TypeError(`Headers: ${what} is a symbol, which cannot be converted to a ByteString.`);
  const text = String(value);
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) > 0xff) {
      throw new TypeError(`Cannot convert argument to a ByteString because the character at index ${i} has a value of ${text.charCodeAt(i)} which is greater than 255.`);
    }
  }
  return text;
}

function checkName(name: string, operation: string): void {
  if (!TOKEN.test(name)) throw new TypeError(`${operation}: "${name}" is an invalid header name.`);
}

function checkValue(value: string, operation: string): void {
  if (INVALID_VALUE.test(value)) throw new TypeError(`${operation}: "${value}" is an invalid header value.`);
}

/** HeadersInit as WebIDL reads it: a sequence of pairs when iterable, otherwise a record. */
function pairsOf(init: unknown): Array<[string, string]> {
  if ((typeof init !== 'object' && typeof init !== 'function') || init === null) {
    throw new TypeError('Headers constructor: Argument 1 could not be converted to any of: sequence<sequence<ByteString>>, record<ByteString, ByteString>.');
  }
  const source = init as Record<PropertyKey, unknown> & { [Symbol.iterator]?: unknown };
  const iterate = source[Symbol.iterator];
  if (typeof iterate === 'function') {
    const pairs: Array<[string, string]> = [];
    for (const item of iterate.call(source) as Iterable<unknown>) {
      if ((typeof item !== 'object' && typeof item !== 'function') || item === null || typeof (item as { [Symbol.iterator]?: unknown })[Symbol.iterator] !== 'function') {
        throw new TypeError('Headers constructor: a header is not an iterable name/value pair.');
      }
      const pair = [...(item as Iterable<unknown>)].map((part) => toByteString(part, 'a header'));
      if (pair.length !== 2) throw new TypeError(`Headers constructor: expected name/value pair to be length 2, found ${pair.length}.`);
      pairs.push([pair[0], pair[1]]);
    }
    return pairs;
  }
  // a record: every own key of a plain object, the enumerable ones of a proxy (as node reads it)
  const keys = types.isProxy(source)
    ? Reflect.ownKeys(source).filter((k) => Reflect.getOwnPropertyDescriptor(source, k)?.enumerable)
    : [...Object.getOwnPropertyNames(source), ...Object.getOwnPropertySymbols(source)];
  const record = new Map<string, string>();
  for (const key of keys) record.set(toByteString(key, 'a header name'), toByteString(source[key], 'a header value'));
  return [...record];
}

export class FetchHeaders {
  /** lower-cased name -> the name as first given and the combined value */
  #list = new Map<string, { name: string; value: string }>();
  /** each set-cookie value apart, as getSetCookie and iteration give them */
  #cookies: string[] | null = null;
  #sorted: Array<[string, string]> | null = null;

  constructor(init?: unknown) {
    if (init === undefined) return;
    for (const [name, value] of pairsOf(init)) this.#append(name, value, 'Headers.append');
  }

  append(name: string, value: string): void {
    this.#append(toByteString(name, 'name'), toByteString(value, 'value'), 'Headers.append');
  }

  delete(name: string): void {
    const key = this.#key(name, 'Headers.delete');
    if (!this.#list.has(key)) return;
    this.#sorted = null;
    if (key === 'set-cookie') this.#cookies = null;
    this.#list.delete(key);
  }

  get(name: string): string | null {
    return this.#list.get(this.#key(name, 'Headers.get'))?.value ?? null;
  }

  has(name: string): boolean {
    return this.#list.has(this.#key(name, 'Headers.has'));
  }

  set(name: string, value: string): void {
    const given = toByteString(name, 'name');
    const normalized = normalizeValue(toByteString(value, 'value'));
    checkName(given, 'Headers.set');
    checkValue(normalized, 'Headers.set');
    const key = given.toLowerCase();
    this.#sorted = null;
    if (key === 'set-cookie') this.#cookies = [normalized];
    this.#list.set(key, { name: given, value: normalized });
  }

  getSetCookie(): string[] {
    return this.#cookies ? [...this.#cookies] : [];
  }

  forEach(callback: (value: string, name: string, headers: FetchHeaders) => void, thisArg?: unknown): void {
    if (typeof callback !== 'function') throw new TypeError("Headers.forEach: 'callback' is not a function.");
    for (const [name, value] of this.entries()) callback.call(thisArg, value, name, this);
  }

  // the iterators read the sorted list afresh at each step, as node's do: a change made while
  // iterating shows in the steps that follow
  *entries(): IterableIterator<[string, string]> {
    for (let i = 0; i < this.#sortedList().length; i++) {
      const [name, value] = this.#sortedList()[i];
      yield [name, value];
    }
  }

  *keys(): IterableIterator<string> {
    for (const [name] of this.entries()) yield name;
  }

  *values(): IterableIterator<string> {
    for (const [, value] of this.entries()) yield value;
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }

  get [Symbol.toStringTag](): string {
    return 'Headers';
  }

  #key(name: string, operation: string): string {
    const given = toByteString(name, 'name');
    checkName(given, operation);
    return given.toLowerCase();
  }

  #append(name: string, rawValue: string, operation: string): void {
    const value = normalizeValue(rawValue);
    checkName(name, operation);
    checkValue(value, operation);
    const key = name.toLowerCase();
    this.#sorted = null;
    const present = this.#list.get(key);
    if (present) this.#list.set(key, { name: present.name, value: `${present.value}${key === 'cookie' ? '; ' : ', '}${value}` });
    else this.#list.set(key, { name, value });
    if (key === 'set-cookie') (this.#cookies ??= []).push(value);
  }

  /** names sorted, each once with its combined value, except set-cookie: each of its values apart */
  #sortedList(): Array<[string, string]> {
    if (this.#sorted) return this.#sorted;
    const sorted: Array<[string, string]> = [];
    for (const key of [...this.#list.keys()].sort()) {
      if (key === 'set-cookie' && this.#cookies && this.#cookies.length > 1) for (const cookie of this.#cookies) sorted.push([key, cookie]);
      else sorted.push([key, this.#list.get(key)!.value]);
    }
    this.#sorted = sorted;
    return sorted;
  }
}

/**
 * Makes FetchHeaders the process's global Headers, before anything has touched node's (which
 * would load undici). Runs while the runtime's modules load, so a startup snapshot holds it.
 */
export function installFetchHeaders(): void {
  Object.defineProperty(globalThis, 'Headers', { value: FetchHeaders, writable: true, configurable: true, enumerable: false });
}
