// Model-provider pairing: a member with models:write starts a pairing and gets a one-time token; a
// tool holding the provider key redeems it with no other credential, and the credential appears in
// the member's organization. Spent tokens answer 410 pairing_expired_or_consumed, unknown ones 401.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { aKey, aMember, anOrg, aSession } from '../support/builders.ts';
import { call, client } from '../support/http.ts';
import { aModelWorld, PROVIDER_KEY } from './models-harness.ts';

// X-Forwarded-For is trusted from loopback here: each test redeems from its own client address,
// so the per-IP limit of the anonymous route is a bucket per test.
const w = await aModelWorld({ env: { TRUST_PROXY: 'loopback', MODEL_PAIRING_TTL_SECONDS: '120' } });
after(() => w.close());
const pool = w.app.deps.database.pool;

let nextIp = 10;
/** An anonymous tool at its own client address. */
function aTool() {
  const ip = `198.51.100.${nextIp++}`;
  return (body: unknown) => call(w.app.url, 'POST', '/api/model-provider-pairings/redeem', { body, headers: { 'x-forwarded-for': ip } });
}

const credentialFields = (name = 'Paired') => ({ provider: 'openai-compatible', name, base_url: w.model.url, api_key: PROVIDER_KEY });

async function aPairing(api = w.api): Promise<{ id: string; token: string }> {
  const res = await api.post('/api/model-provider-pairings');
  assert.equal(res.status, 201, res.text);
  return res.body;
}

test('start, redeem, poll: the credential appears in the organization, works, and the pairing says consumed', async () => {
  const started = await w.api.post('/api/model-provider-pairings');
  assert.equal(started.status, 201, started.text);
  const p = started.body;
  assert.match(p.id, /^mpair_/);
  assert.equal(p.object, 'model_provider_pairing');
  assert.equal(p.status, 'pending');
  assert.match(p.token, /^mpp_[0-9A-Za-z]{43}$/);
  assert.equal(started.headers.get('location'), `/api/model-provider-pairings/${p.id}`);
  assert.equal(started.headers.get('cache-control'), 'no-store', 'the token is kept by no cache');
  const ttl = (Date.parse(p.expires_at) - Date.parse(p.created_at)) / 1000;
  assert.ok(Math.abs(ttl - 120) < 2, `expires MODEL_PAIRING_TTL_SECONDS after its start (${ttl}s)`);

  const pending = await w.api.get(`/api/model-provider-pairings/${p.id}`);
  assert.equal(pending.status, 200);
  assert.equal(pending.body.status, 'pending');
  assert.equal(pending.body.credential_id, null);
  assert.equal(pending.text.includes(p.token), false, 'the token is shown once, at the start');

  const redeemed = await aTool()({ token: p.token, ...credentialFields() });
  assert.equal(redeemed.status, 201, redeemed.text);
  const cred = redeemed.body;
  assert.match(cred.id, /^cred_/);
  assert.equal(cred.object, 'model_provider_credential');
  assert.equal(cred.name, 'Paired');
  assert.equal(cred.base_url, w.model.url);
  assert.equal(cred.api_key_set, true);
  assert.equal(cred.api_key_hint, '…WXYZ');
  assert.equal(redeemed.text.includes(PROVIDER_KEY), false, 'the key never comes back');
  assert.equal(redeemed.headers.get('location'), `/api/model-provider-credentials/${cred.id}`);

  const list = await w.api.get('/api/model-provider-credentials');
  assert.ok(list.body.data.some((c: any) => c.id === cred.id), 'the credential is in the organization');
  const tested = await (await w.freshApi()).post(`/api/model-provider-credentials/${cred.id}/test`);
  assert.equal(tested.status, 200, tested.text);
  assert.equal(tested.body.ok, true);

  const consumed = await w.api.get(`/api/model-provider-pairings/${p.id}`);
  assert.equal(consumed.body.status, 'consumed');
  assert.equal(consumed.body.credential_id, cred.id);
  assert.ok(consumed.body.consumed_at);

  const { rows } = await pool.query('SELECT * FROM model_provider_pairings p JOIN model_provider_credentials c ON c.id = p.credential_id WHERE p.id = $1', [p.id]);
  assert.equal(rows[0].created_by, w.org.ownerId, 'created on behalf of the member who started the pairing');
  assert.equal(JSON.stringify(rows[0]).includes(p.token), false, 'the token is stored only as its hash');
  assert.equal(JSON.stringify(rows[0]).includes(PROVIDER_KEY), false, 'the key is sealed');
  assert.equal(w.app.deps.secrets.open(rows[0].api_key_sealed), PROVIDER_KEY);
});

