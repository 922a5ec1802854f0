// Accounts and sessions: sign-up, sign-in, sign-out, the current session, password change, set
// and reset, and which sessions each one ends.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { onCredentialChange } from '../../api/services/credential-change.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aSession, aUser, aUserWithPassword, sessionCookieFrom } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { resetLinkFor } from '../support/reset-links.ts';

let app: TestApp;
before(async () => {
  app = await startTestApp();
});
after(() => app.close());

async function signIn(email: string, password: string): Promise<string> {
  const res = await client(app.url).post('/api/auth/sign-in/email', { email, password });
  assert.equal(res.status, 200, res.text);
  return sessionCookieFrom(res.headers)!;
}

describe('sign-up', () => {
  test('creates the account, sets an HttpOnly session cookie and answers the user', async () => {
    const res = await client(app.url).post('/api/auth/sign-up/email', { email: 'ada@example.test', password: 'analytical-engine', name: 'Ada' });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.user.email, 'ada@example.test');
    assert.match(res.body.user.id, /^usr_/);
    const setCookie = res.headers.getSetCookie().join('\n');
    assert.match(setCookie, /agent_platform\.session_token=[^;]+;/);
    assert.match(setCookie, /HttpOnly/);
    assert.match(setCookie, /SameSite=Lax/);
    const me = await client(app.url).get('/api/auth/session', { cookie: sessionCookieFrom(res.headers) });
    assert.equal(me.status, 200);
    assert.equal(me.body.user.id, res.body.user.id);
    const stored = await app.deps.database.pool.query('SELECT password_hash FROM users WHERE id = $1', [res.body.user.id]);
    assert.match(stored.rows[0].password_hash, /^\$scrypt\$ln=15,r=8,p=1\$/);
  });

  test('an address already taken is a field error on email', async () => {
    const { email } = await aUser(app.deps.database.pool);
    const res = await client(app.url).post('/api/auth/sign-up/email', { email: email.toUpperCase(), password: 'long enough pw', name: 'Dup' });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'validation_failed');
    assert.equal(res.body.errors[0].field, 'email');
  });

  test('a short password and an unknown field are refused together', async () => {
    const res = await client(app.url).post('/api/auth/sign-up/email', { email: 'x@example.test', password: 'short', name: 'X', admin: true });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body.errors.map((e: { field: string; code: string }) => `${e.field}:${e.code}`).sort(), ['admin:unknown_field', 'password:out_of_range']);
  });
});

describe('sign-in', () => {
  test('sets a cookie that authenticates the session routes', async () => {
    const u = await aUserWithPassword(app.deps.database.pool);
    const cookie = await signIn(u.email, u.password);
    const me = await client(app.url).get('/api/auth/session', { cookie });
    assert.equal(me.status, 200);
    assert.equal(me.body.user.id, u.userId);
  });

  test('a wrong password and an unknown address get the same 401, in comparable time', async () => {
    const u = await aUserWithPassword(app.deps.database.pool);
    const t0 = performance.now();
    const wrong = await client(app.url).post('/api/auth/sign-in/email', { email: u.email, password: 'not the password' });
    const t1 = performance.now();
    const unknown = await client(app.url).post('/api/auth/sign-in/email', { email: 'nobody@example.test', password: 'not the password' });
    const t2 = performance.now();
    for (const res of [wrong, unknown]) {
      assert.equal(res.status, 401);
      assert.equal(res.body.code, 'unauthorized');
      assert.equal(res.headers.getSetCookie().length, 0);
    }
    assert.equal(wrong.body.detail, unknown.body.detail);
    // Both derive a scrypt key: the unknown address is not answered markedly faster.
    assert.ok(t2 - t1 > (t1 - t0) * 0.4, `unknown ${Math.round(t2 - t1)} ms vs wrong ${Math.round(t1 - t0)} ms`);
  });

  test('neither honours nor refuses Idempotency-Key', async () => {
    const u = await aUserWithPassword(app.deps.database.pool);
    const opts = { headers: { 'idempotency-key': 'same-key' } };
    const first = await client(app.url).post('/api/auth/sign-in/email', { email: u.email, password: u.password }, opts);
    const second = await client(app.url).post('/api/auth/sign-in/email', { email: u.email, password: u.password }, opts);
    assert.equal(first.status, 200);
    assert.equal(second.status, 200);
    assert.equal(second.headers.get('idempotent-replayed'), null);
    assert.notEqual(first.body.session.id, second.body.session.id);
  });
});

describe('sign-out and the current session', () => {
  test('sign-out ends the session and clears the cookie', async () => {
    const u = await aUserWithPassword(app.deps.database.pool);
    const cookie = await signIn(u.email, u.password);
    const out = await client(app.url).post('/api/auth/sign-out', undefined, { cookie });
    assert.equal(out.status, 204);
    assert.match(out.headers.getSetCookie().join('\n'), /agent_platform\.session_token=;.*Max-Age=0/);
    const me = await client(app.url).get('/api/auth/session', { cookie });
    assert.equal(me.status, 401);
    assert.equal(me.body.code, 'unauthorized');
  });

  test('the session is refused by protected routes once signed out, even after it was cached', async () => {
    const u = await aUserWithPassword(app.deps.database.pool);
    const cookie = await signIn(u.email, u.password);
    assert.equal((await client(app.url).get('/api/orgs', { cookie })).status, 200);
    await client(app.url).post('/api/auth/sign-out', undefined, { cookie });
    assert.equal((await client(app.url).get('/api/orgs', { cookie })).status, 401);
  });

  test('without a cookie the session route answers 401', async () => {
    const res = await client(app.url).get('/api/auth/session');
    assert.equal(res.status, 401);
    assert.equal(res.body.code, 'unauthorized');
  });
});

