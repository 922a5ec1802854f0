// Request-Id, traceparent, 404s, the authentication slot, body limits and validation.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { anOrg, aKey } from '../support/builders.ts';
import { call } from '../support/http.ts';

let app: TestApp;
let key: string;

before(async () => {
  app = await startTestApp({ env: { API_BODY_LIMIT_BYTES: '2048' } });
  const org = await anOrg(app.deps.database.pool);
  ({ key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId }));
});
after(() => app.close());

describe('every response carries a request id', () => {
  test('an unknown /api path answers a 404 problem whose request_id equals the Request-Id header', async () => {
    const res = await call(app.url, 'GET', '/api/does-not-exist');
    assert.equal(res.status, 404);
    assert.match(res.headers.get('content-type')!, /^application\/problem\+json/);
    const id = res.headers.get('request-id')!;
    assert.match(id, /^req_[0-9a-f-]{36}$/);
    assert.equal(res.body.request_id, id);
    assert.equal(res.body.instance, `urn:appstrate:request:${id}`);
    assert.equal(res.body.code, 'not_found');
    assert.equal(res.body.status, 404);
    assert.equal(res.body.type, 'https://errors.agent-platform.dev/not-found');
    assert.equal(typeof res.body.title, 'string');
    assert.equal(typeof res.body.detail, 'string');
  });

  test('successful responses carry a Request-Id too, unique per request', async () => {
    const a = await call(app.url, 'GET', '/health/live');
    const b = await call(app.url, 'GET', '/health/live');
    assert.equal(a.status, 200);
    assert.notEqual(a.headers.get('request-id'), b.headers.get('request-id'));
  });

  test('a valid traceparent is echoed; an invalid one is not', async () => {
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const ok = await call(app.url, 'GET', '/health/live', { headers: { traceparent: tp } });
    assert.equal(ok.headers.get('traceparent'), tp);
    const bad = await call(app.url, 'GET', '/health/live', { headers: { traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' } });
    assert.equal(bad.headers.get('traceparent'), null);
  });
});

describe('the authentication slot', () => {
  test('a protected route without credentials answers 401 with a Bearer challenge', async () => {
    const res = await call(app.url, 'GET', '/api/end-users');
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer');
    assert.equal(res.body.code, 'unauthorized');
  });

  test('a key with a bad checksum, an old ask_ key and an unknown key all answer 401', async () => {
    const flipped = key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a');
    for (const k of [flipped, 'ask_' + key.slice(5), 'apst_' + 'x'.repeat(36), 'not-a-key']) {
      const res = await call(app.url, 'GET', '/api/end-users', { key: k });
      assert.equal(res.status, 401, k);
      assert.equal(res.body.code, 'unauthorized');
    }
  });

  test('a non-Bearer Authorization header is refused', async () => {
    const res = await call(app.url, 'GET', '/api/end-users', { headers: { authorization: 'Basic Zm9vOmJhcg==' } });
    assert.equal(res.status, 401);
  });
});

describe('request bodies', () => {
  test('a body over the limit answers 413 payload_too_large', async () => {
    const res = await call(app.url, 'POST', '/api/end-users', { key, rawBody: JSON.stringify({ externalId: 'x', name: 'y'.repeat(5000) }), headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 413);
    assert.equal(res.body.code, 'payload_too_large');
  });

  test('a chunked body over the limit is refused while reading', async () => {
    const big = JSON.stringify({ externalId: 'x', name: 'y'.repeat(5000) });
    const stream = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode(big)); c.close(); } });
    const res = await fetch(`${app.url}/api/end-users`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: stream, duplex: 'half' } as unknown as RequestInit);
    assert.equal(res.status, 413);
    assert.equal(((await res.json()) as { code: string }).code, 'payload_too_large');
  });

  test('malformed JSON is 400', async () => {
    const res = await call(app.url, 'POST', '/api/end-users', { key, rawBody: '{"externalId": ', headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'invalid_request');
  });

  test('validation reports every offending field at once with the spec field codes', async () => {
    const res = await call(app.url, 'POST', '/api/end-users', { key, body: { name: 42, extra: true, metadata: 'x' } });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'validation_failed');
    const byField = Object.fromEntries(res.body.errors.map((e: any) => [e.field, e.code]));
    assert.deepEqual(byField, { externalId: 'required', name: 'invalid_type', extra: 'unknown_field', metadata: 'invalid_type' });
    for (const e of res.body.errors) assert.equal(typeof e.message, 'string');
  });

  test('an internal error never leaks internals', async () => {
    // A space id that breaks the SQL layer is still a clean answer, never a stack trace.
    const res = await call(app.url, 'GET', '/api/end-users/' + 'x'.repeat(2000), { key });
    assert.ok(res.status === 404 || res.status === 500);
    assert.doesNotMatch(res.text, /at .*\.ts:\d+|stack/i);
  });
});
