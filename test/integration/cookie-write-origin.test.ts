// Writes with the session cookie come only from the instance's own pages or a trusted origin: a page
// of another origin on the same site (SameSite=Lax sends it the cookie) cannot sign the person out
// or act on any other write, whatever headers or body type the route would otherwise need.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aUserWithPassword, sessionCookieFrom } from '../support/builders.ts';
import { client } from '../support/http.ts';

const TRUSTED = 'https://embedder.example.test';
let app: TestApp;
before(async () => {
  app = await startTestApp({ env: { TRUSTED_ORIGINS: TRUSTED } });
});
after(() => app.close());

async function aSignedInCookie(): Promise<string> {
  const who = await aUserWithPassword(app.deps.database.pool);
  const res = await client(app.url).post('/api/auth/sign-in/email', { email: who.email, password: who.password });
  assert.equal(res.status, 200, res.text);
  return sessionCookieFrom(res.headers)!;
}

async function stillSignedIn(cookie: string): Promise<boolean> {
  return (await client(app.url).get('/api/auth/session', { cookie })).status === 200;
}

test('sign-out from another origin on the same host (another port) is refused and the session lives on', async () => {
  const cookie = await aSignedInCookie();
  const port = Number(new URL(app.url).port);
  for (const origin of [`http://127.0.0.1:${port + 1}`, `http://localhost:${port}`, 'null']) {
    const res = await client(app.url).post('/api/auth/sign-out', undefined, { cookie, headers: { origin } });
    assert.equal(res.status, 403, `${origin}: ${res.text}`);
    assert.equal(res.body.code, 'forbidden');
    assert.equal(res.body.param, 'Origin');
    assert.ok(res.headers.get('request-id'));
  }
  assert.equal(await stillSignedIn(cookie), true);
});

test('the instance\'s own pages, a trusted origin and clients sending no Origin write with the cookie', async () => {
  const own = await aSignedInCookie();
  const res = await client(app.url).post('/api/auth/sign-out', undefined, { cookie: own, headers: { origin: new URL(app.url).origin } });
  assert.ok(res.status < 300, res.text);
  assert.equal(await stillSignedIn(own), false);

  const trusted = await aSignedInCookie();
  assert.ok((await client(app.url).post('/api/auth/sign-out', undefined, { cookie: trusted, headers: { origin: TRUSTED } })).status < 300);
  assert.equal(await stillSignedIn(trusted), false);

  const curl = await aSignedInCookie();
  assert.ok((await client(app.url).post('/api/auth/sign-out', undefined, { cookie: curl })).status < 300);
  assert.equal(await stillSignedIn(curl), false);
});

test('reads with the cookie from another origin are not this check\'s concern (CORS keeps their answers from the page)', async () => {
  const cookie = await aSignedInCookie();
  const res = await client(app.url).get('/api/auth/session', { cookie, headers: { origin: 'http://127.0.0.1:1' } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('access-control-allow-origin'), null);
});
