// Organizations: creation (with the default and personal spaces), listing, reading and changing
// through the path, deletion (marked, then removed with every row), and org_deleting meanwhile.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, aSession, aUser } from '../support/builders.ts';
import { client } from '../support/http.ts';

let app: TestApp;
before(async () => {
  app = await startTestApp();
});
after(() => app.close());

const pool = () => app.deps.database.pool;
const api = () => client(app.url);

async function signedInNewcomer(): Promise<string> {
  const { userId } = await aUser(pool());
  return (await aSession(pool(), userId)).cookie;
}

/** Every row of every table that carries this organization's id. */
async function rowsOfOrg(orgId: string): Promise<Record<string, number>> {
  const { rows: tables } = await pool().query(
    `SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'org_id' AND table_name <> 'bootstrap_state'`,
  );
  const out: Record<string, number> = {};
  for (const { table_name } of tables) {
    const { rows } = await pool().query(`SELECT count(*)::int AS n FROM "${table_name}" WHERE org_id = $1`, [orgId]);
    if (rows[0].n) out[table_name] = rows[0].n;
  }
  return out;
}

describe('creating an organization', () => {
  test('makes the caller owner, with a default team space and a personal space', async () => {
    const cookie = await signedInNewcomer();
    const res = await api().post('/api/orgs', { name: 'Élan Vital & Co' }, { cookie });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.role, 'owner');
    assert.equal(res.body.slug, 'elan-vital-co');
    assert.match(res.body.default_space_id, /^spc_/);
    assert.match(res.body.personal_space_id, /^spc_/);
    const spaces = await api().get('/api/spaces', { cookie, org: res.body.id });
    const byId = new Map(spaces.body.data.map((s: { id: string; kind: string }) => [s.id, s.kind]));
    assert.equal(byId.get(res.body.default_space_id), 'team');
    assert.equal(byId.get(res.body.personal_space_id), 'personal');
  });

  test('a second organization with the same name gets a distinct slug; an explicit slug in use is 400 slug_taken', async () => {
    const cookie = await signedInNewcomer();
    const a = await api().post('/api/orgs', { name: 'Twin' }, { cookie });
    const b = await api().post('/api/orgs', { name: 'Twin' }, { cookie });
    assert.equal(b.status, 201);
    assert.notEqual(a.body.slug, b.body.slug);
    const taken = await api().post('/api/orgs', { name: 'Other', slug: a.body.slug }, { cookie });
    assert.equal(taken.status, 400);
    assert.equal(taken.body.code, 'slug_taken');
    const bad = await api().post('/api/orgs', { name: 'Other', slug: 'Not A Slug' }, { cookie });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'validation_failed');
  });

  test('an API key cannot create an organization', async () => {
    const org = await anOrg(pool());
    const { key } = await aKey(pool(), { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId });
    const res = await api().post('/api/orgs', { name: 'By key' }, { key });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'forbidden');
  });
});

describe('listing and reading', () => {
  test('lists the caller\'s organizations with their role; a key lists only its own', async () => {
    const a = await anOrg(pool());
    const b = await anOrg(pool());
    const { userId } = await aUser(pool());
    await pool().query(`INSERT INTO org_members (org_id, user_id, role) VALUES ($1, $3, 'guest'), ($2, $3, 'admin')`, [a.orgId, b.orgId, userId]);
    const { cookie } = await aSession(pool(), userId);
    const mine = await api().get('/api/orgs', { cookie });
    assert.deepEqual(mine.body.data.map((o: { id: string; role: string }) => `${o.id}:${o.role}`).sort(), [`${a.orgId}:guest`, `${b.orgId}:admin`].sort());
    const { key } = await aKey(pool(), { orgId: a.orgId, spaceId: a.spaceId, userId: a.ownerId });
    const byKey = await api().get('/api/orgs', { key });
    assert.deepEqual(byKey.body.data.map((o: { id: string }) => o.id), [a.orgId]);
  });

  test('GET /api/orgs/{orgId}: a guest reads it; a stranger gets 404; so does a malformed id', async () => {
    const org = await anOrg(pool());
    const guest = await aMember(pool(), org.orgId, 'guest');
    const read = await api().get(`/api/orgs/${org.orgId}`, { cookie: (await aSession(pool(), guest)).cookie });
    assert.equal(read.status, 200);
    assert.equal(read.body.role, 'guest');
    assert.equal(read.body.default_space_id, org.spaceId);
    const stranger = await signedInNewcomer();
    assert.equal((await api().get(`/api/orgs/${org.orgId}`, { cookie: stranger })).status, 404);
    assert.equal((await api().get('/api/orgs/not-a-uuid', { cookie: stranger })).status, 404);
  });
});

