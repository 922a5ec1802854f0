// Spec, Session cookies rule 4: with the oidc module, a password change or reset also ends the
// account's OAuth refresh and access tokens, grants, device codes and provider sessions (every
// oidc_payloads row of the account), and no one else's. If that delete fails, the request answers
// 500 credential_change_revocation_failed and nothing changes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aUserWithPassword, sessionCookieFrom } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { resetLinkFor } from '../support/reset-links.ts';

let app: TestApp;
before(async () => {
  app = await startTestApp();
});
after(() => app.close());

const MODELS = ['AccessToken', 'RefreshToken', 'Grant', 'DeviceCode', 'Session', 'AuthorizationCode'];

async function issueTo(accountId: string): Promise<void> {
  for (const model of MODELS) {
    await app.deps.database.pool.query(
      `INSERT INTO oidc_payloads (model, id, payload, account_id, expires_at) VALUES ($1, $2, $3, $4, now() + interval '1 hour')`,
      [model, `${model}-${accountId}`, JSON.stringify({ accountId, kind: model }), accountId],
    );
  }
}

async function rowsOf(accountId: string): Promise<string[]> {
  const { rows } = await app.deps.database.pool.query('SELECT model FROM oidc_payloads WHERE account_id = $1 ORDER BY model', [accountId]);
  return rows.map((r) => r.model);
}

async function signIn(email: string, password: string): Promise<string> {
  const res = await client(app.url).post('/api/auth/sign-in/email', { email, password });
  assert.equal(res.status, 200, res.text);
  return sessionCookieFrom(res.headers)!;
}

test('a password change deletes every provider row of the account, and only of that account', async () => {
  const u = await aUserWithPassword(app.deps.database.pool);
  const bystander = await aUserWithPassword(app.deps.database.pool);
  await issueTo(u.userId);
  await issueTo(bystander.userId);
  const cookie = await signIn(u.email, u.password);
  const res = await client(app.url).post('/api/auth/change-password', { current_password: u.password, new_password: 'a brand new password' }, { cookie });
  assert.equal(res.status, 204, res.text);
  assert.deepEqual(await rowsOf(u.userId), []);
  assert.deepEqual(await rowsOf(bystander.userId), [...MODELS].sort());
});

test('a password reset deletes them too', async () => {
  const u = await aUserWithPassword(app.deps.database.pool);
  await issueTo(u.userId);
  const asked = await client(app.url).post('/api/auth/request-password-reset', { email: u.email });
  assert.equal(asked.status, 202);
  const { token } = await resetLinkFor(app, u.email);
  const res = await client(app.url).post('/api/auth/reset-password', { token, new_password: 'reset to this one' });
  assert.equal(res.status, 204, res.text);
  assert.deepEqual(await rowsOf(u.userId), []);
});

test('when the delete fails: 500 credential_change_revocation_failed, the password and the tokens unchanged', async () => {
  const pool = app.deps.database.pool;
  const u = await aUserWithPassword(pool);
  await issueTo(u.userId);
  const cookie = await signIn(u.email, u.password);
  await pool.query(`CREATE FUNCTION refuse_oidc_delete() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'token store refuses deletes'; END $$`);
  await pool.query('CREATE TRIGGER refuse_oidc_delete BEFORE DELETE ON oidc_payloads FOR EACH ROW EXECUTE FUNCTION refuse_oidc_delete()');
  let change;
  let reset;
  try {
    change = await client(app.url).post('/api/auth/change-password', { current_password: u.password, new_password: 'never applied' }, { cookie });
    assert.equal((await client(app.url).post('/api/auth/request-password-reset', { email: u.email })).status, 202);
    const { token } = await resetLinkFor(app, u.email);
    reset = await client(app.url).post('/api/auth/reset-password', { token, new_password: 'never applied either' });
  } finally {
    await pool.query('DROP TRIGGER refuse_oidc_delete ON oidc_payloads');
    await pool.query('DROP FUNCTION refuse_oidc_delete()');
  }
  for (const res of [change, reset]) {
    assert.equal(res.status, 500, res.text);
    assert.equal(res.body.code, 'credential_change_revocation_failed');
    assert.ok(!res.text.includes('token store refuses'), 'no internals in the body');
  }
  assert.deepEqual(await rowsOf(u.userId), [...MODELS].sort());
  assert.equal((await client(app.url).get('/api/auth/session', { cookie })).status, 200, 'the session was kept');
  assert.equal((await client(app.url).post('/api/auth/sign-in/email', { email: u.email, password: u.password })).status, 200, 'the old password still works');
});
