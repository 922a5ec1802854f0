// API keys: created by a session in a team space with a subset of the creator's key scopes,
// shown once, stored as a hash, pinned to their space, listed without secrets, revoked at once.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sha256Hex } from '../../lib/crypto.ts';
import { KEY_SCOPES } from '../../lib/permissions.ts';
import { useTestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, aSession, aSpace } from '../support/builders.ts';
import { client } from '../support/http.ts';

const { app: currentApp, pool, api, sessionOf } = useTestApp();

describe('creating a key', () => {
  test('answers the key once, in the apst_ format; only its hash and prefix are stored', async () => {
    const org = await anOrg(pool());
    const res = await api().post('/api/api-keys', { name: 'CI', scopes: ['spaces:read'] }, { cookie: await sessionOf(org.ownerId), org: org.orgId, space: org.spaceId });
    assert.equal(res.status, 201, res.text);
    assert.match(res.body.key, /^apst_[0-9A-Za-z]{36}$/);
    assert.equal(res.body.keyPrefix, res.body.key.slice(0, 13));
    assert.deepEqual(res.body.scopes, ['spaces:read']);
    assert.equal(res.body.expiresAt, null);
    assert.match(res.body.id, /^key_/);
    const row = (await pool().query('SELECT * FROM api_keys WHERE id = $1', [res.body.id])).rows[0];
    assert.equal(row.key_hash, sha256Hex(res.body.key));
    assert.ok(!JSON.stringify(row).includes(res.body.key));
    assert.equal((await api().get('/api/spaces', { key: res.body.key })).status, 200);
  });

  test('omitted or empty scopes give every key scope the creator holds, as available-scopes lists them', async () => {
    const org = await anOrg(pool());
    const viewer = await sessionOf(await aMember(pool(), org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'editor' }));
    const ctx = { cookie: viewer, org: org.orgId, space: org.spaceId };
    const available = await api().get('/api/api-keys/available-scopes', ctx);
    assert.equal(available.status, 200);
    assert.ok(available.body.scopes.includes('agents:write'));
    assert.ok(!available.body.scopes.includes('agents:delete'));
    const omitted = await api().post('/api/api-keys', { name: 'all' }, ctx);
    const empty = await api().post('/api/api-keys', { name: 'all', scopes: [] }, ctx);
    assert.deepEqual(omitted.body.scopes, available.body.scopes);
    assert.deepEqual(empty.body.scopes, available.body.scopes);
    const owner = await api().get('/api/api-keys/available-scopes', { cookie: await sessionOf(org.ownerId), org: org.orgId, space: org.spaceId });
    assert.deepEqual(owner.body.scopes, [...KEY_SCOPES]);
  });

  test('requested scopes the creator lacks are dropped silently', async () => {
    const org = await anOrg(pool());
    const viewer = await sessionOf(await aMember(pool(), org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'editor' }));
    const res = await api().post('/api/api-keys', { name: 'narrow', scopes: ['agents:read', 'agents:delete'] }, { cookie: viewer, org: org.orgId, space: org.spaceId });
    assert.equal(res.status, 201);
    assert.deepEqual(res.body.scopes, ['agents:read']);
  });

  test('a scope no key can carry, or an unknown one, is 400 invalid_request on scopes', async () => {
    const org = await anOrg(pool());
    const ctx = { cookie: await sessionOf(org.ownerId), org: org.orgId, space: org.spaceId };
    for (const scope of ['api-keys:create', 'members:write', 'rockets:launch']) {
      const res = await api().post('/api/api-keys', { name: 'x', scopes: ['spaces:read', scope] }, ctx);
      assert.equal(res.status, 400, scope);
      assert.equal(res.body.code, 'invalid_request');
      assert.equal(res.body.param, 'scopes');
    }
  });

  test('expiresAt must be in the future; an expired key is 401', async () => {
    const org = await anOrg(pool());
    const ctx = { cookie: await sessionOf(org.ownerId), org: org.orgId, space: org.spaceId };
    const past = await api().post('/api/api-keys', { name: 'old', expiresAt: '2001-01-01T00:00:00Z' }, ctx);
    assert.equal(past.status, 400);
    assert.equal(past.body.errors[0].field, 'expiresAt');
    const garbled = await api().post('/api/api-keys', { name: 'old', expiresAt: 'tomorrow' }, ctx);
    assert.equal(garbled.status, 400);
    const soon = new Date(Date.now() + 3600_000).toISOString();
    const res = await api().post('/api/api-keys', { name: 'soon', scopes: ['spaces:read'], expiresAt: soon }, ctx);
    assert.equal(res.status, 201);
    assert.equal(res.body.expiresAt, soon);
    await pool().query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [res.body.id]);
    currentApp().deps.authCache.clear();
    assert.equal((await api().get('/api/spaces', { key: res.body.key })).status, 401);
  });

  test('a personal space takes no keys: 409 personal_space_takes_no_keys', async () => {
    const org = await anOrg(pool());
    const personal = await aSpace(pool(), org.orgId, { kind: 'personal', ownerUserId: org.ownerId });
    const res = await api().post('/api/api-keys', { name: 'p' }, { cookie: await sessionOf(org.ownerId), org: org.orgId, space: personal });
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'personal_space_takes_no_keys');
  });

  test('a key cannot create a key; a viewer without api-keys:create cannot either', async () => {
    const org = await anOrg(pool());
    const { key } = await aKey(pool(), { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId });
    const byKey = await api().post('/api/api-keys', { name: 'child' }, { key });
    assert.equal(byKey.status, 403);
    assert.equal(byKey.body.code, 'forbidden');
    const guest = await sessionOf(await aMember(pool(), org.orgId, 'guest', { spaceId: org.spaceId, roleKey: 'viewer' }));
    assert.equal((await api().post('/api/api-keys', { name: 'g' }, { cookie: guest, org: org.orgId, space: org.spaceId })).status, 403);
  });
});

