// Tenant schemas compile through the shared linear-time engine: catastrophic patterns answer in
// linear time wherever ajv uses a pattern, RE2-incompatible ones are refused with their location,
// and ECMAScript spellings RE2 lacks still mean what they mean in ECMAScript.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { compileJsonSchema, jsonSchemaProblem } from '../../lib/afps/json-schema.ts';
import { compileLinear, linearRegExpEngine, PATTERN_PROGRAM_LIMIT, UnsafePatternError } from '../../lib/linear-regex.ts';

const CATASTROPHIC = '^(a+)+$';
const EVIL_INPUT = `${'a'.repeat(40)}!`;

function timed<T>(fn: () => T): { value: T; ms: number } {
  const start = performance.now();
  const value = fn();
  return { value, ms: performance.now() - start };
}

describe('the catastrophic pattern', () => {
  test('really is catastrophic on the native engine: a child process running it is still busy after 3 s', () => {
    const code = `/${CATASTROPHIC}/u.test(${JSON.stringify(EVIL_INPUT)}); process.stdout.write('done')`;
    const child = spawnSync(process.execPath, ['-e', code], { timeout: 3000, encoding: 'utf8' });
    assert.equal(child.signal, 'SIGTERM', `native run finished: ${child.stdout}`);
    assert.equal(child.stdout, '');
  });

  test('answers at once through pattern, patternProperties and propertyNames', () => {
    const schemas = [
      { type: 'string', pattern: CATASTROPHIC },
      { type: 'object', patternProperties: { [CATASTROPHIC]: { type: 'integer' } } },
      { type: 'object', propertyNames: { pattern: CATASTROPHIC } },
      { type: 'array', items: { $ref: '#/$defs/word' }, $defs: { word: { type: 'string', pattern: CATASTROPHIC } } },
    ];
    for (const schema of schemas) {
      assert.equal(jsonSchemaProblem(schema), null, JSON.stringify(schema));
      const validate = compileJsonSchema(schema);
      const data = schema.type === 'string' ? EVIL_INPUT : schema.type === 'array' ? [EVIL_INPUT] : { [EVIL_INPUT]: 'x' };
      const { value, ms } = timed(() => validate(data));
      assert.ok(ms < 2000, `${JSON.stringify(schema)} took ${ms} ms`);
      assert.equal(value, schema.patternProperties ? true : false, JSON.stringify(schema));
    }
    assert.equal(compileJsonSchema({ type: 'string', pattern: CATASTROPHIC })('aaaa'), true);
    assert.equal(compileJsonSchema({ type: 'object', patternProperties: { [CATASTROPHIC]: { type: 'integer' } } })({ aaa: 'x' }), false);
    assert.equal(compileJsonSchema({ type: 'object', propertyNames: { pattern: CATASTROPHIC } })({ aaa: 1 }), true);
  });

  test('stays linear on a megabyte of input', () => {
    const validate = compileJsonSchema({ type: 'string', pattern: '^(a|aa)+$' });
    const { value, ms } = timed(() => validate(`${'a'.repeat(1_000_000)}!`));
    assert.equal(value, false);
    assert.ok(ms < 2000, `took ${ms} ms`);
  });
});

