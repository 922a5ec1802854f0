// A login success criterion's regex is tenant text run against an upstream's response: it runs
// on the linear-time engine, and one that engine cannot run is refused when the manifest is read.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evaluateSuccessCriterion } from '../../lib/afps/login-evaluation.ts';
import { parseSuccessCriterion } from '../../lib/afps/success-criterion.ts';

test('a catastrophic criterion regex answers at once against a long response body', () => {
  const parsed = parseSuccessCriterion('body.token == /^(a+)+$/');
  assert.ok(parsed.ok);
  const response = { status: 200, headers: {}, cookies: {}, body: JSON.stringify({ token: `${'a'.repeat(5000)}!` }) };
  const start = performance.now();
  assert.equal(evaluateSuccessCriterion(parsed.criterion, response), false);
  assert.ok(performance.now() - start < 2000, `took ${performance.now() - start} ms`);
  assert.equal(evaluateSuccessCriterion(parsed.criterion, { ...response, body: JSON.stringify({ token: 'aaa' }) }), true);
});

test('backreferences and lookaround in a criterion regex are refused with the reason', () => {
  for (const [condition, reason] of [
    ['body.token == /^(a)\\1$/', /backreference/],
    ["header.X-Mode == /^(?=x)/", /lookahead or lookbehind/],
    ['body.token == /(?<!a)b/i', /lookahead or lookbehind/],
  ] as const) {
    const parsed = parseSuccessCriterion(condition);
    assert.equal(parsed.ok, false, condition);
    if (!parsed.ok) assert.match(parsed.reason, reason, condition);
  }
});