describe('using a key', () => {
  test('an X-Org-Id or X-Space-Id other than the key\'s is 403 forbidden; its own are accepted', async () => {
    const org = await anOrg(pool());
    const other = await anOrg(pool());
    const second = await aSpace(pool(), org.orgId);
    const { key } = await aKey(pool(), { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId, scopes: ['spaces:read'] });
    const own = await api().get('/api/spaces', { key, org: org.orgId, space: org.spaceId });
    assert.equal(own.status, 200);
    assert.deepEqual(own.body.data.map((s: { id: string }) => s.id), [org.spaceId]);
    const elsewhere = await api().get('/api/spaces', { key, org: other.orgId });
    assert.equal(elsewhere.status, 403);
    assert.equal(elsewhere.body.param, 'X-Org-Id');
    const contradicted = await api().get('/api/spaces', { key, space: second });
    assert.equal(contradicted.status, 403);
    assert.equal(contradicted.body.code, 'forbidden');
  });

  test('a mistyped key (bad checksum) and an unknown key are 401 with a Bearer challenge', async () => {
    const org = await anOrg(pool());
    const { key } = await aKey(pool(), { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId });
    const flipped = key.slice(0, 10) + (key[10] === 'a' ? 'b' : 'a') + key.slice(11);
    for (const k of [flipped, 'apst_' + 'x'.repeat(36)]) {
      const res = await api().get('/api/spaces', { key: k });
      assert.equal(res.status, 401);
      assert.equal(res.body.code, 'unauthorized');
      assert.equal(res.headers.get('www-authenticate'), 'Bearer');
    }
  });
});

describe('listing and revoking', () => {
  test('the list shows working keys without secrets; revocation takes effect at once', async () => {
    const org = await anOrg(pool());
    const ctx = { cookie: await sessionOf(org.ownerId), org: org.orgId, space: org.spaceId };
    const made = await api().post('/api/api-keys', { name: 'short-lived', scopes: ['spaces:read'] }, ctx);
    assert.equal((await api().get('/api/spaces', { key: made.body.key })).status, 200);
    const list = await api().get('/api/api-keys', ctx);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.data.map((k: { id: string }) => k.id), [made.body.id]);
    assert.ok(!list.text.includes(made.body.key));

    assert.equal((await api().delete(`/api/api-keys/${made.body.id}`, ctx)).status, 204);
    const after = await api().get('/api/spaces', { key: made.body.key });
    assert.equal(after.status, 401);
    assert.deepEqual((await api().get('/api/api-keys', ctx)).body.data, []);
    assert.equal((await api().delete(`/api/api-keys/${made.body.id}`, ctx)).status, 404);
  });

  test('a creator revokes their own key; someone else\'s needs api-keys:delete', async () => {
    const org = await anOrg(pool());
    const editorId = await aMember(pool(), org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'editor' });
    const editor = { cookie: await sessionOf(editorId), org: org.orgId, space: org.spaceId };
    const owners = await aKey(pool(), { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId });
    const own = await api().post('/api/api-keys', { name: 'mine' }, editor);
    const denied = await api().delete(`/api/api-keys/${owners.keyId}`, editor);
    assert.equal(denied.status, 403);
    assert.equal((await api().delete(`/api/api-keys/${own.body.id}`, editor)).status, 204);
    const admin = { cookie: await sessionOf(org.ownerId), org: org.orgId, space: org.spaceId };
    const other = await api().post('/api/api-keys', { name: 'editor again' }, editor);
    assert.equal((await api().delete(`/api/api-keys/${other.body.id}`, admin)).status, 204);
  });
});