describe('patterns RE2 cannot run are refused, naming where they sit', () => {
  const cases: Array<[object, string, RegExp]> = [
    [{ type: 'object', properties: { code: { type: 'string', pattern: '^(a)\\1$' } } }, '/properties/code/pattern', /backreference/],
    [{ type: 'object', properties: { code: { type: 'string', pattern: '^(?<x>a)\\k<x>$' } } }, '/properties/code/pattern', /backreference/],
    [{ type: 'string', pattern: 'foo(?=bar)' }, '/pattern', /lookahead or lookbehind/],
    [{ type: 'string', pattern: 'foo(?!bar)' }, '/pattern', /lookahead or lookbehind/],
    [{ type: 'string', pattern: '(?<=x)y' }, '/pattern', /lookahead or lookbehind/],
    [{ type: 'object', patternProperties: { '^x(?<!y)$': {} } }, '/patternProperties/^x(?<!y)$', /lookahead or lookbehind/],
    [{ type: 'object', propertyNames: { pattern: '^(b)\\1' } }, '/propertyNames/pattern', /backreference/],
    [{ type: 'array', items: { anyOf: [{ type: 'string', pattern: '(?=a)' }] } }, '/items/anyOf/0/pattern', /lookahead or lookbehind/],
  ];
  for (const [schema, pointer, reason] of cases) {
    test(`${JSON.stringify(schema)} is refused at ${pointer}`, () => {
      const problem = jsonSchemaProblem(schema);
      assert.ok(problem, 'accepted');
      assert.match(problem, reason);
      assert.ok(problem.includes(`${pointer}: pattern `), problem);
      assert.throws(() => compileJsonSchema(schema));
    });
  }

  test('a character class may hold the characters of a lookahead or an escaped digit', () => {
    assert.equal(jsonSchemaProblem({ type: 'string', pattern: '^[(?=\\d]+$' }), null);
    assert.equal(compileJsonSchema({ type: 'string', pattern: '^[(?=]+$' })('(?='), true);
  });

  test('a pattern over the program limit, or a schema over the budget, is refused', () => {
    assert.match(jsonSchemaProblem({ type: 'string', pattern: '^(?:[a-z]{1000}){3}$' }) ?? '', /repeat count/);
    assert.match(jsonSchemaProblem({ type: 'string', pattern: '^[a-z]{1000}[0-9]{1000}[a-z]{1000}$' }) ?? '', /too large/);
    const properties: Record<string, object> = {};
    for (let i = 0; i < 8; i++) properties[`p${i}`] = { type: 'string', pattern: `^${String.fromCharCode(97 + i)}[a-z]{1,${PATTERN_PROGRAM_LIMIT / 2 - 20}}$` };
    assert.match(jsonSchemaProblem({ type: 'object', properties }) ?? '', /budget/);
    const engine = linearRegExpEngine(60);
    engine('^a{40}$', 'u');
    engine('^a{40}$', 'u'); // the same pattern again costs nothing more
    assert.throws(() => engine('^b{40}$', 'u'), UnsafePatternError);
  });
});

describe('ECMAScript spellings RE2 lacks keep their meaning', () => {
  const samples = ['', 'a', 'Ωμέγα', '😀', 'A1', 'x\ny', '2024-05-06', 'AbC', '\u0001', 'ab_c'];
  const patterns = [
    '^\\p{Script=Greek}+$', '^\\p{sc=Greek}+$', '^\\p{General_Category=Lu}', '^\\p{L}+$', '^\\u{1F600}$', '^\\u0041',
    '^(?<year>\\d{4})-(?<month>\\d{2})-\\d{2}$', '^[^]+$', '^\\cA$', '^[\\w-]+$', '^\\d+$', 'x.y', '^$', '(?:)', '^\\/?a',
  ];
  for (const source of patterns) {
    test(source, () => {
      const native = new RegExp(source, 'u');
      const linear = compileLinear(source, 'u');
      for (const sample of samples) assert.equal(linear.test(sample), native.test(sample), `${source} on ${JSON.stringify(sample)}`);
    });
  }

  test('flags i, m and s map; others are refused', () => {
    assert.equal(compileLinear('^abc$', 'i').test('AbC'), true);
    assert.equal(compileLinear('^b$', 'm').test('a\nb'), true);
    assert.equal(compileLinear('^a.b$', 's').test('a\nb'), true);
    assert.throws(() => compileLinear('a', 'g'), /flag/);
  });

  test('text the native engine would not compile is refused', () => {
    assert.throws(() => compileLinear('(unclosed', 'u'), /does not compile/);
    assert.throws(() => compileLinear('\\8', 'u'), /does not compile/);
  });
});
