// First-run bootstrap when the database refuses part of the work: the owner account cannot be
// written (500 bootstrap_signup_failed), or the account is written but the organization cannot be
// (500 bootstrap_org_failed). Nothing is kept either way, and the token still works afterwards.
// The refusals are real PostgreSQL errors, raised by triggers installed in this file's database.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';
import { client } from '../support/http.ts';

const TOKEN = 'test-bootstrap-token-0123456789';
const owner = { email: 'fault-owner@example.test', password: 'owner password 1', name: 'Faye', token: TOKEN };

let app: TestApp;
before(async () => {
  app = await startTestApp();
  await app.deps.database.pool.query(`CREATE FUNCTION test_refuse_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'refused by the test'; END $$`);
});
after(() => app.close());

const redeem = () => client(app.url).post('/api/auth/bootstrap/redeem', owner);

async function withRefusal<T>(table: string, fn: () => Promise<T>): Promise<T> {
  const pool = app.deps.database.pool;
  await pool.query(`CREATE TRIGGER test_refuse BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION test_refuse_insert()`);
  try {
    return await fn();
  } finally {
    await pool.query(`DROP TRIGGER test_refuse ON ${table}`);
  }
}

async function nothingKept(): Promise<void> {
  const pool = app.deps.database.pool;
  assert.equal((await pool.query('SELECT 1 FROM users WHERE email = $1', [owner.email])).rowCount, 0);
  assert.equal((await pool.query('SELECT 1 FROM bootstrap_state WHERE redeemed_at IS NOT NULL')).rowCount, 0);
}

test('the owner account cannot be written: 500 bootstrap_signup_failed, nothing kept', async () => {
  const res = await withRefusal('users', redeem);
  assert.equal(res.status, 500, res.text);
  assert.equal(res.body.code, 'bootstrap_signup_failed');
  assert.doesNotMatch(res.text, /refused by the test/, 'the database error stays in the log');
  await nothingKept();
});

test('the account is written but the organization cannot be: 500 bootstrap_org_failed, nothing kept', async () => {
  const res = await withRefusal('organizations', redeem);
  assert.equal(res.status, 500, res.text);
  assert.equal(res.body.code, 'bootstrap_org_failed');
  await nothingKept();
});

test('once the database accepts again, the same token redeems', async () => {
  const res = await redeem();
  assert.equal(res.status, 201, res.text);
  assert.match(res.body.org_id, /\S/);
});
