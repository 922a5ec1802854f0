// The sidecar's output check: tenant output schemas compile on the linear-time engine, and an
// output is never waved through because its schema failed to compile.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { outputChecker, prepareOutputValidator } from '../../sidecar/output-validator.ts';

describe('sidecar output check', () => {
  test('a schema that cannot compile fails every output with a message saying why', () => {
    for (const schema of [
      { type: 'object', properties: { code: { type: 'string', pattern: '^(a)\\1$' } } },
      { type: 'object', patternProperties: { '^x(?=y)': { type: 'string' } } },
      { type: 'not-a-type' },
    ]) {
      const check = outputChecker(schema);
      for (const value of [{}, { code: 'aa' }, 'text']) {
        const problems = check(value);
        assert.equal(problems.length, 1, JSON.stringify(schema));
        assert.match(problems[0], /output schema cannot be compiled/);
      }
    }
    assert.match(outputChecker({ type: 'string', pattern: '(?<!a)b' })('b')[0], /lookahead or lookbehind/);
  });

  test('a catastrophic pattern answers at once, also on the prepared validator', () => {
    prepareOutputValidator();
    const check = outputChecker({ type: 'object', properties: { word: { type: 'string', pattern: '^(a+)+$' } }, propertyNames: { pattern: '^(w|o|r|d)+$' } });
    const start = performance.now();
    const problems = check({ word: `${'a'.repeat(40)}!` });
    assert.ok(performance.now() - start < 2000);
    assert.equal(problems.length, 1);
    assert.match(problems[0], /^\/word must match pattern/);
    assert.deepEqual(check({ word: 'aaaa' }), []);
  });

  test('no schema means any output is fine', () => {
    assert.deepEqual(outputChecker(null)({ anything: 1 }), []);
  });
});
