// Authorized-URI wildcards are matched without a backtracking regex: a manifest pattern with many
// `*` cannot hold the thread on a long URL, and matching keeps its meaning.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { matchesAuthorizedUri } from '../../lib/afps/authorized-uri.ts';

test('many wildcards against a long path that does not match answer at once', () => {
  const pattern = `https://api.example.com/${'*a'.repeat(3)}*b`;
  const url = `https://api.example.com/${'a'.repeat(300)}`;
  const start = performance.now();
  assert.equal(matchesAuthorizedUri(pattern, url), false);
  assert.ok(performance.now() - start < 500, `took ${performance.now() - start} ms`);
  assert.equal(matchesAuthorizedUri(`https://api.example.com/${'*a'.repeat(20)}*b`, `https://api.example.com/${'a'.repeat(5000)}`), false);
});

test('wildcards match any run of characters, literal parts in order, anchored at both ends', () => {
  const base = 'https://api.example.com';
  const cases: Array<[string, string, boolean]> = [
    ['/v1/*', '/v1/items?page=2', true],
    ['/v1/*', '/v2/items', false],
    ['/v1/*/items', '/v1/x/y/items', true],
    ['/v1/*/items', '/v1/items', false],
    ['/*a*b', '/xaxb', true],
    ['/*a*b', '/xbxa', false],
    ['/a*a', '/a', false],
    ['/a*a', '/aa', true],
    ['/**', '/', true],
    ['/exact', '/exact', true],
    ['/exact', '/exact/more', false],
    ['/v1.*', '/v1x', false],
    ['/v1.*', '/v1.json', true],
  ];
  for (const [path, target, expected] of cases) {
    assert.equal(matchesAuthorizedUri(base + path, base + target), expected, `${path} against ${target}`);
  }
});
