// Social sign-in through an OpenID Connect provider (oauth2-mock-server on loopback, allowed by
// EGRESS_ALLOW_INTERNAL_HOSTS): authorization code with PKCE, state and nonce; the ID token is
// verified; accounts are linked by a verified address only; AUTH_ALLOWED_SIGNUP_DOMAINS applies;
// the state is single use and bound to the browser; a password change ends a pending link.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { OAuth2Server } from 'oauth2-mock-server';
import { startTestApp, type TestApp } from '../support/app.ts';
import { client } from '../support/http.ts';
import { loadConfig } from '../../lib/config.ts';
import { ProblemError } from '../../lib/problem.ts';
import { startSocialSignIn } from '../../api/services/social-sign-in.ts';

// plain characters: the mock reads the Basic credentials without form-decoding them
const CLIENT_ID = 'platformclient';
const CLIENT_SECRET = 'platform-client-secret';

interface Identity { sub: string; email?: string; email_verified?: boolean; name?: string }

/** The identity the provider signs in next, and tweaks to its ID token. */
let identity: Identity = { sub: 'nobody' };
let tamper: { nonce?: string; signature?: boolean } = {};

function cookieOf(res: Response, name: string): string | null {
  for (const set of res.headers.getSetCookie()) {
    const pair = set.split(';')[0];
    if (pair.startsWith(`${name}=`) && pair.length > name.length + 1) return pair;
  }
  return null;
}

test('the provider settings go together, https in production', () => {
  assert.throws(() => loadConfig({ AUTH_SOCIAL_ISSUER_URL: 'https://id.example.test' }), /go together/);
  assert.throws(() => loadConfig({ AUTH_SOCIAL_CLIENT_SECRET: 'secret' }), /go together/);
  const all = { AUTH_SOCIAL_ISSUER_URL: 'http://id.example.test', AUTH_SOCIAL_CLIENT_ID: 'c', AUTH_SOCIAL_CLIENT_SECRET: 's' };
  assert.equal(loadConfig(all).AUTH_SOCIAL_NAME, 'OpenID Connect');
  assert.throws(() => loadConfig({ ...all, NODE_ENV: 'production', ENCRYPTION_KEY: Buffer.alloc(32).toString('base64') }), /https in production/);
});

