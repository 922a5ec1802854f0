// Bad input at the edge answers a problem document, never a 500: NUL bytes and unpaired
// surrogates in paths, queries and JSON bodies, bytes that are not UTF-8, an unreadable session
// cookie, a truncated multipart upload.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { anOrg, aKey, aSession } from '../support/builders.ts';
import { call, type WireResponse } from '../support/http.ts';

let testApp: TestApp;
const app = () => testApp;
const pool = () => testApp.deps.database.pool;
let key: string;
let cookie: string;
let orgId: string;

before(async () => {
  testApp = await startTestApp();
  const org = await anOrg(pool());
  orgId = org.orgId;
  ({ key } = await aKey(pool(), { ...org, userId: org.ownerId }));
  ({ cookie } = await aSession(pool(), org.ownerId));
});
after(() => testApp.close());

function assertProblem(res: WireResponse, status: number, code: string): void {
  assert.equal(res.status, status, res.text);
  assert.match(res.headers.get('content-type')!, /^application\/problem\+json/);
  assert.equal(res.body.code, code, res.text);
  assert.equal(res.body.request_id, res.headers.get('request-id'));
}

describe('NUL bytes and unpaired surrogates', () => {
  test('in a path id: 400 invalid_request naming the parameter', async () => {
    for (const path of ['/api/end-users/eu_%00', `/api/orgs/${orgId.slice(0, -1)}%00`]) {
      const res = await call(app().url, 'GET', path, { key, cookie });
      assertProblem(res, 400, 'invalid_request');
      assert.ok(['id', 'orgId'].includes(res.body.param), res.text);
    }
  });

  test('in a query value or a cursor: 400 invalid_request naming the parameter', async () => {
    for (const q of ['cursor=%00abc', 'limit=1&cursor=a%00', 'externalId=x%00y']) {
      const res = await call(app().url, 'GET', `/api/end-users?${q}`, { key });
      assertProblem(res, 400, 'invalid_request');
      assert.ok(['cursor', 'externalId'].includes(res.body.param), res.text);
    }
  });

  test('in JSON fields of sign-in, sign-up, password reset, end-users and spaces: 400 validation_failed naming the field', async () => {
    const cases: Array<[string, unknown, string, { key?: string; cookie?: string; org?: string }]> = [
      ['/api/auth/sign-in/email', { email: 'a\u0000@example.test', password: 'correct horse battery' }, 'email', {}],
      ['/api/auth/sign-up/email', { email: 'new@example.test', password: 'correct horse battery', name: 'N\u0000' }, 'name', {}],
      ['/api/auth/request-password-reset', { email: '\ud800x@example.test' }, 'email', {}],
      ['/api/auth/reset-password', { token: 'tok\u0000', new_password: 'correct horse battery' }, 'token', {}],
      ['/api/end-users', { externalId: 'ext', name: 'lone \udc00 low' }, 'name', { key }],
      ['/api/end-users', { externalId: 'ext', metadata: { 'k\u0000': 'v' } }, 'metadata.k\\u0000', { key }],
      ['/api/spaces', { name: ['ok', 'n\u0000'] }, 'name[1]', { cookie, org: orgId }],
    ];
    for (const [path, body, field, auth] of cases) {
      const res = await call(app().url, 'POST', path, { ...auth, body });
      assertProblem(res, 400, 'validation_failed');
      assert.ok(res.body.errors.some((e: { field: string }) => e.field === field), `${path}: ${res.text}`);
    }
  });

  test('a body whose bytes are not UTF-8 is 400 invalid_request', async () => {
    const raw = Buffer.concat([Buffer.from('{"externalId":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('","name":"x"}')]);
    const res = await call(app().url, 'POST', '/api/end-users', { key, rawBody: raw, headers: { 'content-type': 'application/json' } });
    assertProblem(res, 400, 'invalid_request');
  });

  test('a body nested past the limit is 400 invalid_request', async () => {
    const raw = `{"externalId":"e","metadata":{"a":${'['.repeat(5000)}${']'.repeat(5000)}}}`;
    const res = await call(app().url, 'POST', '/api/end-users', { key, rawBody: raw, headers: { 'content-type': 'application/json' } });
    assertProblem(res, 400, 'invalid_request');
  });
});

describe('the session cookie', () => {
  test('a cookie that is not valid percent-encoding is no credential: 401', async () => {
    for (const value of ['%', '%E0%A4%A', 'abc%zz']) {
      const res = await call(app().url, 'GET', '/api/orgs', { cookie: `agent_platform.session_token=${value}` });
      assertProblem(res, 401, 'unauthorized');
    }
  });

  test('the session read of /api/auth is not broken by it either', async () => {
    const res = await call(app().url, 'GET', '/api/auth/session', { cookie: 'agent_platform.session_token=%' });
    assert.ok(res.status < 500, res.text);
  });
});

describe('multipart uploads', () => {
  test('a truncated multipart body is 400 invalid_request', async () => {
    const boundary = 'edgeboundary';
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\nContent-Type: application/zip\r\n\r\nPK\u0003\u0004 not finished`;
    const res = await call(app().url, 'POST', '/api/packages/import', {
      key, rawBody: body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
    });
    assertProblem(res, 400, 'invalid_request');
  });

  test('a NUL byte in a file name or a text field is 400 invalid_request', async () => {
    const boundary = 'edgeboundary';
    const parts = [
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename*=UTF-8''a%00.zip\r\nContent-Type: application/zip\r\n\r\nPK\r\n--${boundary}--\r\n`,
      `--${boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\na\u0000b\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n\r\nPK\r\n--${boundary}--\r\n`,
    ];
    for (const body of parts) {
      const res = await call(app().url, 'POST', '/api/packages/import', {
        key, rawBody: body, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      });
      assertProblem(res, 400, 'invalid_request');
    }
  });
});