test('a used token answers 410 pairing_expired_or_consumed and creates nothing more', async () => {
  const p = await aPairing();
  const tool = aTool();
  assert.equal((await tool({ token: p.token, ...credentialFields('Once') })).status, 201);
  const again = await tool({ token: p.token, ...credentialFields('Twice') });
  assert.equal(again.status, 410);
  assert.equal(again.body.code, 'pairing_expired_or_consumed');
  assert.match(again.headers.get('content-type') ?? '', /application\/problem\+json/);
  const names = (await w.api.get('/api/model-provider-credentials')).body.data.map((c: any) => c.name);
  assert.ok(names.includes('Once'));
  assert.equal(names.includes('Twice'), false);
});

test('an expired token answers 410 and the pairing reads expired', async () => {
  const p = await aPairing();
  await pool.query(`UPDATE model_provider_pairings SET expires_at = now() - interval '1 second' WHERE id = $1`, [p.id]);
  const late = await aTool()({ token: p.token, ...credentialFields('Late') });
  assert.equal(late.status, 410);
  assert.equal(late.body.code, 'pairing_expired_or_consumed');
  const read = await w.api.get(`/api/model-provider-pairings/${p.id}`);
  assert.equal(read.body.status, 'expired');
  assert.equal(read.body.credential_id, null);
  const names = (await w.api.get('/api/model-provider-credentials')).body.data.map((c: any) => c.name);
  assert.equal(names.includes('Late'), false);
});

test('two redemptions racing: one 201, one 410, exactly one credential', async () => {
  const p = await aPairing();
  // Hold the pairing's row so that both redemptions pass their first read and queue on the claim;
  // released once both wait, they meet at the conditional UPDATE at the same time.
  const holder = await pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM model_provider_pairings WHERE id = $1 FOR UPDATE', [p.id]);
    const racing = [aTool()({ token: p.token, ...credentialFields('Race') }), aTool()({ token: p.token, ...credentialFields('Race') })];
    for (let attempt = 0; ; attempt++) {
      assert.ok(attempt < 500, 'both redemptions queue on the held pairing');
      const { rows } = await pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE model_provider_pairings SET consumed_at%'`,
      );
      if (rows[0].n === 2) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    await holder.query('COMMIT');
    const [a, b] = await Promise.all(racing);
    assert.deepEqual([a.status, b.status].sort(), [201, 410]);
    assert.equal([a, b].find((r) => r.status === 410)!.body.code, 'pairing_expired_or_consumed');
  } finally {
    holder.release();
  }
  const { rows } = await pool.query(`SELECT count(*)::int AS n FROM model_provider_credentials WHERE org_id = $1 AND name = 'Race'`, [w.org.orgId]);
  assert.equal(rows[0].n, 1);
});

test('an unknown token is 401 unauthorized, whatever its shape', async () => {
  const tool = aTool();
  for (const token of ['mpp_' + 'x'.repeat(43), 'not-a-token', (await aPairing()).token.slice(0, -1)]) {
    const res = await tool({ token, ...credentialFields('Stranger') });
    assert.equal(res.status, 401, token);
    assert.equal(res.body.code, 'unauthorized');
  }
});

test("another organization's member cannot read a pairing (404), and a caller without models:write cannot start one (403)", async () => {
  const p = await aPairing();
  const other = await anOrg(pool);
  const otherApi = client(w.app.url, { key: (await aKey(pool, { orgId: other.orgId, spaceId: other.spaceId, userId: other.ownerId })).key });
  const foreign = await otherApi.get(`/api/model-provider-pairings/${p.id}`);
  assert.equal(foreign.status, 404);
  assert.equal(foreign.body.code, 'not_found');

  const readOnly = await w.freshApi(['models:read']);
  const refused = await readOnly.post('/api/model-provider-pairings');
  assert.equal(refused.status, 403);
  assert.equal(refused.body.code, 'forbidden');
  assert.equal((await readOnly.get(`/api/model-provider-pairings/${p.id}`)).status, 200, 'models:read reads it');

  const memberId = await aMember(pool, w.org.orgId, 'member');
  const member = client(w.app.url, { key: (await aKey(pool, { orgId: w.org.orgId, spaceId: w.org.spaceId, userId: memberId })).key });
  assert.equal((await member.post('/api/model-provider-pairings')).status, 403, 'an organization member holds no models:write');
  assert.equal((await call(w.app.url, 'POST', '/api/model-provider-pairings', { org: w.org.orgId })).status, 401);
  const session = client(w.app.url, { cookie: (await aSession(pool, w.org.ownerId)).cookie, org: w.org.orgId });
  const bySession = await session.post('/api/model-provider-pairings');
  assert.equal(bySession.status, 201, 'a session needs X-Org-Id only');
  assert.equal((await session.get(`/api/model-provider-pairings/${bySession.body.id}`)).body.status, 'pending');
});

