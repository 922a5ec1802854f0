// Without a mail transport the reset token is shown in the response only in test and
// development; in production the answer never carries it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aUserWithPassword } from '../support/builders.ts';
import { client } from '../support/http.ts';

let app: TestApp;
before(async () => {
  app = await startTestApp({ env: { NODE_ENV: 'production' } });
});
after(() => app.close());

test('in production a reset request answers 202 without the token, and a link is still created', async () => {
  const u = await aUserWithPassword(app.deps.database.pool);
  const res = await client(app.url).post('/api/auth/request-password-reset', { email: u.email });
  assert.equal(res.status, 202);
  assert.deepEqual(res.body, { status: 'accepted', delivery: 'disabled' });
  const links = await app.deps.database.pool.query('SELECT 1 FROM password_resets WHERE user_id = $1', [u.userId]);
  assert.equal(links.rowCount, 1);
});
