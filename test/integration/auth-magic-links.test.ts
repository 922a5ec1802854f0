// Magic links and e-mail verification (optional, the default) against a real SMTP server on
// loopback: the same answer whatever the address, single use, short expiry, a newer link replaces
// older ones, AUTH_ALLOWED_SIGNUP_DOMAINS for newcomers, and a password change or reset ends the
// pending links. Everything goes over HTTP but the clock (expiry is set back in the database).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';
import { client } from '../support/http.ts';
import { startInbox, type Inbox } from '../support/smtp-inbox.ts';

function tokenIn(text: string, path: string): string {
  const m = new RegExp(`https?://\\S+${path.replace(/[/.]/g, '\\$&')}\\?token=(\\S+)`).exec(text);
  assert.ok(m, `no ${path} link in:\n${text}`);
  return decodeURIComponent(m[1]);
}

function cookieOf(res: { headers: Headers; status: number; text: string }): string {
  const set = res.headers.get('set-cookie');
  assert.ok(set, `no session cookie: ${res.status} ${res.text}`);
  return set.split(';')[0];
}

describe('magic links and optional e-mail verification', () => {
  let inbox: Inbox;
  let app: TestApp;
  before(async () => {
    inbox = await startInbox();
    app = await startTestApp({ env: { SMTP_URL: inbox.url, MAIL_FROM: 'noreply@platform.test', AUTH_ALLOWED_SIGNUP_DOMAINS: 'acme.test' } });
  });
  after(async () => {
    await app?.close();
    await inbox?.close();
  });

  const linkFor = async (email: string) => {
    const res = await client(app.url).post('/api/auth/sign-in/magic-link', { email });
    assert.equal(res.status, 202, res.text);
    return res;
  };
  const follow = (token: string) => client(app.url).post('/api/auth/magic-link/verify', { token });

  test('sign-up mails a verification link; the session is given at once; the link verifies once', async () => {
    const api = client(app.url);
    const su = await api.post('/api/auth/sign-up/email', { email: 'vera@acme.test', password: 'vera password 1', name: 'Vera' });
    assert.equal(su.status, 201, su.text);
    assert.equal(su.body.user.email_verified, false);
    const cookie = cookieOf(su);
    const mail = await inbox.next('vera@acme.test');
    assert.match(mail.subject, /Verify/);
    const token = tokenIn(mail.text, '/api/auth/verify-email');
    assert.ok(mail.html.includes('Verify the address'));

    const verified = await api.post('/api/auth/verify-email', { token });
    assert.equal(verified.status, 200, verified.text);
    assert.equal(verified.body.user.email_verified, true);
    assert.equal(verified.headers.get('set-cookie'), null);
    assert.equal((await api.post('/api/auth/verify-email', { token })).status, 400);
    assert.equal((await api.get('/api/auth/session', { cookie })).body.user.email_verified, true);
  });

  test('a link to an existing account: the same answer as for nobody; single use; the newest link only', async () => {
    const api = client(app.url);
    const su = await api.post('/api/auth/sign-up/email', { email: 'mia@acme.test', password: 'mia password 1', name: 'Mia' });
    await inbox.next('mia@acme.test'); // the verification mail

    const known = await linkFor('MIA@acme.test');
    const unknown = await linkFor('nobody-here@acme.invalid');
    assert.deepEqual(known.body, unknown.body);
    assert.deepEqual(known.body, { status: 'accepted', delivery: 'email' });
    const older = tokenIn((await inbox.next('mia@acme.test')).text, '/api/auth/magic-link/verify');
    await linkFor('mia@acme.test');
    const mail = await inbox.next('mia@acme.test');
    assert.match(mail.subject, /sign-in link/);
    const token = tokenIn(mail.text, '/api/auth/magic-link/verify');

    assert.equal((await follow(older)).status, 400);
    const signedIn = await follow(token);
    assert.equal(signedIn.status, 200, signedIn.text);
    assert.equal(signedIn.body.user.id, su.body.user.id);
    assert.equal(signedIn.body.user.email_verified, true);
    const me = await api.get('/api/auth/session', { cookie: cookieOf(signedIn) });
    assert.equal(me.body.user.id, su.body.user.id);
    const replay = await follow(token);
    assert.equal(replay.status, 400);
    assert.equal(replay.body.param, 'token');
    assert.ok(!inbox.received.some((m) => m.to.includes('nobody-here@acme.invalid')));
  });

  test('a newcomer at an allowed domain gets an account; elsewhere nothing is sent', async () => {
    await linkFor('outsider@elsewhere.test');
    await linkFor('newcomer@acme.test');
    const token = tokenIn((await inbox.next('newcomer@acme.test')).text, '/api/auth/magic-link/verify');
    assert.ok(!inbox.received.some((m) => m.to.includes('outsider@elsewhere.test')));

    const signedIn = await follow(token);
    assert.equal(signedIn.status, 200, signedIn.text);
    assert.equal(signedIn.body.user.email, 'newcomer@acme.test');
    assert.equal(signedIn.body.user.email_verified, true);
    const cookie = cookieOf(signedIn);
    // an account made by a magic link has no password yet
    assert.equal((await client(app.url).post('/api/auth/set-password', { new_password: 'first password 1' }, { cookie })).status, 204);
  });

  test('an expired link is refused', async () => {
    await linkFor('late@acme.test');
    const token = tokenIn((await inbox.next('late@acme.test')).text, '/api/auth/magic-link/verify');
    await app.deps.database.pool.query(`UPDATE magic_links SET expires_at = now() - interval '1 second' WHERE email = 'late@acme.test'`);
    const res = await follow(token);
    assert.equal(res.status, 400);
    const { rows } = await app.deps.database.pool.query(`SELECT 1 FROM users WHERE email = 'late@acme.test'`);
    assert.equal(rows.length, 0);
  });

  test('a password change, and a reset, end the pending magic links', async () => {
    const api = client(app.url);
    const su = await api.post('/api/auth/sign-up/email', { email: 'pat@acme.test', password: 'pat password 1', name: 'Pat' });
    const cookie = cookieOf(su);
    await inbox.next('pat@acme.test');

    await linkFor('pat@acme.test');
    const beforeChange = tokenIn((await inbox.next('pat@acme.test')).text, '/api/auth/magic-link/verify');
    assert.equal((await api.post('/api/auth/change-password', { current_password: 'pat password 1', new_password: 'pat password 2' }, { cookie })).status, 204);
    assert.equal((await follow(beforeChange)).status, 400);

    await linkFor('pat@acme.test');
    const beforeReset = tokenIn((await inbox.next('pat@acme.test')).text, '/api/auth/magic-link/verify');
    assert.equal((await api.post('/api/auth/request-password-reset', { email: 'pat@acme.test' })).status, 202);
    const resetToken = tokenIn((await inbox.next('pat@acme.test')).text, '/api/auth/reset-password');
    assert.equal((await api.post('/api/auth/reset-password', { token: resetToken, new_password: 'pat password 3' })).status, 204);
    assert.equal((await follow(beforeReset)).status, 400);
  });

  test('the options say what this instance offers', async () => {
    const res = await client(app.url).get('/api/auth/sign-in/options');
    assert.deepEqual(res.body, { password: true, magic_link: true, email_verification: 'optional', social: null });
  });
});