test('the credential is made on the starter\'s authority as it stands at redemption, in an organization not being deleted', async () => {
  const adminId = await aMember(pool, w.org.orgId, 'admin');
  const admin = client(w.app.url, { key: (await aKey(pool, { orgId: w.org.orgId, spaceId: w.org.spaceId, userId: adminId })).key });
  const p = await aPairing(admin);
  await pool.query(`UPDATE org_members SET role = 'member' WHERE org_id = $1 AND user_id = $2`, [w.org.orgId, adminId]);
  const tool = aTool();
  const refused = await tool({ token: p.token, ...credentialFields('Demoted') });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.code, 'forbidden');
  assert.equal((await w.api.get(`/api/model-provider-pairings/${p.id}`)).body.status, 'pending', 'the token is not spent');
  await pool.query(`UPDATE org_members SET role = 'admin' WHERE org_id = $1 AND user_id = $2`, [w.org.orgId, adminId]);
  await pool.query('UPDATE organizations SET deleting_at = now() WHERE id = $1', [w.org.orgId]);
  const deleting = await tool({ token: p.token, ...credentialFields('Deleting') });
  await pool.query('UPDATE organizations SET deleting_at = NULL WHERE id = $1', [w.org.orgId]);
  assert.equal(deleting.status, 409);
  assert.equal(deleting.body.code, 'org_deleting');
  const made = await tool({ token: p.token, ...credentialFields('Restored') });
  assert.equal(made.status, 201);
  const { rows } = await pool.query('SELECT created_by FROM model_provider_credentials WHERE id = $1', [made.body.id]);
  assert.equal(rows[0].created_by, adminId);
});

test('bad bodies get problem documents and leave the token unspent', async () => {
  const p = await aPairing();
  const tool = aTool();
  const bad: Array<[unknown, number, string]> = [
    [{ ...credentialFields(), token: p.token, extra: 1 }, 400, 'validation_failed'],
    [{ ...credentialFields() }, 400, 'validation_failed'],
    [{ token: p.token, provider: 'openai-compatible', name: 'No URL' }, 400, 'validation_failed'],
    [{ token: p.token, ...credentialFields(), base_url: 'not a url' }, 400, 'validation_failed'],
    [{ token: p.token, ...credentialFields(), name: '' }, 400, 'validation_failed'],
    [{ token: 42, ...credentialFields() }, 400, 'validation_failed'],
    [{ token: p.token, ...credentialFields(), provider: 'no-such-provider' }, 409, 'model_provider_unregistered'],
    [{ token: p.token, ...credentialFields(), base_url: 'http://169.254.169.254/latest' }, 400, 'blocked_url'],
    [{ token: p.token, ...credentialFields(), base_url: 'http://10.0.0.1:8080/v1' }, 400, 'blocked_url'],
    [[1, 2], 400, 'validation_failed'],
  ];
  for (const [body, status, code] of bad) {
    const res = await tool(body);
    assert.equal(res.status, status, `${JSON.stringify(body)}: ${res.text}`);
    assert.equal(res.body.code, code);
    assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
  }
  const notJson = await call(w.app.url, 'POST', '/api/model-provider-pairings/redeem', { rawBody: '{"token": ', headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.250' } });
  assert.equal(notJson.status, 400);
  assert.match(notJson.headers.get('content-type') ?? '', /application\/problem\+json/);
  assert.equal((await w.api.get(`/api/model-provider-pairings/${p.id}`)).body.status, 'pending');
});

test('the anonymous route is limited per client IP: 10 a minute, then 429, another address unaffected', async () => {
  const tool = aTool();
  const body = { token: 'mpp_guess', ...credentialFields('Guess') };
  for (let i = 0; i < 10; i++) {
    const res = await tool(body);
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('ratelimit-policy'), '10;w=60');
  }
  const limited = await tool(body);
  assert.equal(limited.status, 429);
  assert.equal(limited.body.code, 'rate_limited');
  assert.equal((await aTool()(body)).status, 401, 'another client address has its own bucket');
});
