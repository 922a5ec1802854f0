// E-mail delivery against a real SMTP server on loopback: an invitation is received, its link
// followed by a newcomer who signs up and lands in the organization; a password reset by e-mail ends
// every session; a refusing server gives invitation_failed with the invitation kept; without
// SMTP_URL the answers say delivery is disabled. Everything goes over HTTP.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { startTestApp, type TestApp } from '../support/app.ts';
import { client } from '../support/http.ts';
import { startInbox, SMTP_PASS, type Inbox } from '../support/smtp-inbox.ts';

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** The session cookie (name=value) set by a sign-up or sign-in answer. */
function cookieOf(res: { headers: Headers; status: number; text: string }): string {
  const set = res.headers.get('set-cookie');
  assert.ok(set, `no session cookie: ${res.status} ${res.text}`);
  return set.split(';')[0];
}

async function signUp(url: string, email: string, password = 'correct horse battery'): Promise<string> {
  const res = await client(url).post('/api/auth/sign-up/email', { email, password, name: email.split('@')[0] });
  assert.equal(res.status, 201, res.text);
  return cookieOf(res);
}

function linkIn(text: string, base: string): URL {
  const m = new RegExp(`${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/\\S+`).exec(text);
  assert.ok(m, `no link to ${base} in:\n${text}`);
  return new URL(m[0]);
}

