// OAuth clients over HTTP (/api/oauth/clients): organization- and space-level clients, the secret
// shown once and sealed at rest, Idempotency-Key on create, personal spaces refused (409), the
// registration rules (redirect URIs, grant types, scopes and the space allowlist), the visibility
// of each level, and who may change what.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { findOAuthClient } from '../../api/services/oauth-clients/store.ts';
import { SPACE_CLIENT_SCOPES } from '../../api/services/oauth-clients/scopes.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, aSession, aSpace, type BuiltOrg } from '../support/builders.ts';
import { call, type CallOptions } from '../support/http.ts';

let app: TestApp;
let org: BuiltOrg;
let owner: CallOptions;
const spaceClient = (over: Record<string, unknown> = {}) => ({
  level: 'space', name: 'Portal', redirect_uris: ['https://portal.example.test/callback'], scopes: ['openid', 'agents:read'], ...over,
});

before(async () => {
  app = await startTestApp();
  org = await anOrg(app.deps.database.pool);
  owner = { cookie: (await aSession(app.deps.database.pool, org.ownerId)).cookie, org: org.orgId, space: org.spaceId };
});
after(() => app.close());

const as = (who: CallOptions) => ({
  post: (path: string, body?: unknown, headers?: Record<string, string>) => call(app.url, 'POST', path, { ...who, body, headers }),
  get: (path: string) => call(app.url, 'GET', path, who),
  patch: (path: string, body: unknown) => call(app.url, 'PATCH', path, { ...who, body }),
  delete: (path: string) => call(app.url, 'DELETE', path, who),
});

