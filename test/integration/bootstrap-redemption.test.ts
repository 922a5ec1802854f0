// First-run bootstrap: the token creates the owner, the first organization with its default team
// space and the owner's personal space, signs the owner in, and works once. Limited to 5 calls a
// minute per IP, so each app below makes at most that many before the limit is tested.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aUser, sessionCookieFrom } from '../support/builders.ts';
import { client } from '../support/http.ts';

const TOKEN = 'test-bootstrap-token-0123456789';
const owner = { email: 'owner@example.test', password: 'owner password 1', name: 'Olive' };

describe('redeeming on a fresh instance', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());
  const redeem = (body: Record<string, unknown>) => client(app.url).post('/api/auth/bootstrap/redeem', body);

  test('a wrong token is 401 bootstrap_token_invalid', async () => {
    const res = await redeem({ ...owner, token: 'not-the-token' });
    assert.equal(res.status, 401);
    assert.equal(res.body.code, 'bootstrap_token_invalid');
  });

  test('while another redemption holds the bootstrap record, 409 bootstrap_redeem_in_progress', async () => {
    const holder = new pg.Client({ connectionString: app.deps.database.url });
    await holder.connect();
    try {
      await holder.query('INSERT INTO bootstrap_state (id) VALUES (1) ON CONFLICT DO NOTHING');
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM bootstrap_state WHERE id = 1 FOR UPDATE');
      const res = await redeem({ ...owner, token: TOKEN });
      assert.equal(res.status, 409);
      assert.equal(res.body.code, 'bootstrap_redeem_in_progress');
      await holder.query('ROLLBACK');
    } finally {
      await holder.end();
    }
  });

  test('a password outside the policy is 422 bootstrap_signup_rejected', async () => {
    const res = await redeem({ ...owner, password: 'short', token: TOKEN });
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'bootstrap_signup_rejected');
    assert.equal(res.body.errors[0].field, 'password');
  });

  test('the right token creates owner, organization, default and personal spaces, and signs in', async () => {
    const res = await redeem({ ...owner, token: TOKEN, organization_name: 'Olive Labs' });
    assert.equal(res.status, 201, res.text);
    assert.match(res.body.user_id, /^usr_/);
    assert.match(res.body.space_id, /^spc_/);
    const cookie = sessionCookieFrom(res.headers);
    assert.ok(cookie, 'the session cookie is set');

    const orgs = await client(app.url).get('/api/orgs', { cookie });
    assert.equal(orgs.status, 200);
    assert.deepEqual(orgs.body.data.map((o: { id: string; name: string; role: string }) => [o.id, o.name, o.role]), [[res.body.org_id, 'Olive Labs', 'owner']]);
    const spaces = await client(app.url).get('/api/spaces', { cookie, org: res.body.org_id });
    assert.equal(spaces.status, 200);
    const kinds = spaces.body.data.map((s: { id: string; kind: string; is_default: boolean }) => `${s.kind}:${s.is_default}:${s.id === res.body.space_id}`);
    assert.deepEqual(kinds.sort(), ['personal:false:false', 'team:true:true']);
    const state = await app.deps.database.pool.query('SELECT user_id, org_id, redeemed_at FROM bootstrap_state');
    assert.equal(state.rows[0].user_id, res.body.user_id);
    assert.ok(state.rows[0].redeemed_at);
  });

  test('a second redemption is 410 bootstrap_token_unavailable', async () => {
    const res = await redeem({ ...owner, email: 'second@example.test', token: TOKEN });
    assert.equal(res.status, 410);
    assert.equal(res.body.code, 'bootstrap_token_unavailable');
  });

  test('a sixth call within a minute from one address is 429 rate_limited', async () => {
    const res = await redeem({ ...owner, token: TOKEN });
    assert.equal(res.status, 429);
    assert.equal(res.body.code, 'rate_limited');
    assert.ok(Number(res.headers.get('retry-after')) > 0);
  });
});

describe('an instance that names its owner', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp({ env: { BOOTSTRAP_OWNER_EMAIL: owner.email } });
  });
  after(() => app.close());
  const redeem = (body: Record<string, unknown>) => client(app.url).post('/api/auth/bootstrap/redeem', body);

  test('another address is 403 bootstrap_owner_email_mismatch', async () => {
    const res = await redeem({ ...owner, email: 'intruder@example.test', token: TOKEN });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'bootstrap_owner_email_mismatch');
  });

  test('an existing account with the owner address is 409 bootstrap_user_exists, and nothing is redeemed', async () => {
    await aUser(app.deps.database.pool, { email: 'OWNER@example.test' });
    const res = await redeem({ ...owner, token: TOKEN });
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'bootstrap_user_exists');
    const state = await app.deps.database.pool.query('SELECT redeemed_at FROM bootstrap_state WHERE redeemed_at IS NOT NULL');
    assert.equal(state.rowCount, 0);
    const orgs = await app.deps.database.pool.query('SELECT 1 FROM organizations');
    assert.equal(orgs.rowCount, 0);
  });

  test('a body with an unknown field is 400 validation_failed', async () => {
    const res = await redeem({ ...owner, token: TOKEN, role: 'owner' });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'validation_failed');
    assert.equal(res.body.errors[0].code, 'unknown_field');
  });
});

describe('the organization a redemption names for the owner', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  test('without organization_name, a 200-character owner name still gives an organization name within 200 characters', async () => {
    const name = 'N'.repeat(200);
    const res = await client(app.url).post('/api/auth/bootstrap/redeem', { ...owner, name, token: TOKEN });
    assert.equal(res.status, 201, res.text);
    const { rows } = await app.deps.database.pool.query('SELECT name FROM organizations');
    assert.equal(rows.length, 1);
    assert.ok(rows[0].name.length <= 200, `stored ${rows[0].name.length} characters`);
    assert.ok(rows[0].name.startsWith('NNN'));
  });
});
