// End-user impersonation (Service-User, API keys only; recorded server-side; end-users see only
// their own runs) and role preview (X-View-As, owners and admins with a session).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, aSession, aSpace, type BuiltOrg } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { aDefaultModel, importFixture } from '../support/runs.ts';

let fake: Awaited<ReturnType<typeof startFakeModel>>;
let app: TestApp;
let org: BuiltOrg;
let key: string;
let keyId: string;
const ECHO = '/api/agents/@fixtures/agent-echo/run';

before(async () => {
  fake = await startFakeModel();
  app = await startTestApp({ env: { EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host } });
  org = await anOrg(app.deps.database.pool);
  ({ key, keyId } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId }));
  await importFixture(app.url, key, 'agent-echo');
  await aDefaultModel(app.url, key, fake.url);
});
after(async () => {
  await app.close();
  await fake.close();
});

async function anEndUser(externalId: string): Promise<string> {
  const res = await client(app.url, { key }).post('/api/end-users', { externalId, name: externalId });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

describe('Service-User impersonation', () => {
  test('an API key acts for an end-user of its space; the request is recorded with who, what and from where', async () => {
    const eu = await anEndUser('alice');
    const res = await client(app.url, { key, headers: { 'service-user': eu, 'user-agent': 'impersonation-test' } }).get('/api/end-users');
    assert.equal(res.status, 200);
    const { rows } = await app.deps.database.pool.query('SELECT * FROM impersonation_log WHERE request_id = $1', [res.headers.get('request-id')]);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].api_key_id, keyId);
    assert.equal(rows[0].end_user_id, eu);
    assert.equal(rows[0].method, 'GET');
    assert.equal(rows[0].path, '/api/end-users');
    assert.equal(rows[0].user_agent, 'impersonation-test');
    assert.ok(rows[0].ip);
  });

  test('runs belong to the end-user, who sees only their own', async () => {
    const bob = await anEndUser('bob');
    const carol = await anEndUser('carol');
    const asBob = client(app.url, { key, headers: { 'service-user': bob } });
    const asCarol = client(app.url, { key, headers: { 'service-user': carol } });
    const bobRun = await asBob.post(ECHO, { input: { message: 'bob' } });
    assert.equal(bobRun.status, 201, bobRun.text);
    assert.equal(bobRun.body.triggered_by.kind, 'end_user');
    assert.equal(bobRun.body.triggered_by.end_user_id, bob);
    await asCarol.post(ECHO, { input: { message: 'carol' } });
    const bobList = await asBob.get('/api/runs');
    assert.deepEqual(bobList.body.data.map((r: any) => r.id), [bobRun.body.id]);
    const seen = await asCarol.get(`/api/runs/${bobRun.body.id}`);
    assert.equal(seen.status, 404);
  });

  test('with a session it is 400 header_not_allowed; not an eu_ id is 400 invalid_end_user_id; another space is 403 invalid_end_user', async () => {
    const { cookie } = await aSession(app.deps.database.pool, org.ownerId);
    const eu = await anEndUser('dave');
    const withSession = await client(app.url, { cookie, org: org.orgId, space: org.spaceId, headers: { 'service-user': eu } }).get('/api/end-users');
    assert.equal(withSession.status, 400);
    assert.equal(withSession.body.code, 'header_not_allowed');
    const notEu = await client(app.url, { key, headers: { 'service-user': 'usr_123' } }).get('/api/end-users');
    assert.equal(notEu.status, 400);
    assert.equal(notEu.body.code, 'invalid_end_user_id');
    const otherSpace = await aSpace(app.deps.database.pool, org.orgId, { name: 'Other' });
    const { key: otherKey } = await aKey(app.deps.database.pool, { orgId: org.orgId, spaceId: otherSpace, userId: org.ownerId });
    const foreign = await client(app.url, { key: otherKey, headers: { 'service-user': eu } }).get('/api/end-users');
    assert.equal(foreign.status, 403);
    assert.equal(foreign.body.code, 'invalid_end_user');
  });
});

describe('X-View-As role preview', () => {
  test('an owner previews a lesser role: permissions shrink to that role', async () => {
    const { cookie } = await aSession(app.deps.database.pool, org.ownerId);
    const base = { cookie, org: org.orgId, space: org.spaceId };
    assert.equal((await client(app.url, base).post('/api/end-users', { externalId: 'as-owner', name: 'x' })).status, 201);
    const viewer = client(app.url, { ...base, headers: { 'x-view-as': 'member:viewer' } });
    assert.equal((await viewer.get('/api/end-users')).status, 200);
    const write = await viewer.post('/api/end-users', { externalId: 'as-viewer', name: 'x' });
    assert.equal(write.status, 403);
    assert.equal(write.body.code, 'forbidden');
    const guest = await client(app.url, { ...base, headers: { 'x-view-as': 'guest' } }).get('/api/end-users');
    assert.equal(guest.status, 403);
  });

  test('with an API key it is 400 view_as_unsupported; an unparseable value 400 invalid_view_as; a member may not preview', async () => {
    const withKey = await client(app.url, { key, headers: { 'x-view-as': 'guest' } }).get('/api/end-users');
    assert.equal(withKey.status, 400);
    assert.equal(withKey.body.code, 'view_as_unsupported');
    const { cookie } = await aSession(app.deps.database.pool, org.ownerId);
    const garbled = await client(app.url, { cookie, org: org.orgId, space: org.spaceId, headers: { 'x-view-as': 'king of the hill' } }).get('/api/end-users');
    assert.equal(garbled.status, 400);
    assert.equal(garbled.body.code, 'invalid_view_as');
    const member = await aMember(app.deps.database.pool, org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'editor' });
    const { cookie: memberCookie } = await aSession(app.deps.database.pool, member);
    const byMember = await client(app.url, { cookie: memberCookie, org: org.orgId, space: org.spaceId, headers: { 'x-view-as': 'guest' } }).get('/api/end-users');
    assert.equal(byMember.status, 403);
  });
});