describe('client records', () => {
  test('a confidential space client: 201 with its secret once, bound to X-Space-Id, sealed at rest, found by the provider', async () => {
    const res = await as(owner).post('/api/oauth/clients', spaceClient({ post_logout_redirect_uris: ['http://127.0.0.1:8080/bye'] }));
    assert.equal(res.status, 201, res.text);
    const { client_secret: secret, ...record } = res.body;
    assert.match(record.id, /^oac_/);
    assert.match(secret, /^oacs_[A-Za-z0-9_-]{43}$/);
    assert.equal(res.headers.get('location'), `/api/oauth/clients/${record.id}`);
    assert.deepEqual({ ...record, createdAt: 0, updatedAt: 0 }, {
      id: record.id, object: 'oauth_client', level: 'space', spaceId: org.spaceId, name: 'Portal',
      redirect_uris: ['https://portal.example.test/callback'], post_logout_redirect_uris: ['http://127.0.0.1:8080/bye'],
      grant_types: ['authorization_code', 'refresh_token'], token_endpoint_auth_method: 'client_secret_basic',
      scopes: ['openid', 'agents:read'], allowSignup: false, createdAt: 0, updatedAt: 0,
    });
    const read = await as(owner).get(`/api/oauth/clients/${record.id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, record);
    const { rows } = await app.deps.database.pool.query('SELECT row_to_json(c)::text AS t FROM oauth_clients c WHERE id = $1', [record.id]);
    assert.ok(!rows[0].t.includes(secret.slice(5)), 'the secret is not stored in clear');
    const found = await findOAuthClient({ pool: app.deps.database.pool, secrets: app.deps.secrets }, record.id);
    assert.equal(found?.clientSecret, secret);
    assert.equal(found?.registration, 'api');
    assert.equal(found?.orgId, org.orgId);
  });

  test('a public organization client has no secret; list, update, rotate and delete', async () => {
    const pub = await as(owner).post('/api/oauth/clients', { level: 'org', name: 'CLI', token_endpoint_auth_method: 'none', grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'], scopes: ['openid', 'offline_access', 'runs:read', 'webhooks:read'] });
    assert.equal(pub.status, 201, pub.text);
    assert.equal('client_secret' in pub.body, false);
    assert.equal('spaceId' in pub.body, false);
    assert.deepEqual(pub.body.redirect_uris, []);
    const norotate = await as(owner).post(`/api/oauth/clients/${pub.body.id}/rotate-secret`);
    assert.equal(norotate.status, 400);
    assert.equal(norotate.body.code, 'invalid_request');

    const conf = await as(owner).post('/api/oauth/clients', { level: 'org', name: 'Partner app', redirect_uris: ['https://partner.example.test/cb'], scopes: ['agents:read'] });
    assert.equal(conf.status, 201);
    const rotated = await as(owner).post(`/api/oauth/clients/${conf.body.id}/rotate-secret`);
    assert.equal(rotated.status, 200, rotated.text);
    assert.notEqual(rotated.body.client_secret, conf.body.client_secret);
    assert.equal((await findOAuthClient({ pool: app.deps.database.pool, secrets: app.deps.secrets }, conf.body.id))?.clientSecret, rotated.body.client_secret);

    const listed = await as(owner).get('/api/oauth/clients?limit=100');
    assert.equal(listed.status, 200);
    assert.equal(listed.body.object, 'list');
    const ids = listed.body.data.map((c: { id: string }) => c.id);
    assert.ok(ids.includes(pub.body.id) && ids.includes(conf.body.id), listed.text);
    assert.ok(!listed.text.includes(rotated.body.client_secret) && !listed.text.includes('"client_secret"'));

    const patched = await as(owner).patch(`/api/oauth/clients/${conf.body.id}`, { name: 'Partner', redirect_uris: ['https://partner.example.test/cb2'], scopes: ['agents:read', 'runs:read'] });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.name, 'Partner');
    assert.deepEqual(patched.body.redirect_uris, ['https://partner.example.test/cb2']);
    assert.deepEqual(patched.body.scopes, ['agents:read', 'runs:read']);
    const signup = await as(owner).patch(`/api/oauth/clients/${conf.body.id}`, { allowSignup: true });
    assert.equal(signup.status, 400);
    assert.equal(signup.body.code, 'validation_failed');

    await app.deps.database.pool.query(
      "INSERT INTO oidc_payloads (model, id, payload, account_id) VALUES ('RefreshToken', 'rt-of-partner', $1, $2), ('RefreshToken', 'rt-of-other', $3, $2)",
      [JSON.stringify({ clientId: conf.body.id }), org.ownerId, JSON.stringify({ clientId: pub.body.id })],
    );
    assert.equal((await as(owner).delete(`/api/oauth/clients/${conf.body.id}`)).status, 204);
    assert.equal((await as(owner).get(`/api/oauth/clients/${conf.body.id}`)).status, 404);
    const { rows } = await app.deps.database.pool.query("SELECT id FROM oidc_payloads WHERE id LIKE 'rt-of-%' ORDER BY id");
    assert.deepEqual(rows.map((r) => r.id), ['rt-of-other'], "the deleted client's tokens go with it, no other");
  });

  test('Idempotency-Key replays the creation (same secret, one row); another body is a conflict', async () => {
    const headers = { 'idempotency-key': `oac-${Date.now()}` };
    const first = await as(owner).post('/api/oauth/clients', spaceClient({ name: 'Once' }), headers);
    assert.equal(first.status, 201);
    const again = await as(owner).post('/api/oauth/clients', spaceClient({ name: 'Once' }), headers);
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, first.body);
    const { rows } = await app.deps.database.pool.query("SELECT count(*)::int AS n FROM oauth_clients WHERE name = 'Once'");
    assert.equal(rows[0].n, 1);
    const other = await as(owner).post('/api/oauth/clients', spaceClient({ name: 'Twice' }), headers);
    assert.equal(other.status, 422);
    assert.equal(other.body.code, 'idempotency_conflict');
  });

  test('a personal space takes no OAuth clients (409); a space client needs X-Space-Id', async () => {
    const personal = await aSpace(app.deps.database.pool, org.orgId, { kind: 'personal', ownerUserId: org.ownerId, name: 'Mine' });
    const res = await as({ ...owner, space: personal }).post('/api/oauth/clients', spaceClient());
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'personal_space_takes_no_oauth_clients');
    const none = await as({ ...owner, space: undefined }).post('/api/oauth/clients', spaceClient());
    assert.equal(none.status, 400);
    assert.equal(none.body.code, 'invalid_request');
    assert.equal(none.body.param, 'X-Space-Id');
  });
});

describe('registration rules', () => {
  const refused: Array<[string, Record<string, unknown>, string]> = [
    ['a fragment', spaceClient({ redirect_uris: ['https://portal.example.test/cb#x'] }), 'redirect_uris[0]'],
    ['plain http off loopback', spaceClient({ redirect_uris: ['http://portal.example.test/cb'] }), 'redirect_uris[0]'],
    ['a custom scheme', spaceClient({ redirect_uris: ['javascript:alert(1)'] }), 'redirect_uris[0]'],
    ['a relative URI', spaceClient({ redirect_uris: ['/cb'] }), 'redirect_uris[0]'],
    ['user info', spaceClient({ redirect_uris: ['https://a:b@portal.example.test/cb'] }), 'redirect_uris[0]'],
    ['a bad post-logout URI', spaceClient({ post_logout_redirect_uris: ['ftp://x.example.test/'] }), 'post_logout_redirect_uris[0]'],
    ['an unknown grant type', spaceClient({ grant_types: ['password'] }), 'grant_types'],
    ['refresh_token alone', spaceClient({ grant_types: ['refresh_token'] }), 'grant_types'],
    ['authorization_code without redirect URIs', spaceClient({ redirect_uris: [] }), 'grant_types'],
    ['an unknown scope', spaceClient({ level: 'org', scopes: ['openid', 'everything:all'] }), 'scopes'],
    ['a scope outside the space allowlist', spaceClient({ scopes: ['openid', 'agents:delete'] }), 'scopes'],
    ['allowSignup on an organization client', spaceClient({ level: 'org', allowSignup: true }), 'allowSignup'],
    ['a blank name', spaceClient({ name: '   ' }), 'name'],
    ['an unknown field', spaceClient({ client_secret: 'mine' }), ''],
    ['an instance level', spaceClient({ level: 'instance' }), 'level'],
    ['too many redirect URIs', spaceClient({ redirect_uris: Array.from({ length: 11 }, (_, i) => `https://p.example.test/${i}`) }), 'redirect_uris'],
  ];
  for (const [what, body, field] of refused) {
    test(`refused: ${what}`, async () => {
      const res = await as(owner).post('/api/oauth/clients', body);
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.code, 'validation_failed', res.text);
      if (field) assert.ok(res.body.errors.some((e: { field: string }) => e.field === field || e.field.startsWith(`${field}[`)), res.text);
    });
  }

  test('the space allowlist is exported and every entry is accepted for a space client', async () => {
    const res = await as(owner).post('/api/oauth/clients', spaceClient({ scopes: [...SPACE_CLIENT_SCOPES], allowSignup: true, grant_types: ['authorization_code'] }));
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.allowSignup, true);
    assert.deepEqual(res.body.scopes, [...SPACE_CLIENT_SCOPES]);
  });
});

