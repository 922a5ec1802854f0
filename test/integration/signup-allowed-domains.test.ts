// AUTH_ALLOWED_SIGNUP_DOMAINS limits who can create an account; an invited address may always.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';
import { anOrg, aSession } from '../support/builders.ts';
import { client } from '../support/http.ts';

let app: TestApp;
before(async () => {
  app = await startTestApp({ env: { AUTH_ALLOWED_SIGNUP_DOMAINS: 'acme.test, Example.org' } });
});
after(() => app.close());

const signUp = (email: string) => client(app.url).post('/api/auth/sign-up/email', { email, password: 'long enough secret', name: 'N' });

test('an address on a listed domain signs up, whatever its case', async () => {
  assert.equal((await signUp('ann@acme.test')).status, 201);
  assert.equal((await signUp('bob@EXAMPLE.org')).status, 201);
});

test('an address elsewhere is 403 signup_domain_not_allowed', async () => {
  const res = await signUp('eve@elsewhere.test');
  assert.equal(res.status, 403);
  assert.equal(res.body.code, 'signup_domain_not_allowed');
  const rows = await app.deps.database.pool.query(`SELECT 1 FROM users WHERE email = 'eve@elsewhere.test'`);
  assert.equal(rows.rowCount, 0);
});

test('an address holding a pending invitation signs up from any domain', async () => {
  const org = await anOrg(app.deps.database.pool);
  const { cookie } = await aSession(app.deps.database.pool, org.ownerId);
  const inv = await client(app.url).post(`/api/orgs/${org.orgId}/invitations`, { email: 'guest@partner.test', role: 'guest' }, { cookie });
  assert.equal(inv.status, 201, inv.text);
  assert.equal((await signUp('guest@partner.test')).status, 201);
});