describe('social sign-in with an OpenID Connect provider', () => {
  let provider: OAuth2Server;
  let app: TestApp;

  /** Starts a flow as a browser would, lets the provider answer, and returns the callback to call. */
  async function throughProvider(startPath: string, cookie?: string): Promise<{ callback: string; stateCookie: string; authorize: URL }> {
    const start = await fetch(app.url + startPath, { redirect: 'manual', headers: cookie ? { cookie } : {} });
    assert.equal(start.status, 302, await start.text());
    const authorize = new URL(start.headers.get('location')!);
    const stateCookie = cookieOf(start, 'agent_platform.social_state');
    assert.ok(stateCookie, 'no state cookie');
    const consent = await fetch(authorize, { redirect: 'manual' });
    assert.equal(consent.status, 302);
    const back = new URL(consent.headers.get('location')!);
    assert.equal(back.pathname, '/api/auth/callback/social');
    return { callback: `${back.pathname}${back.search}`, stateCookie, authorize };
  }

  async function signInAs(who: Identity, opts: { startPath?: string; cookie?: string } = {}) {
    identity = who;
    const flow = await throughProvider(opts.startPath ?? '/api/auth/sign-in/social', opts.cookie);
    const res = await fetch(app.url + flow.callback, { redirect: 'manual', headers: { cookie: [flow.stateCookie, opts.cookie].filter(Boolean).join('; ') } });
    const text = await res.text();
    return { res, text, body: text.startsWith('{') ? JSON.parse(text) : null, session: cookieOf(res, 'agent_platform.session_token'), flow };
  }

  before(async () => {
    provider = new OAuth2Server();
    await provider.issuer.keys.generate('RS256');
    await provider.start(0, '127.0.0.1');
    provider.issuer.url = `http://127.0.0.1:${provider.address().port}`;
    provider.service.on('beforeTokenSigning', (token: { payload: Record<string, unknown> }) => {
      if (token.payload.aud !== CLIENT_ID) return;
      Object.assign(token.payload, identity);
      if (tamper.nonce) token.payload.nonce = tamper.nonce;
    });
    provider.service.on('beforeResponse', (response: { body: Record<string, unknown> }) => {
      if (!tamper.signature || typeof response.body.id_token !== 'string') return;
      const [h, p, s] = response.body.id_token.split('.');
      response.body.id_token = `${h}.${p}.${s.slice(0, -4)}${s.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}`;
    });
    const issuer = new URL(provider.issuer.url!);
    app = await startTestApp({
      env: {
        AUTH_SOCIAL_ISSUER_URL: issuer.origin,
        AUTH_SOCIAL_CLIENT_ID: CLIENT_ID,
        AUTH_SOCIAL_CLIENT_SECRET: CLIENT_SECRET,
        AUTH_SOCIAL_NAME: 'Acme ID',
        EGRESS_ALLOW_INTERNAL_HOSTS: issuer.host,
        AUTH_ALLOWED_SIGNUP_DOMAINS: 'acme.test',
      },
    });
  });
  after(async () => {
    await app?.close();
    await provider?.stop();
  });

  test('a newcomer signs in: PKCE S256, state and nonce go out; the account is made, verified, and signed in', async () => {
    const options = await client(app.url).get('/api/auth/sign-in/options');
    assert.deepEqual(options.body.social, { name: 'Acme ID', url: '/api/auth/sign-in/social' });

    const r = await signInAs({ sub: 'u-ann', email: 'ann@acme.test', email_verified: true, name: 'Ann Example' });
    const q = r.flow.authorize.searchParams;
    assert.equal(q.get('code_challenge_method'), 'S256');
    assert.ok(q.get('code_challenge') && q.get('state') && q.get('nonce'));
    assert.equal(q.get('client_id'), CLIENT_ID);
    assert.equal(r.res.status, 200, r.text);
    assert.equal(r.body.user.email, 'ann@acme.test');
    assert.equal(r.body.user.name, 'Ann Example');
    assert.equal(r.body.user.email_verified, true);
    assert.ok(r.session);
    const me = await client(app.url).get('/api/auth/session', { cookie: r.session! });
    assert.equal(me.body.user.id, r.body.user.id);

    const again = await signInAs({ sub: 'u-ann', email: 'ann@acme.test', email_verified: true });
    assert.equal(again.res.status, 200, again.text);
    assert.equal(again.body.user.id, r.body.user.id);
    // the account has no password: setting a first one works once
    const set = await client(app.url).post('/api/auth/set-password', { new_password: 'first password 1' }, { cookie: again.session! });
    assert.equal(set.status, 204, set.text);
    const twice = await client(app.url).post('/api/auth/set-password', { new_password: 'second password 2' }, { cookie: again.session! });
    assert.equal(twice.body.code, 'password_already_set');
  });

  test('an existing account is linked by a verified address only', async () => {
    const api = client(app.url);
    const su = await api.post('/api/auth/sign-up/email', { email: 'bob@acme.test', password: 'bob password 1', name: 'Bob' });
    assert.equal(su.status, 201);
    const unverified = await signInAs({ sub: 'u-bob', email: 'BOB@acme.test', email_verified: false });
    assert.equal(unverified.res.status, 403, unverified.text);
    assert.equal(unverified.body.code, 'forbidden');
    const verified = await signInAs({ sub: 'u-bob', email: 'bob@acme.test', email_verified: true });
    assert.equal(verified.res.status, 200, verified.text);
    assert.equal(verified.body.user.id, su.body.user.id);
    assert.equal(verified.body.user.email_verified, true);
  });

  test('AUTH_ALLOWED_SIGNUP_DOMAINS applies to accounts made by social sign-in', async () => {
    const r = await signInAs({ sub: 'u-eve', email: 'eve@elsewhere.test', email_verified: true });
    assert.equal(r.res.status, 403, r.text);
    assert.equal(r.body.code, 'signup_domain_not_allowed');
    const { rows } = await app.deps.database.pool.query(`SELECT 1 FROM users WHERE email = 'eve@elsewhere.test'`);
    assert.equal(rows.length, 0);
  });

  test('the state works once, only in the browser that started the flow', async () => {
    identity = { sub: 'u-cat', email: 'cat@acme.test', email_verified: true };
    const flow = await throughProvider('/api/auth/sign-in/social');
    const elsewhere = await client(app.url).get(flow.callback);
    assert.equal(elsewhere.status, 400, elsewhere.text);
    assert.equal(elsewhere.body.param, 'state');
    const forged = await client(app.url).get(flow.callback, { headers: { cookie: 'agent_platform.social_state=forged' } });
    assert.equal(forged.status, 400);
    const first = await client(app.url).get(flow.callback, { headers: { cookie: flow.stateCookie } });
    assert.equal(first.status, 200, first.text);
    const replay = await client(app.url).get(flow.callback, { headers: { cookie: flow.stateCookie } });
    assert.equal(replay.status, 400, replay.text);
  });

  test('an ID token with a wrong nonce or a broken signature is refused', async () => {
    try {
      tamper = { nonce: 'not-the-nonce-we-sent' };
      const nonce = await signInAs({ sub: 'u-dan', email: 'dan@acme.test', email_verified: true });
      assert.equal(nonce.res.status, 401, nonce.text);
      tamper = { signature: true };
      const signature = await signInAs({ sub: 'u-dan', email: 'dan@acme.test', email_verified: true });
      assert.equal(signature.res.status, 401, signature.text);
      assert.equal(signature.body.code, 'unauthorized');
    } finally {
      tamper = {};
    }
    const { rows } = await app.deps.database.pool.query(`SELECT 1 FROM users WHERE email = 'dan@acme.test'`);
    assert.equal(rows.length, 0);
  });

  test('return_to sends the browser back to a path here, never elsewhere', async () => {
    const r = await signInAs({ sub: 'u-ann', email: 'ann@acme.test', email_verified: true }, { startPath: '/api/auth/sign-in/social?return_to=%2Fdashboard%3Ftab%3Druns' });
    assert.equal(r.res.status, 302, r.text);
    assert.equal(r.res.headers.get('location'), '/dashboard?tab=runs');
    assert.ok(r.session);
    const asJson = await client(app.url).get('/api/auth/sign-in/social', { headers: { accept: 'application/json' } });
    assert.equal(asJson.status, 200, asJson.text);
    assert.equal(new URL(asJson.body.url).origin, new URL(provider.issuer.url!).origin);
    assert.match(asJson.headers.get('set-cookie') ?? '', /social_state=/);
    for (const bad of ['//evil.test/x', 'https://evil.test/', '/\\evil.test']) {
      const res = await client(app.url).get(`/api/auth/sign-in/social?return_to=${encodeURIComponent(bad)}`);
      assert.equal(res.status, 400, bad);
      assert.equal(res.body.param, 'return_to');
    }
  });

  test('a signed-in user links the provider account; a password change ends a pending link', async () => {
    const api = client(app.url);
    const su = await api.post('/api/auth/sign-up/email', { email: 'fay@acme.test', password: 'fay password 1', name: 'Fay' });
    const cookie = su.headers.get('set-cookie')!.split(';')[0];
    assert.equal((await fetch(`${app.url}/api/auth/link/social`, { redirect: 'manual' })).status, 401);

    // a different address at the provider: linking does not need it to match
    const linked = await signInAs({ sub: 'u-fay', email: 'fay.private@other.test', email_verified: false }, { startPath: '/api/auth/link/social', cookie });
    assert.equal(linked.res.status, 200, linked.text);
    assert.equal(linked.body.user.id, su.body.user.id);
    const later = await signInAs({ sub: 'u-fay', email: 'fay.private@other.test', email_verified: false });
    assert.equal(later.body.user.id, su.body.user.id);

    identity = { sub: 'u-fay-2', email: 'fay2@acme.test', email_verified: true };
    const pending = await throughProvider('/api/auth/link/social', cookie);
    const changed = await api.post('/api/auth/change-password', { current_password: 'fay password 1', new_password: 'fay password 2' }, { cookie });
    assert.equal(changed.status, 204, changed.text);
    const stale = await client(app.url).get(pending.callback, { headers: { cookie: `${pending.stateCookie}; ${cookie}` } });
    assert.equal(stale.status, 400, stale.text);
    const { rows } = await app.deps.database.pool.query(`SELECT 1 FROM social_accounts WHERE subject = 'u-fay-2'`);
    assert.equal(rows.length, 0);
  });

  test('the provider is reached through the egress guard: without the allowlist entry, 502 bad_gateway', async () => {
    const d = app.deps;
    const config = { ...d.config };
    const refused = await startSocialSignIn(
      { pool: d.database.pool, authCache: d.authCache, config, secrets: d.secrets, log: d.log, egress: { allowInternalHosts: [], platformEndpoints: d.platformEndpoints } },
      {},
    ).then(() => null, (err: unknown) => err);
    assert.ok(refused instanceof ProblemError, String(refused));
    assert.equal(refused.code, 'bad_gateway');
    assert.match(refused.detail, /egress guard/);
  });
});
