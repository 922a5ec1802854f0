import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { aMember, aSession, aSpace } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { aPackageWorld, agentFiles, importArchive, skillFiles, zip } from './packages-harness.ts';

const w = await aPackageWorld();
after(() => w.app.close());
const pool = w.app.deps.database.pool;
const restore = (spec: string) => `/api/packages/skills/@acme/writer/versions/${encodeURIComponent(spec)}/restore`;

for (const [version, body] of [['1.0.0', 'First words.'], ['1.1.0', 'Second words.'], ['2.0.0', 'Third words.']]) {
  assert.equal((await importArchive(w, zip(skillFiles('@acme/writer', version, body)))).status, 201);
}
await importArchive(w, zip(agentFiles('@acme/author', '1.0.0', { display_name: 'Author', dependencies: { skills: { '@acme/writer': '^1.0.0' } } })));

const RECORD_FIELDS = [
  'id', 'orgId', 'name', 'description', 'definition', 'content', 'source', 'created_by', 'auto_installed', 'version', 'manifest',
  'manifest_name', 'version_count', 'has_unarchived_changes', 'forked_from', 'home_space_id', 'home_writable', 'home_deletable',
  'home_shareable', 'agents', 'createdAt', 'updatedAt',
].sort();

test('restoring a version puts its files in the draft, creates no version, and answers the skill package record', async () => {
  const res = await w.api.post(restore('1.0.0'));
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(Object.keys(res.body).sort(), RECORD_FIELDS);
  const r = res.body;
  assert.equal(r.id, '@acme/writer');
  assert.equal(r.orgId, w.org.orgId);
  assert.equal(r.version, '1.0.0');
  assert.match(r.definition, /^---\nname: writer\n/);
  assert.match(r.content, /First words\./);
  assert.equal(r.source, 'local');
  assert.equal(r.auto_installed, false);
  assert.equal(r.manifest.version, '1.0.0');
  assert.equal(r.manifest_name, '@acme/writer');
  assert.equal(r.version_count, 3);
  assert.equal(r.has_unarchived_changes, true, 'the draft differs from 2.0.0');
  assert.equal(r.forked_from, null);
  assert.equal(r.home_space_id, w.org.spaceId);
  assert.deepEqual([r.home_writable, r.home_deletable, r.home_shareable], [true, true, true]);
  assert.deepEqual(r.agents, [{ id: '@acme/author', display_name: 'Author' }]);
  assert.ok(!Number.isNaN(Date.parse(r.createdAt)) && !Number.isNaN(Date.parse(r.updatedAt)));
  assert.match(res.headers.get('etag')!, /^"/);

  const versions = await w.api.get('/api/packages/@acme/writer/versions');
  assert.equal(versions.body.data.length, 3, 'no version was created');
  const draft = await w.api.get('/api/packages/@acme/writer/draft');
  assert.equal(draft.headers.get('etag'), res.headers.get('etag'));
});

test('restoring the version the draft already holds answers 200 with the record unchanged (the spec lists no 409 for restore)', async () => {
  const before = await w.api.get('/api/packages/@acme/writer/draft');
  const first = await w.api.post(restore('1.0.0'));
  const res = await w.api.post(restore('1.0.0'));
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.body, first.body);
  assert.equal(res.body.version, '1.0.0');
  assert.equal(res.headers.get('etag'), before.headers.get('etag'));
  const after = await w.api.get('/api/packages/@acme/writer/draft');
  assert.equal(after.headers.get('etag'), before.headers.get('etag'));
  assert.equal(typeof after.body.updatedAt, 'string');
  assert.equal(after.body.updatedAt, before.body.updatedAt, 'nothing was written');
});

test('the version may be a range or a dist-tag', async () => {
  const ranged = await w.api.post(restore('^1.0.0'));
  assert.equal(ranged.status, 200);
  assert.equal(ranged.body.version, '1.1.0');
  const latest = await w.api.post(restore('latest'));
  assert.equal(latest.status, 200);
  assert.equal(latest.body.version, '2.0.0');
  assert.equal(latest.body.has_unarchived_changes, false);
  const none = await w.api.post(restore('9.9.9'));
  assert.equal(none.status, 404);
  assert.equal(none.body.code, 'version_not_found');
});

test('If-Match is optional; a stale one is 412 and changes nothing', async () => {
  const before = await w.api.get('/api/packages/@acme/writer/draft');
  const stale = await w.api.post(restore('1.0.0'), undefined, { headers: { 'if-match': '"stale"' } });
  assert.equal(stale.status, 412);
  assert.equal(stale.body.code, 'precondition_failed');
  assert.equal(stale.headers.get('etag'), before.headers.get('etag'));
  const unchanged = await w.api.get('/api/packages/@acme/writer/draft');
  assert.equal(unchanged.headers.get('etag'), before.headers.get('etag'));
  const matching = await w.api.post(restore('1.0.0'), undefined, { headers: { 'if-match': before.headers.get('etag')! } });
  assert.equal(matching.status, 200);
});

test('authority is the home space: skills:write there and nowhere else; unreadable is 404', async () => {
  const other = await aSpace(pool, w.org.orgId, { name: 'Other' });
  const owner = client(w.app.url, { cookie: (await aSession(pool, w.org.ownerId)).cookie, org: w.org.orgId });
  const placed = await owner.post(`/api/spaces/${other}/packages`, { packageId: '@acme/writer' });
  assert.equal(placed.status, 201, placed.text);

  // editor where the skill is placed, viewer in its home: can read, cannot restore
  const visitor = await aMember(pool, w.org.orgId, 'member', { spaceId: other, roleKey: 'editor' });
  await pool.query('INSERT INTO space_members (space_id, user_id, org_id, role_key) VALUES ($1, $2, $3, $4)', [w.org.spaceId, visitor, w.org.orgId, 'viewer']);
  const visitorApi = client(w.app.url, { cookie: (await aSession(pool, visitor)).cookie, org: w.org.orgId, space: other });
  const refused = await visitorApi.post(restore('1.1.0'));
  assert.equal(refused.status, 403, refused.text);
  assert.equal(refused.body.code, 'forbidden');

  // editor in the home, acting from the other space where they only view: allowed
  const homeEditor = await aMember(pool, w.org.orgId, 'member', { spaceId: w.org.spaceId, roleKey: 'editor' });
  await pool.query('INSERT INTO space_members (space_id, user_id, org_id, role_key) VALUES ($1, $2, $3, $4)', [other, homeEditor, w.org.orgId, 'viewer']);
  const editorApi = client(w.app.url, { cookie: (await aSession(pool, homeEditor)).cookie, org: w.org.orgId, space: other });
  const allowed = await editorApi.post(restore('1.1.0'));
  assert.equal(allowed.status, 200, allowed.text);
  assert.equal(allowed.body.home_writable, true);
  assert.equal(allowed.body.home_deletable, false);

  // a member of a third space with no view of the skill: 404, never 403
  const third = await aSpace(pool, w.org.orgId, { name: 'Third' });
  const stranger = await aMember(pool, w.org.orgId, 'member', { spaceId: third, roleKey: 'space_admin' });
  const strangerApi = client(w.app.url, { cookie: (await aSession(pool, stranger)).cookie, org: w.org.orgId, space: third });
  const hidden = await strangerApi.post(restore('1.0.0'));
  assert.equal(hidden.status, 404);
  assert.equal(hidden.body.code, 'package_not_found');

  // an agent is not restored through the skills route
  const agent = await w.api.post('/api/packages/skills/@acme/author/versions/1.0.0/restore');
  assert.equal(agent.status, 404);
});