describe('who may do what', () => {
  test('a member with no space role reads nothing; a viewer reads space clients but cannot change them; API keys stay in their space', async () => {
    const pool = app.deps.database.pool;
    const s2 = await aSpace(pool, org.orgId, { name: 'Second' });
    const orgClient = await as(owner).post('/api/oauth/clients', { level: 'org', name: 'Org app', redirect_uris: ['https://o.example.test/cb'], scopes: ['agents:read'] });
    const inS1 = await as(owner).post('/api/oauth/clients', spaceClient({ name: 'In s1' }));
    const inS2 = await as({ ...owner, space: s2 }).post('/api/oauth/clients', spaceClient({ name: 'In s2' }));
    assert.equal(inS2.status, 201);

    const viewerId = await aMember(pool, org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'viewer' });
    const viewer: CallOptions = { cookie: (await aSession(pool, viewerId)).cookie, org: org.orgId, space: org.spaceId };
    const list = await as(viewer).get('/api/oauth/clients?limit=100');
    const seen = list.body.data.map((c: { id: string }) => c.id);
    assert.ok(seen.includes(inS1.body.id), 'the viewer reads its space');
    assert.ok(!seen.includes(inS2.body.id) && !seen.includes(orgClient.body.id), 'not another space, not the organization');
    assert.equal((await as(viewer).get(`/api/oauth/clients/${inS1.body.id}`)).status, 200);
    assert.equal((await as(viewer).get(`/api/oauth/clients/${orgClient.body.id}`)).status, 404);
    assert.equal((await as(viewer).get(`/api/oauth/clients/${inS2.body.id}`)).status, 404);
    const patch = await as(viewer).patch(`/api/oauth/clients/${inS1.body.id}`, { name: 'Mine now' });
    assert.equal(patch.status, 403);
    assert.equal(patch.body.code, 'forbidden');
    assert.equal((await as(viewer).delete(`/api/oauth/clients/${inS1.body.id}`)).status, 403);
    assert.equal((await as(viewer).post('/api/oauth/clients', spaceClient())).status, 403);
    assert.equal((await as(viewer).post('/api/oauth/clients', { level: 'org', name: 'x', redirect_uris: ['https://x.example.test/'], scopes: ['openid'] })).status, 403);

    const key = (await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId })).key;
    const byKey = await as({ key }).post('/api/oauth/clients', spaceClient({ name: 'By key' }));
    assert.equal(byKey.status, 201, byKey.text);
    assert.equal(byKey.body.spaceId, org.spaceId);
    const orgByKey = await as({ key }).post('/api/oauth/clients', { level: 'org', name: 'x', redirect_uris: ['https://x.example.test/'], scopes: ['openid'] });
    assert.equal(orgByKey.status, 403);
    const keyList = (await as({ key }).get('/api/oauth/clients?limit=100')).body.data.map((c: { id: string }) => c.id);
    assert.ok(keyList.includes(inS1.body.id) && !keyList.includes(orgClient.body.id) && !keyList.includes(inS2.body.id));
    assert.equal((await as({ key }).get(`/api/oauth/clients/${inS2.body.id}`)).status, 404);
    const readOnlyKey = (await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId, scopes: ['oauth-clients:read'] })).key;
    assert.equal((await as({ key: readOnlyKey }).delete(`/api/oauth/clients/${inS1.body.id}`)).status, 403);

    const other = await anOrg(pool);
    const stranger: CallOptions = { cookie: (await aSession(pool, other.ownerId)).cookie, org: other.orgId, space: other.spaceId };
    for (const id of [inS1.body.id, orgClient.body.id]) {
      assert.equal((await as(stranger).get(`/api/oauth/clients/${id}`)).status, 404);
      assert.equal((await as(stranger).patch(`/api/oauth/clients/${id}`, { name: 'x' })).status, 404);
      assert.equal((await as(stranger).delete(`/api/oauth/clients/${id}`)).status, 404);
    }
    assert.equal((await as(stranger).get('/api/oauth/clients')).body.data.length, 0);
    const foreignSpace = await as({ ...owner, space: other.spaceId }).post('/api/oauth/clients', spaceClient());
    assert.equal(foreignSpace.status, 403, 'X-Space-Id of another organization binds nothing');
    assert.equal(foreignSpace.body.code, 'not_a_space_member');
  });

  test('instance clients (dynamic, metadata documents) are not managed over the API', async () => {
    await app.deps.database.pool.query(
      `INSERT INTO oauth_clients (id, level, name, grant_types, token_endpoint_auth_method, scopes, registration)
       VALUES ('oac_instance1', 'instance', 'Registered', '{urn:ietf:params:oauth:grant-type:device_code}', 'none', '{openid}', 'dynamic')`,
    );
    assert.equal((await as(owner).get('/api/oauth/clients/oac_instance1')).status, 404);
    assert.equal((await as(owner).delete('/api/oauth/clients/oac_instance1')).status, 404);
    assert.ok(!(await as(owner).get('/api/oauth/clients?limit=100')).text.includes('oac_instance1'));
  });
});
