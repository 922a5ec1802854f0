// The agent runtime's Headers (agent-runtime/fetch-headers.ts) behaves as node's own: each story
// below is played on both classes and must end the same, results and refusals alike.
import assert from 'node:assert/strict';
import test from 'node:test';
import { FetchHeaders } from '../../agent-runtime/fetch-headers.ts';

type HeadersClass = new (init?: unknown) => Headers;

/** a step's value (iterables spread), or the kind of error it threw */
function attempt(fn: () => unknown): unknown {
  try {
    const value = fn();
    return { value: value instanceof Object && Symbol.iterator in value && typeof value !== 'string' ? [...(value as Iterable<unknown>)] : value };
  } catch (err) {
    return { threw: (err as Error).constructor.name };
  }
}

function sameOnBoth(name: string, story: (H: HeadersClass) => unknown[]): void {
  test(name, () => {
    assert.deepEqual(story(FetchHeaders as unknown as HeadersClass), story(Headers as unknown as HeadersClass));
  });
}

sameOnBoth('built from a record, pairs, a Map, node\'s Headers and its own: lower-cased names, sorted, combined', (H) => [
  attempt(() => new H({ 'X-B': '2', 'x-a': '1', Accept: 'text/plain' })),
  attempt(() => new H([['X-B', '2'], ['x-b', '3'], ['x-a', '1']])),
  attempt(() => new H(new Map([['Content-Type', 'application/json'], ['x-z', 'last']]))),
  attempt(() => new H(new Headers({ 'x-from': 'node', Cookie: 'a=1' }))),
  attempt(() => new H(new FetchHeaders([['x-from', 'runtime'], ['set-cookie', 'a=1'], ['set-cookie', 'b=2']]))),
  attempt(() => new H(new Proxy({ 'x-proxied': 'yes' }, {}))),
  attempt(() => new H(undefined)),
  attempt(() => new H({})),
]);

sameOnBoth('refuses what node refuses: bad names, bad values, wide characters, malformed pairs, non-objects', (H) => [
  attempt(() => new H({ 'bad name': 'x' })),
  attempt(() => new H({ 'x-a': 'line\nbreak' })),
  attempt(() => new H({ 'x-a': 'nul\0' })),
  attempt(() => new H({ 'x-a': 'wide \u0100' })),
  attempt(() => new H([['x-a', '1', 'extra']])),
  attempt(() => new H([['x-a']])),
  attempt(() => new H(['ab'])),
  attempt(() => new H(5)),
  attempt(() => new H('x-a: 1')),
  attempt(() => new H(null)),
  attempt(() => new H({ [Symbol('s')]: 'x' })),
  attempt(() => new H().append('', 'x')),
  attempt(() => new H().get('bad:name')),
  attempt(() => new H().set('x-a', 'a\rb')),
  attempt(() => new H().has('x a')),
  attempt(() => new H().delete('(x)')),
]);

sameOnBoth('values are trimmed of HTTP whitespace; latin-1 and inner tabs stay', (H) => {
  const h = new H({ 'x-a': ' \t padded \t ', 'x-b': 'caf\u00e9\tbar', 'x-c': '   ' });
  h.set('x-d', '\n\r value\r\n');
  return [attempt(() => h.entries()), attempt(() => h.get('x-c'))];
});

sameOnBoth('append combines values (cookie with "; "), set replaces, delete removes, get and has ignore case', (H) => {
  const h = new H();
  h.append('X-List', 'a');
  h.append('x-list', 'b');
  h.append('Cookie', 'a=1');
  h.append('cookie', 'b=2');
  const before = [h.get('X-LIST'), h.get('cookie'), h.has('x-list'), h.has('x-none'), h.get('x-none')];
  h.set('x-list', 'c');
  h.delete('COOKIE');
  h.delete('x-never-there');
  return [before, attempt(() => h.entries()), attempt(() => h.keys()), attempt(() => h.values())];
});

sameOnBoth('set-cookie: combined by get, apart in getSetCookie and in iteration; set and delete reset it', (H) => {
  const h = new H([['set-cookie', 'a=1'], ['x-a', '1'], ['Set-Cookie', 'b=2']]);
  const one = new H([['set-cookie', 'only=1']]);
  const steps: unknown[] = [h.get('set-cookie'), h.getSetCookie(), attempt(() => h.entries()), one.getSetCookie(), attempt(() => one.entries())];
  h.set('set-cookie', 'c=3');
  steps.push(h.getSetCookie(), attempt(() => h.entries()));
  h.delete('set-cookie');
  steps.push(h.getSetCookie(), attempt(() => h.entries()));
  return steps;
});

sameOnBoth('forEach gives value, name and the headers; a change made while iterating shows in later steps', (H) => {
  const h = new H({ 'x-b': '2', 'x-a': '1' });
  const calls: unknown[] = [];
  h.forEach(function (this: unknown, value, name, self) {
    calls.push([value, name, self === h, this]);
  }, 'this-arg');
  const seen: string[] = [];
  for (const [name] of h) {
    seen.push(name);
    if (name === 'x-a') h.append('x-c', '3');
  }
  return [calls, seen, attempt(() => h.forEach(5 as never)), Object.prototype.toString.call(h)];
});