describe('changing', () => {
  test('an admin renames; a member is 403 forbidden; a slug in use is 400 slug_taken', async () => {
    const org = await anOrg(pool());
    const other = await anOrg(pool());
    const admin = (await aSession(pool(), await aMember(pool(), org.orgId, 'admin'))).cookie;
    const member = (await aSession(pool(), await aMember(pool(), org.orgId, 'member'))).cookie;
    const renamed = await api().patch(`/api/orgs/${org.orgId}`, { name: 'Renamed', slug: 'renamed-org' }, { cookie: admin });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.name, 'Renamed');
    assert.equal(renamed.body.slug, 'renamed-org');
    const denied = await api().patch(`/api/orgs/${org.orgId}`, { name: 'Nope' }, { cookie: member });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.code, 'forbidden');
    const otherSlug = (await pool().query('SELECT slug FROM organizations WHERE id = $1', [other.orgId])).rows[0].slug;
    const taken = await api().patch(`/api/orgs/${org.orgId}`, { slug: otherSlug }, { cookie: admin });
    assert.equal(taken.status, 400);
    assert.equal(taken.body.code, 'slug_taken');
  });
});

describe('deleting', () => {
  test('only an owner deletes; every row of the organization goes and its keys stop working', async () => {
    const org = await anOrg(pool());
    const admin = await aMember(pool(), org.orgId, 'admin');
    const { key } = await aKey(pool(), { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId });
    await pool().query(`INSERT INTO end_users (id, org_id, space_id, external_id, name) VALUES ('eu_gone1', $1, $2, 'x', 'X')`, [org.orgId, org.spaceId]);
    await pool().query(
      `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, timeout_seconds, event_secret, sink_expires_at)
       VALUES ('run_done1', $1, $2, '@a/b', '1.0.0', 'success', 'member', 60, 'x', now())`,
      [org.orgId, org.spaceId],
    );
    assert.equal((await api().get('/api/spaces', { key })).status, 200);

    const byAdmin = await api().delete(`/api/orgs/${org.orgId}`, { cookie: (await aSession(pool(), admin)).cookie });
    assert.equal(byAdmin.status, 403);
    const owner = (await aSession(pool(), org.ownerId)).cookie;
    const res = await api().delete(`/api/orgs/${org.orgId}`, { cookie: owner });
    assert.equal(res.status, 204, res.text);
    assert.deepEqual(await rowsOfOrg(org.orgId), {});
    assert.equal((await pool().query('SELECT 1 FROM organizations WHERE id = $1', [org.orgId])).rowCount, 0);
    assert.equal((await api().get('/api/spaces', { key })).status, 401);
    assert.deepEqual((await api().get('/api/orgs', { cookie: owner })).body.data, []);
  });

  test('while an organization is being deleted, writes answer 409 org_deleting and reads still work; DELETE resumes', async () => {
    const org = await anOrg(pool());
    const owner = (await aSession(pool(), org.ownerId)).cookie;
    assert.equal((await api().get('/api/spaces', { cookie: owner, org: org.orgId })).status, 200);
    await pool().query('UPDATE organizations SET deleting_at = now() WHERE id = $1', [org.orgId]);
    app.deps.authCache.clear();

    const read = await api().get(`/api/orgs/${org.orgId}`, { cookie: owner });
    assert.equal(read.status, 200);
    assert.equal(read.body.deleting, true);
    const patch = await api().patch(`/api/orgs/${org.orgId}`, { name: 'X' }, { cookie: owner });
    assert.equal(patch.status, 409);
    assert.equal(patch.body.code, 'org_deleting');
    const space = await api().post('/api/spaces', { name: 'Late' }, { cookie: owner, org: org.orgId });
    assert.equal(space.status, 409);
    assert.equal(space.body.code, 'org_deleting');
    assert.equal((await api().delete(`/api/orgs/${org.orgId}`, { cookie: owner })).status, 204);
  });
});

describe('when creation is disabled', () => {
  let locked: TestApp;
  before(async () => {
    locked = await startTestApp({ env: { ORG_CREATION_DISABLED: 'true' } });
  });
  after(() => locked.close());

  test('POST /api/orgs is 403 org_creation_disabled', async () => {
    const { userId } = await aUser(locked.deps.database.pool);
    const { cookie } = await aSession(locked.deps.database.pool, userId);
    const res = await client(locked.url).post('/api/orgs', { name: 'Nope' }, { cookie });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'org_creation_disabled');
  });
});
