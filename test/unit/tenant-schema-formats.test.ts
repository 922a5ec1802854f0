// `format` checks run on tenant data: each is bounded so that adversarial strings as long as a
// request body cannot hold the thread, and `url` keeps ajv-formats' meaning on the linear engine.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fullFormats } from 'ajv-formats/dist/formats.js';
import { compileJsonSchema } from '../../lib/afps/json-schema.ts';

const SIZE = 2 * 1024 * 1024;
// shapes that drive a backtracking check to its worst: long runs of what a format's repeated
// parts accept, ended by what none accepts
const ADVERSARIAL: Record<string, (n: number) => string> = {
  letters: (n) => `${'a'.repeat(n)}!`,
  spaces: (n) => `${' '.repeat(n)}x`,
  digits: (n) => `${'1'.repeat(n)}x`,
  dots: (n) => `${'a.'.repeat(n / 2)}!`,
  colons: (n) => `http://[${':'.repeat(n)}`,
  userinfo: (n) => `http://${'a:'.repeat(n / 2)}`,
  slashes: (n) => `${'/a'.repeat(n / 2)}\u0000`,
  percents: (n) => `${'%41'.repeat(n / 3)}%`,
  duration: (n) => `P${'1Y'.repeat(n / 2)}x`,
  dateTime: (n) => `2020-01-01T${'0'.repeat(n)}`,
  email: (n) => `a@${'a.'.repeat(n / 2)}!`,
  braces: (n) => `${'{a'.repeat(n / 2)},`,
};
const STRING_FORMATS = Object.entries(fullFormats)
  .filter(([, f]) => typeof f !== 'boolean' && !(typeof f === 'object' && 'type' in f && f.type !== 'string'))
  .map(([name]) => name)
  // base64 content may be a whole file, so byte is not capped; its check is one linear regex scan
  .filter((name) => name !== 'byte');

describe('format checks on long adversarial strings', () => {
  test('ajv-formats url backtracks on the native engine (the reason it runs on RE2 here)', () => {
    const url = fullFormats.url as RegExp;
    const start = performance.now();
    // quadratic: 6,000 colons took 15-20 ms here, at the threshold on a quiet machine; 24,000 take ~250 ms
    url.test(`http://[${':'.repeat(24_000)}`);
    assert.ok(performance.now() - start > 20, 'the native url check was quick; the test input no longer shows the problem');
  });

  for (const name of STRING_FORMATS) {
    test(`${name} answers every shape of ${SIZE} characters within 50 ms`, () => {
      const validate = compileJsonSchema({ type: 'string', format: name });
      for (const [shape, make] of Object.entries(ADVERSARIAL)) {
        const text = make(SIZE);
        const start = performance.now();
        validate(text);
        const ms = performance.now() - start;
        assert.ok(ms < 50, `${name} on ${shape}: ${ms.toFixed(1)} ms`);
      }
    });
  }
});

describe('bounded formats keep their meaning', () => {
  test('url agrees with ajv-formats on ordinary and private-address URLs', () => {
    const validate = compileJsonSchema({ type: 'string', format: 'url' });
    const samples = [
      'http://example.com', 'https://example.com/a/b?c=d#e', 'ftp://files.example.org:21/x', 'http://user:pw@example.com/',
      'http://10.0.0.1/', 'http://127.0.0.1:8080', 'http://169.254.1.1', 'http://192.168.0.1', 'http://172.16.0.1', 'http://172.32.0.1',
      'http://8.8.8.8', 'http://user@10.0.0.1', 'http://localhost', 'http://ex ample.com', 'mailto:a@example.com', 'http://例子.测试',
      'http://a-b.example.com', 'http://-a.example.com', 'HTTP://EXAMPLE.COM',
    ];
    for (const url of samples) assert.equal(validate(url), (fullFormats.url as RegExp).test(url), url);
  });

  test('short formats accept their ordinary values and refuse oversized ones', () => {
    const check = (format: string, text: string) => compileJsonSchema({ type: 'string', format })(text);
    assert.equal(check('date-time', '2024-05-06T07:08:09.123Z'), true);
    assert.equal(check('date', '2024-05-06'), true);
    assert.equal(check('email', 'someone@example.com'), true);
    assert.equal(check('hostname', `${'a'.repeat(63)}.example.com`), true);
    assert.equal(check('uri', `https://example.com/${'a'.repeat(10_000)}`), true);
    assert.equal(check('uri', `https://example.com/${'a'.repeat(70_000)}`), false);
    assert.equal(check('date-time', `2024-05-06T07:08:09.${'1'.repeat(200)}Z`), false);
  });

  test('formatMaximum still compares dates', () => {
    const validate = compileJsonSchema({ type: 'string', format: 'date', formatMaximum: '2024-12-31' });
    assert.equal(validate('2024-06-01'), true);
    assert.equal(validate('2025-01-01'), false);
  });
});
