// In production the /api/auth/* routes are limited per client IP (429 rate_limited, JSON
// problem with Retry-After); elsewhere they are not limited. Bootstrap is limited everywhere.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';
import { client } from '../support/http.ts';

describe('in production', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp({ env: { NODE_ENV: 'production' } });
  });
  after(() => app.close());

  test('the eleventh sign-in within a minute from one address is 429 rate_limited', async () => {
    const attempt = () => client(app.url).post('/api/auth/sign-in/email', { email: 'who@example.test', password: 'whatever' });
    for (let i = 0; i < 10; i++) {
      const res = await attempt();
      assert.equal(res.status, 401);
      assert.match(res.headers.get('ratelimit') ?? '', /limit=10, remaining=\d+/);
    }
    const refused = await attempt();
    assert.equal(refused.status, 429);
    assert.equal(refused.body.code, 'rate_limited');
    assert.match(refused.headers.get('content-type') ?? '', /application\/problem\+json/);
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    assert.ok(refused.body.retry_after > 0);
  });

  test('sign-up has its own, smaller bucket', async () => {
    const attempt = (i: number) => client(app.url).post('/api/auth/sign-up/email', { email: `p${i}@example.test`, password: 'long enough secret', name: 'P' });
    for (let i = 0; i < 5; i++) assert.equal((await attempt(i)).status, 201);
    assert.equal((await attempt(5)).status, 429);
  });

  test('magic-link requests are limited like the other auth routes', async () => {
    const attempt = (i: number) => client(app.url).post('/api/auth/sign-in/magic-link', { email: `m${i}@example.test` });
    for (let i = 0; i < 5; i++) {
      const res = await attempt(i);
      assert.equal(res.status, 202, res.text);
      assert.match(res.headers.get('ratelimit') ?? '', /limit=5, /);
    }
    const refused = await attempt(5);
    assert.equal(refused.status, 429);
    assert.equal(refused.body.code, 'rate_limited');
  });
});

describe('outside production', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  test('sign-in attempts are not limited', async () => {
    for (let i = 0; i < 12; i++) {
      const res = await client(app.url).post('/api/auth/sign-in/email', { email: 'who@example.test', password: 'whatever' });
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('ratelimit'), null);
    }
  });
});
