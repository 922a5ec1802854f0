// AUTH_EMAIL_VERIFICATION=required against a real SMTP server on loopback: sign-up gives no session,
// a password sign-in is refused (403 forbidden: the catalog has no dedicated code) until the mailed
// link is followed; a new link replaces the old; a magic link proves the address too. The setting
// needs SMTP_URL.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../lib/config.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { client } from '../support/http.ts';
import { startInbox, type Inbox } from '../support/smtp-inbox.ts';

function tokenIn(text: string, path: string): string {
  const m = new RegExp(`https?://\\S+${path.replace(/[/.]/g, '\\$&')}\\?token=(\\S+)`).exec(text);
  assert.ok(m, `no ${path} link in:\n${text}`);
  return decodeURIComponent(m[1]);
}

test('required verification without SMTP_URL is a configuration error', () => {
  assert.throws(() => loadConfig({ AUTH_EMAIL_VERIFICATION: 'required' }), /AUTH_EMAIL_VERIFICATION/);
  assert.throws(() => loadConfig({ AUTH_EMAIL_VERIFICATION: 'sometimes' }), /AUTH_EMAIL_VERIFICATION/);
  assert.equal(loadConfig({}).AUTH_EMAIL_VERIFICATION, 'optional');
});

describe('e-mail verification required', () => {
  let inbox: Inbox;
  let app: TestApp;
  before(async () => {
    inbox = await startInbox();
    app = await startTestApp({ env: { SMTP_URL: inbox.url, MAIL_FROM: 'noreply@platform.test', AUTH_EMAIL_VERIFICATION: 'required' } });
  });
  after(async () => {
    await app?.close();
    await inbox?.close();
  });

  test('no session until the address is verified; then the password signs in', async () => {
    const api = client(app.url);
    const su = await api.post('/api/auth/sign-up/email', { email: 'quinn@verify.test', password: 'quinn password 1', name: 'Quinn' });
    assert.equal(su.status, 201, su.text);
    assert.equal(su.headers.get('set-cookie'), null);
    assert.equal(su.body.session, undefined);
    assert.equal(su.body.user.email_verified, false);
    const first = tokenIn((await inbox.next('quinn@verify.test')).text, '/api/auth/verify-email');

    const refused = await api.post('/api/auth/sign-in/email', { email: 'quinn@verify.test', password: 'quinn password 1' });
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.code, 'forbidden');
    assert.equal(refused.headers.get('set-cookie'), null);
    // a wrong password still says only that
    assert.equal((await api.post('/api/auth/sign-in/email', { email: 'quinn@verify.test', password: 'not the password' })).status, 401);

    const resent = await api.post('/api/auth/send-verification-email', { email: 'QUINN@verify.test' });
    const nobody = await api.post('/api/auth/send-verification-email', { email: 'nobody@verify.test' });
    assert.deepEqual([resent.status, resent.body], [202, { status: 'accepted', delivery: 'email' }]);
    assert.deepEqual([nobody.status, nobody.body], [202, { status: 'accepted', delivery: 'email' }]);
    const second = tokenIn((await inbox.next('quinn@verify.test')).text, '/api/auth/verify-email');

    assert.equal((await api.post('/api/auth/verify-email', { token: first })).status, 400);
    const verified = await api.post('/api/auth/verify-email', { token: second });
    assert.equal(verified.status, 200, verified.text);
    assert.equal(verified.body.user.email_verified, true);
    const signedIn = await api.post('/api/auth/sign-in/email', { email: 'quinn@verify.test', password: 'quinn password 1' });
    assert.equal(signedIn.status, 200, signedIn.text);
    assert.ok(signedIn.headers.get('set-cookie'));
    // verified: no new link is sent
    await api.post('/api/auth/send-verification-email', { email: 'quinn@verify.test' });
    assert.equal(inbox.received.filter((m) => m.to.includes('quinn@verify.test')).length, 2);
  });

  test('a magic link proves the address: it signs in and verifies', async () => {
    const api = client(app.url);
    await api.post('/api/auth/sign-up/email', { email: 'rae@verify.test', password: 'rae password 1', name: 'Rae' });
    await inbox.next('rae@verify.test');
    await api.post('/api/auth/sign-in/magic-link', { email: 'rae@verify.test' });
    const token = tokenIn((await inbox.next('rae@verify.test')).text, '/api/auth/magic-link/verify');
    const signedIn = await api.post('/api/auth/magic-link/verify', { token });
    assert.equal(signedIn.status, 200, signedIn.text);
    assert.equal(signedIn.body.user.email_verified, true);
    assert.equal((await api.post('/api/auth/sign-in/email', { email: 'rae@verify.test', password: 'rae password 1' })).status, 200);
  });
});