describe('mail enabled (SMTP_URL on a loopback server)', () => {
  let inbox: Inbox;
  let app: TestApp;
  let publicUrl: string;
  before(async () => {
    inbox = await startInbox({ refuse: (to) => to.startsWith('refused') });
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    app = await startTestApp({ port, env: { SMTP_URL: inbox.url, MAIL_FROM: 'Agent Platform <noreply@platform.test>', PUBLIC_URL: publicUrl } });
  });
  after(async () => {
    await app?.close();
    await inbox?.close();
  });

  test('a newcomer invites a colleague; the colleague receives the link, signs up, follows it and lands in the organization', async () => {
    const api = client(app.url);
    const newcomer = await signUp(app.url, 'founder@acme.test');
    const org = await api.post('/api/orgs', { name: 'Acme Mail' }, { cookie: newcomer });
    assert.equal(org.status, 201, org.text);

    const inv = await api.post(`/api/orgs/${org.body.id}/invitations`, { email: 'colleague@acme.test', role: 'member' }, { cookie: newcomer });
    assert.equal(inv.status, 201, inv.text);
    assert.equal(inv.body.delivery, 'sent');

    const mail = await inbox.next('colleague@acme.test');
    assert.equal(mail.from, 'noreply@platform.test');
    assert.match(mail.subject, /Acme Mail/);
    const link = linkIn(mail.text, publicUrl);
    assert.equal(link.toString(), inv.body.accept_url);
    assert.ok(mail.html.includes(`href="${link.toString()}"`), mail.html);

    // following the link before having an account asks to sign in (or up) first
    const early = await api.post(link.pathname);
    assert.deepEqual([early.status, early.body.code], [401, 'authentication_required']);
    const colleague = await signUp(app.url, 'colleague@acme.test');
    await inbox.next('colleague@acme.test'); // the verification mail of the new account
    const accepted = await api.post(link.pathname, undefined, { cookie: colleague });
    assert.equal(accepted.status, 200, accepted.text);
    assert.equal(accepted.body.orgId, org.body.id);
    const orgs = await api.get('/api/orgs', { cookie: colleague });
    assert.deepEqual(orgs.body.data.map((o: { id: string; role: string }) => [o.id, o.role]), [[org.body.id, 'member']]);

    const list = await api.get(`/api/orgs/${org.body.id}/invitations`, { cookie: newcomer });
    assert.equal(list.body.data[0].status, 'accepted');
    assert.equal(list.body.data[0].delivery, 'sent');
  });

  test('a password reset by e-mail: the link arrives, and using it ends every session of the account', async () => {
    const api = client(app.url);
    const first = await signUp(app.url, 'forgetful@acme.test', 'old password 123');
    assert.match((await inbox.next('forgetful@acme.test')).subject, /Verify/);
    const signIn = await api.post('/api/auth/sign-in/email', { email: 'forgetful@acme.test', password: 'old password 123' });
    const second = cookieOf(signIn);
    assert.equal((await api.get('/api/auth/session', { cookie: first })).status, 200);

    const asked = await api.post('/api/auth/request-password-reset', { email: 'FORGETFUL@acme.test' });
    assert.equal(asked.status, 202);
    assert.equal(asked.body.delivery, 'email');
    const unknown = await api.post('/api/auth/request-password-reset', { email: 'nobody@acme.test' });
    assert.deepEqual([unknown.status, unknown.body.delivery], [202, 'email']);

    const mail = await inbox.next('forgetful@acme.test');
    const link = linkIn(mail.text, publicUrl);
    const token = link.searchParams.get('token');
    assert.ok(token);
    assert.ok(mail.html.includes('Reset the password'));

    const reset = await api.post(link.pathname, { token, new_password: 'new password 456' });
    assert.equal(reset.status, 204, reset.text);
    assert.equal((await api.get('/api/auth/session', { cookie: first })).status, 401);
    assert.equal((await api.get('/api/auth/session', { cookie: second })).status, 401);
    assert.equal((await api.post('/api/auth/sign-in/email', { email: 'forgetful@acme.test', password: 'old password 123' })).status, 401);
    assert.equal((await api.post('/api/auth/sign-in/email', { email: 'forgetful@acme.test', password: 'new password 456' })).status, 200);
    assert.equal((await api.post(link.pathname, { token, new_password: 'again password 789' })).status, 400);
  });

  test('a server that refuses the recipient: 500 invitation_failed, the invitation kept with delivery failed', async () => {
    const api = client(app.url);
    const owner = await signUp(app.url, 'owner-refused@acme.test');
    const org = await api.post('/api/orgs', { name: 'Refusing Co' }, { cookie: owner });
    const inv = await api.post(`/api/orgs/${org.body.id}/invitations`, { email: 'refused@acme.test', role: 'member' }, { cookie: owner });
    assert.equal(inv.status, 500, inv.text);
    assert.equal(inv.body.code, 'invitation_failed');
    assert.match(inv.headers.get('content-type') ?? '', /application\/problem\+json/);
    assert.match(inv.body.detail, /550/);
    assert.ok(!inv.text.includes(SMTP_PASS));

    const list = await api.get(`/api/orgs/${org.body.id}/invitations`, { cookie: owner });
    assert.equal(list.body.data.length, 1);
    assert.deepEqual([list.body.data[0].email, list.body.data[0].status, list.body.data[0].delivery], ['refused@acme.test', 'pending', 'failed']);
    assert.ok(!inbox.received.some((m) => m.to.includes('refused@acme.test')));
  });
});

describe('mail disabled (no SMTP_URL)', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app?.close());

  test('an invitation says delivery disabled and carries the link to copy; a reset says delivery disabled', async () => {
    const api = client(app.url);
    const owner = await signUp(app.url, 'solo@quiet.test');
    const org = await api.post('/api/orgs', { name: 'Quiet' }, { cookie: owner });
    const inv = await api.post(`/api/orgs/${org.body.id}/invitations`, { email: 'friend@quiet.test', role: 'guest' }, { cookie: owner });
    assert.equal(inv.status, 201, inv.text);
    assert.equal(inv.body.delivery, 'disabled');
    assert.ok(inv.body.accept_url.endsWith(`/api/invitations/${inv.body.token}/accept`));
    const list = await api.get(`/api/orgs/${org.body.id}/invitations`, { cookie: owner });
    assert.equal(list.body.data[0].delivery, 'disabled');

    const friend = await signUp(app.url, 'friend@quiet.test');
    const accepted = await api.post(new URL(inv.body.accept_url).pathname, undefined, { cookie: friend });
    assert.equal(accepted.status, 200, accepted.text);

    const asked = await api.post('/api/auth/request-password-reset', { email: 'solo@quiet.test' });
    assert.equal(asked.status, 202);
    assert.equal(asked.body.delivery, 'disabled');
  });
});