describe('change-password', () => {
  test('keeps the current session, ends the others and invalidates pending reset links', async () => {
    const u = await aUserWithPassword(app.deps.database.pool);
    const here = await signIn(u.email, u.password);
    const elsewhere = await signIn(u.email, u.password);
    assert.equal((await client(app.url).post('/api/auth/request-password-reset', { email: u.email })).status, 202);
    const reset = await resetLinkFor(app, u.email);
    const res = await client(app.url).post('/api/auth/change-password', { current_password: u.password, new_password: 'a brand new secret' }, { cookie: here });
    assert.equal(res.status, 204, res.text);
    assert.equal((await client(app.url).get('/api/orgs', { cookie: here })).status, 200);
    assert.equal((await client(app.url).get('/api/orgs', { cookie: elsewhere })).status, 401);
    assert.equal((await client(app.url).post('/api/auth/sign-in/email', { email: u.email, password: u.password })).status, 401);
    assert.equal((await client(app.url).post('/api/auth/sign-in/email', { email: u.email, password: 'a brand new secret' })).status, 200);
    const stale = await client(app.url).post('/api/auth/reset-password', { token: reset.token, new_password: 'attacker chosen' });
    assert.equal(stale.status, 400);
    assert.equal(stale.body.param, 'token');
  });

  test('a wrong current password is a field error and changes nothing', async () => {
    const u = await aUserWithPassword(app.deps.database.pool);
    const cookie = await signIn(u.email, u.password);
    const res = await client(app.url).post('/api/auth/change-password', { current_password: 'guess', new_password: 'whatever it is' }, { cookie });
    assert.equal(res.status, 400);
    assert.equal(res.body.errors[0].field, 'current_password');
    assert.equal((await client(app.url).post('/api/auth/sign-in/email', { email: u.email, password: u.password })).status, 200);
  });

  test('needs a session', async () => {
    const res = await client(app.url).post('/api/auth/change-password', { current_password: 'x', new_password: 'yyyyyyyyyy' });
    assert.equal(res.status, 401);
  });

  test('a failing credential revoker answers 500 credential_change_revocation_failed and changes nothing', async () => {
    const u = await aUserWithPassword(app.deps.database.pool);
    const here = await signIn(u.email, u.password);
    const other = await signIn(u.email, u.password);
    const seen: string[] = [];
    const off = onCredentialChange(async (change) => {
      seen.push(change.reason);
      throw new Error('token store unreachable');
    });
    try {
      const res = await client(app.url).post('/api/auth/change-password', { current_password: u.password, new_password: 'never applied' }, { cookie: here });
      assert.equal(res.status, 500);
      assert.equal(res.body.code, 'credential_change_revocation_failed');
    } finally {
      off();
    }
    assert.deepEqual(seen, ['password_changed']);
    assert.equal((await client(app.url).get('/api/orgs', { cookie: other })).status, 200);
    assert.equal((await client(app.url).post('/api/auth/sign-in/email', { email: u.email, password: u.password })).status, 200);
  });
});

describe('set-password', () => {
  test('gives a first password to an account without one; a second time is 409 password_already_set', async () => {
    const { userId, email } = await aUser(app.deps.database.pool);
    const { cookie } = await aSession(app.deps.database.pool, userId);
    const first = await client(app.url).post('/api/auth/set-password', { new_password: 'first password' }, { cookie });
    assert.equal(first.status, 204, first.text);
    assert.equal((await client(app.url).post('/api/auth/sign-in/email', { email, password: 'first password' })).status, 200);
    const again = await client(app.url).post('/api/auth/set-password', { new_password: 'second password' }, { cookie });
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'password_already_set');
  });
});

describe('password reset', () => {
  test('a reset ends every session, and its token works once', async () => {
    const u = await aUserWithPassword(app.deps.database.pool);
    const a = await signIn(u.email, u.password);
    const b = await signIn(u.email, u.password);
    const req = await client(app.url).post('/api/auth/request-password-reset', { email: u.email.toUpperCase() });
    assert.deepEqual([req.status, req.body], [202, { status: 'accepted', delivery: 'disabled' }]);
    const { token, url } = await resetLinkFor(app, u.email);
    assert.equal(url.pathname, '/api/auth/reset-password');
    const res = await client(app.url).post('/api/auth/reset-password', { token, new_password: 'reset to this one' });
    assert.equal(res.status, 204, res.text);
    for (const cookie of [a, b]) assert.equal((await client(app.url).get('/api/auth/session', { cookie })).status, 401);
    assert.equal((await client(app.url).post('/api/auth/sign-in/email', { email: u.email, password: 'reset to this one' })).status, 200);
    const reuse = await client(app.url).post('/api/auth/reset-password', { token, new_password: 'once more please' });
    assert.equal(reuse.status, 400);
    assert.equal(reuse.body.code, 'invalid_request');
  });

  test('a new request replaces the previous link', async () => {
    const u = await aUserWithPassword(app.deps.database.pool);
    await client(app.url).post('/api/auth/request-password-reset', { email: u.email });
    const first = await resetLinkFor(app, u.email);
    await client(app.url).post('/api/auth/request-password-reset', { email: u.email });
    const second = await resetLinkFor(app, u.email, { except: [first.token] });
    assert.equal((await client(app.url).post('/api/auth/reset-password', { token: first.token, new_password: 'from the first' })).status, 400);
    assert.equal((await client(app.url).post('/api/auth/reset-password', { token: second.token, new_password: 'from the second' })).status, 204);
  });

  test('an unknown address is accepted the same way, without a token', async () => {
    const res = await client(app.url).post('/api/auth/request-password-reset', { email: 'ghost@example.test' });
    assert.equal(res.status, 202);
    assert.deepEqual(res.body, { status: 'accepted', delivery: 'disabled' });
  });
});
