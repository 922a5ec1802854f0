import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluateSuccessCriterion, extractLoginOutput, type LoginResponse } from '../../lib/afps/login-evaluation.ts';
import { parseSuccessCriterion, type SuccessCriterion } from '../../lib/afps/success-criterion.ts';

function criterion(condition: string): SuccessCriterion {
  const parsed = parseSuccessCriterion(condition);
  if (!parsed.ok) assert.fail(`${condition}: ${parsed.reason}`);
  return parsed.criterion;
}

function refusal(condition: string): string {
  const parsed = parseSuccessCriterion(condition);
  if (parsed.ok) assert.fail(`${condition} was accepted`);
  return parsed.reason;
}

const RESPONSE: LoginResponse = {
  status: 200,
  headers: { 'Content-Type': 'application/json; charset=utf-8', 'X-Count': '42' },
  cookies: { sid: 'abc123' },
  body: JSON.stringify({ ok: true, user: { name: "O'Brien", roles: ['admin'] }, token: 'tkn', missing: null }),
};

describe('login success criteria', () => {
  test('one comparison of each supported expression parses', () => {
    assert.deepEqual(criterion('status == 200'), { expression: { source: 'status' }, value: { kind: 'number', value: 200 } });
    assert.deepEqual(criterion("header.Content-Type == 'text/html'").expression, { source: 'header', name: 'Content-Type' });
    assert.deepEqual(criterion("cookie.sid == 'x'").expression, { source: 'cookie', name: 'sid' });
    assert.deepEqual(criterion('body.user.roles[0] == \'admin\'').expression, { source: 'body', path: ['user', 'roles', 0] });
    assert.deepEqual(criterion("  body.ok==true  ").value, { kind: 'boolean', value: true });
    assert.deepEqual(criterion("body.note == 'a && b == c'").value, { kind: 'string', value: 'a && b == c' });
    assert.deepEqual(criterion("body.name == 'O\\'Brien'").value, { kind: 'string', value: "O'Brien" });
  });

  test('compound conditions are refused', () => {
    for (const c of ['status == 200 && body.ok == true', 'status == 200 || status == 302', 'status == 200 and body.ok == true', 'body.ok == true OR status == 200', "body.ok && status == 200"]) {
      assert.match(refusal(c), /compound/, c);
    }
  });

  test('strings must be single-quoted', () => {
    assert.match(refusal('body.user.name == admin'), /unquoted string/);
    assert.match(refusal('body.user.name == "admin"'), /single quotes/);
    assert.match(refusal("body.user.name == 'admin"), /closing quote/);
  });

  test('xpath expressions are refused', () => {
    for (const c of ["//input[@name='ok'] == 'x'", "/html/body == 'x'", "xpath(//a) == 'x'", "body.@attr == 'x'"]) {
      assert.match(refusal(c), /xpath/, c);
    }
  });

  test('regex values must compile and use known flags', () => {
    assert.ok(criterion('header.Content-Type == /^application\\/json/i').value.kind === 'regex');
    assert.ok(criterion('body.token == /[a-z/]+/').value.kind === 'regex');
    assert.match(refusal('body.token == /(unclosed/'), /does not compile/);
    assert.match(refusal('body.token == /x/g'), /flags/);
    assert.match(refusal('body.token == /x'), /closing slash/);
  });

  test('other operators, missing sides and trailing text are refused', () => {
    for (const c of ['status != 200', 'status >= 200', 'status === 200', 'status = 200', 'status =~ 200']) assert.match(refusal(c), /only ==/, c);
    assert.match(refusal('== 200'), /no expression/);
    assert.match(refusal('status =='), /no value/);
    assert.match(refusal('status == 200 200'), /text after the value/);
    assert.match(refusal("query.x == 'a'"), /cannot be evaluated/);
    assert.match(refusal("status == 'ok'"), /HTTP status number/);
  });

  test('criteria evaluate against a login response', () => {
    const holds = (c: string) => evaluateSuccessCriterion(criterion(c), RESPONSE);
    assert.equal(holds('status == 200'), true);
    assert.equal(holds('status == 302'), false);
    assert.equal(holds('header.content-type == /json/'), true);
    assert.equal(holds('header.X-Count == 42'), true);
    assert.equal(holds("cookie.sid == 'abc123'"), true);
    assert.equal(holds("cookie.constructor == 'x'"), false);
    assert.equal(holds('body.ok == true'), true);
    assert.equal(holds("body.ok == 'true'"), false);
    assert.equal(holds("body.user.roles[0] == 'admin'"), true);
    assert.equal(holds('body.missing == null'), true);
    assert.equal(holds('body.absent == null'), false);
  });

  test('outputs are extracted from cookies, headers and JSON bodies', () => {
    assert.equal(extractLoginOutput({ from: 'cookie', name: 'sid' }, RESPONSE), 'abc123');
    assert.equal(extractLoginOutput({ from: 'header', name: 'x-count' }, RESPONSE), '42');
    assert.equal(extractLoginOutput({ from: 'body', path: 'token' }, RESPONSE), 'tkn');
    assert.equal(extractLoginOutput({ from: 'body', path: 'user' }, RESPONSE), undefined);
    assert.equal(extractLoginOutput({ from: 'cookie', name: 'other' }, RESPONSE), undefined);
  });
});
