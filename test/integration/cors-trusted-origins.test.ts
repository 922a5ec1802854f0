// CORS: origins listed in TRUSTED_ORIGINS get the CORS headers (with the exposed response
// headers a browser client needs) and a 204 preflight; any other origin gets none.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { call } from '../support/http.ts';

const TRUSTED = 'https://app.example.test';
const ALSO_TRUSTED = 'http://localhost:5173';
const EXPOSED = ['Request-Id', 'Service-Version', 'RateLimit', 'RateLimit-Policy', 'Retry-After', 'Link', 'ETag', 'Idempotent-Replayed'];

let app: TestApp;
let key: string;

before(async () => {
  // A trailing slash in the setting still matches the browser's Origin.
  app = await startTestApp({ env: { TRUSTED_ORIGINS: `${TRUSTED}, ${ALSO_TRUSTED}/` } });
  const org = await anOrg(app.deps.database.pool);
  ({ key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId }));
});
after(() => app.close());

const listOf = (header: string | null) => (header ?? '').split(',').map((h) => h.trim().toLowerCase()).filter(Boolean);
const preflight = (origin: string) =>
  fetch(`${app.url}/api/end-users`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, idempotency-key, x-org-id, x-space-id, service-version' },
  });

describe('a trusted origin', () => {
  test('gets Allow-Origin and the exposed headers on success', async () => {
    for (const origin of [TRUSTED, ALSO_TRUSTED]) {
      const res = await call(app.url, 'GET', '/api/end-users', { key, headers: { origin } });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('access-control-allow-origin'), origin);
      assert.equal(res.headers.get('access-control-allow-credentials'), 'true');
      assert.ok(listOf(res.headers.get('vary')).includes('origin'));
      const exposed = listOf(res.headers.get('access-control-expose-headers'));
      for (const h of EXPOSED) assert.ok(exposed.includes(h.toLowerCase()), `${h} is exposed`);
    }
  });

  test('gets them on errors too, so the browser can read the problem', async () => {
    const res = await call(app.url, 'GET', '/api/end-users', { headers: { origin: TRUSTED } });
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('access-control-allow-origin'), TRUSTED);
    assert.ok(listOf(res.headers.get('access-control-expose-headers')).includes('request-id'));
  });

  test('a preflight answers 204 allowing the method and the requested headers', async () => {
    const res = await preflight(TRUSTED);
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), TRUSTED);
    const methods = listOf(res.headers.get('access-control-allow-methods'));
    for (const m of ['get', 'post', 'patch', 'delete']) assert.ok(methods.includes(m), m);
    const allowed = listOf(res.headers.get('access-control-allow-headers'));
    for (const h of ['authorization', 'content-type', 'idempotency-key', 'x-org-id', 'x-space-id', 'service-version']) assert.ok(allowed.includes(h), h);
  });
});

describe('an untrusted origin', () => {
  for (const origin of ['https://evil.example.test', 'https://app.example.test.evil.test', 'null']) {
    test(`${origin} gets no CORS header on a request or a preflight`, async () => {
      const res = await call(app.url, 'GET', '/api/end-users', { key, headers: { origin } });
      assert.equal(res.status, 200);
      const pre = await preflight(origin);
      for (const headers of [res.headers, pre.headers]) {
        assert.equal(headers.get('access-control-allow-origin'), null);
        assert.equal(headers.get('access-control-expose-headers'), null);
        assert.equal(headers.get('access-control-allow-methods'), null);
        assert.equal(headers.get('access-control-allow-credentials'), null);
      }
      assert.notEqual(pre.status, 204);
    });
  }
});
