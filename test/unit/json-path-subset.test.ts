// The JSONPath subset of identity_claims: what it reads, what it refuses, and hostile input that
// must neither crash nor reach past the parsed JSON (prototype members, huge or deep expressions).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluateJsonPath, JSON_PATH_MAX_LENGTH, JSON_PATH_MAX_STEPS, parseJsonPathExpression, selectJsonPath } from '../../lib/json-path.ts';

const answer = {
  user: { id: 42, email: 'ada@example.com', 'display name': 'Ada', "it's": 'quoted' },
  teams: [{ name: 'core' }, { name: 'ops' }],
  'a.b': 'dotted key',
};

test('root, dot and bracket members, and array indexes name one value', () => {
  assert.equal(selectJsonPath('$.user.email', answer), 'ada@example.com');
  assert.equal(selectJsonPath('$.user.id', answer), 42);
  assert.equal(selectJsonPath("$['user']['display name']", answer), 'Ada');
  assert.equal(selectJsonPath('$["user"]["email"]', answer), 'ada@example.com');
  assert.equal(selectJsonPath("$.user['it\\'s']", answer), 'quoted');
  assert.equal(selectJsonPath('$.teams[1].name', answer), 'ops');
  assert.equal(selectJsonPath("$['a.b']", answer), 'dotted key');
  assert.deepEqual(selectJsonPath('$', answer), answer);
});

test('a path naming nothing answers undefined', () => {
  assert.equal(selectJsonPath('$.user.phone', answer), undefined);
  assert.equal(selectJsonPath('$.teams[7].name', answer), undefined);
  assert.equal(selectJsonPath('$.teams.name', answer), undefined, 'a member step on an array');
  assert.equal(selectJsonPath('$.user[0]', answer), undefined, 'an index step on an object');
  assert.equal(selectJsonPath('$.user.email.length', answer), undefined, 'a member of a string');
  assert.equal(selectJsonPath('$.x', null), undefined);
  assert.equal(selectJsonPath('$[0]', 'text'), undefined);
});

test('expressions outside the subset are refused with a reason', () => {
  const refused: Array<[unknown, RegExp]> = [
    ['user.id', /root \$/],
    ['', /root \$/],
    ['$..id', /recursive descent/],
    ['$.user.*', /wildcard/],
    ['$.teams[*]', /wildcard/],
    ['$.teams[?(@.name=="ops")]', /filter or script/],
    ['$.teams[(@.length-1)]', /filter or script/],
    ['$.teams[-1]', /array index/],
    ['$.teams[0:2]', /array index/],
    ['$.teams[01]', /array index/],
    ['$.teams[99999999]', /array index/],
    ['$.', /member name/],
    ['$.1abc', /member name/],
    ['$.user email', /step was expected/],
    ["$['user", /closing quote/],
    ["$['user'", /closing \]/],
    ["$['']", /empty member/],
    ["$['a\\nb']", /escape/],
    ['$["a\u0001"]', /control character/],
    ['$user', /step was expected/],
    [42, /string/],
    [null, /string/],
  ];
  for (const [text, reason] of refused) {
    const parsed = parseJsonPathExpression(text);
    assert.equal(parsed.ok, false, `${JSON.stringify(text)} was accepted`);
    if (!parsed.ok) assert.match(parsed.reason, reason, `${JSON.stringify(text)}: ${parsed.reason}`);
    if (typeof text === 'string') assert.equal(selectJsonPath(text, answer), undefined);
  }
});

test('length and depth are bounded: huge or deep expressions are refused at once', () => {
  const huge = `$.${'a'.repeat(1_000_000)}`;
  const started = performance.now();
  const parsed = parseJsonPathExpression(huge);
  assert.ok(performance.now() - started < 200, 'a huge expression is refused before it is read');
  assert.equal(parsed.ok, false);
  if (!parsed.ok) assert.match(parsed.reason, new RegExp(`longer than ${JSON_PATH_MAX_LENGTH}`));

  const deepest = `$${'.a'.repeat(JSON_PATH_MAX_STEPS)}`;
  assert.equal(parseJsonPathExpression(deepest).ok, true);
  const deeper = parseJsonPathExpression(`$${'.a'.repeat(JSON_PATH_MAX_STEPS + 1)}`);
  assert.equal(deeper.ok, false);
  if (!deeper.ok) assert.match(deeper.reason, /more than 16 steps/);
  assert.equal(parseJsonPathExpression(`$${'[0]'.repeat(100)}`).ok, false);

  // a deeply nested document is walked only as deep as the expression
  let nested: unknown = 'bottom';
  for (let i = 0; i < 100_000; i++) nested = { a: nested };
  assert.deepEqual(Object.keys(selectJsonPath('$.a.a.a', nested) as object), ['a']);
});

test('prototype members are never reached, and nothing is polluted', () => {
  const parsedJson = JSON.parse('{"__proto__": {"polluted": "yes"}, "user": {"constructor": {"name": "own"}}}');
  assert.equal(selectJsonPath('$.constructor', {}), undefined);
  assert.equal(selectJsonPath('$.constructor.name', answer), undefined);
  assert.equal(selectJsonPath("$['__proto__']", {}), undefined);
  assert.equal(selectJsonPath('$.toString', answer), undefined);
  assert.equal(selectJsonPath('$.teams.length', answer), undefined);
  assert.equal(selectJsonPath('$.hasOwnProperty', answer), undefined);
  // JSON.parse makes "__proto__" an own data member: it is read as data
  assert.equal(selectJsonPath('$.__proto__.polluted', parsedJson), 'yes');
  assert.equal(selectJsonPath('$.user.constructor.name', parsedJson), 'own');
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
});

test('evaluation of parsed steps is read-only', () => {
  const doc = { user: { id: 'u1' } };
  const frozen = structuredClone(doc);
  const parsed = parseJsonPathExpression('$.user.id');
  assert.ok(parsed.ok);
  if (parsed.ok) assert.equal(evaluateJsonPath(parsed.steps, doc), 'u1');
  assert.deepEqual(doc, frozen);
});
