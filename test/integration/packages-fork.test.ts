// Forking a package: a copy under a new id homed in the caller's space (or a personal space),
// forked_from naming the source; a home space that restricts copying lets packages out only to
// holders of the type's write permission there (403 package_copy_restricted); sources and target
// spaces out of reach are 404, wherever the request comes from.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { aKey, aMember, anOrg, aSession, aSpace } from '../support/builders.ts';
import { client, type WireResponse } from '../support/http.ts';
import { aPackageWorld, agentFiles, importArchive, skillFiles, zip } from './packages-harness.ts';

const w = await aPackageWorld();
after(() => w.app.close());
const pool = w.app.deps.database.pool;
const { orgId, spaceId: main, ownerId } = w.org;
const ownerCookie = (await aSession(pool, ownerId)).cookie;
const personal = await aSpace(pool, orgId, { name: 'Mine', kind: 'personal', ownerUserId: ownerId });

assert.equal((await importArchive(w, zip(agentFiles('@acme/bot', '1.0.0', {}, 'Version one prompt.')))).status, 201);
assert.equal((await w.api.put('/api/packages/@acme/bot/draft/files', { path: 'prompt.md', content: 'Draft prompt.' })).status, 200);
assert.equal((await w.api.put('/api/packages/@acme/bot/draft/files', { path: 'notes/todo.md', content: 'later' })).status, 200);

function expectProblem(res: WireResponse, status: number, code: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.code, code, res.text);
}

/** The owner's key in the default space, fresh for each test (forks allow 30 a minute). */
const ownerApi = async () => client(w.app.url, { key: await w.freshKey() });

const fileOf = async (api: ReturnType<typeof client>, id: string, path: string) => (await api.get(`/api/packages/${id}/files/content?path=${path}`)).text;

test('a fork copies the draft into a new package homed where the caller acts, forked_from naming the source', async () => {
  const api = await ownerApi();
  const forked = await api.post('/api/packages/@acme/bot/fork', { name: '@acme/bot-copy' });
  assert.equal(forked.status, 201, forked.text);
  assert.equal(forked.headers.get('location'), '/api/packages/@acme/bot-copy');
  assert.equal(forked.body.packageId, '@acme/bot-copy');
  assert.equal(forked.body.forked_from, '@acme/bot');
  assert.equal(forked.body.home_space_id, main);
  assert.equal(forked.body.placement, 'home');
  assert.deepEqual(forked.body.versions, [], 'nothing is published until the fork\'s owner publishes');

  const read = await api.get('/api/packages/@acme/bot-copy');
  assert.equal(read.body.forked_from, '@acme/bot');
  assert.equal((await api.get('/api/packages/@acme/bot')).body.forked_from, null);
  const files = await api.get('/api/packages/@acme/bot-copy/files');
  assert.deepEqual(files.body.data.map((f: { path: string }) => f.path), ['manifest.json', 'notes/todo.md', 'prompt.md']);
  assert.equal(await fileOf(api, '@acme/bot-copy', 'prompt.md'), 'Draft prompt.');
  const manifest = JSON.parse(await fileOf(api, '@acme/bot-copy', 'manifest.json'));
  assert.equal(manifest.name, '@acme/bot-copy');
  assert.equal(manifest.type, 'agent');

  // the copy is a package of its own: publishing it leaves the source as it was
  const published = await api.post('/api/packages/@acme/bot-copy/publish', {});
  assert.equal(published.status, 201, published.text);
  assert.equal(published.body.version, '1.0.0');
  assert.equal(await fileOf(api, '@acme/bot', 'prompt.md'), 'Draft prompt.');
  assert.deepEqual((await api.get('/api/packages/@acme/bot/versions')).body.data.map((v: { version: string }) => v.version), ['1.0.0']);
});

test('version: a published version is copied instead of the draft', async () => {
  const api = await ownerApi();
  const forked = await api.post('/api/packages/@acme/bot/fork', { name: '@acme/bot-v1', version: '1.0.0' });
  assert.equal(forked.status, 201, forked.text);
  assert.equal(await fileOf(api, '@acme/bot-v1', 'prompt.md'), 'Version one prompt.');
  const files = await api.get('/api/packages/@acme/bot-v1/files');
  assert.ok(!files.body.data.some((f: { path: string }) => f.path === 'notes/todo.md'));
  expectProblem(await api.post('/api/packages/@acme/bot/fork', { name: '@acme/bot-v9', version: '9.0.0' }), 404, 'version_not_found');
});

test('a personal space is a fork target, though a home never moves into one', async () => {
  const owner = client(w.app.url, { cookie: ownerCookie, org: orgId, space: main });
  const forked = await owner.post('/api/packages/@acme/bot/fork', { name: '@me/bot-copy', space_id: personal });
  assert.equal(forked.status, 201, forked.text);
  assert.equal(forked.body.home_space_id, personal);
  assert.equal(forked.body.forked_from, '@acme/bot');
  expectProblem(await owner.put('/api/packages/@acme/bot/home', { space_id: personal }), 409, 'home_move_into_personal_space');
});

test('Idempotency-Key replays the creation; a second fork to a taken id is name_collision', async () => {
  const api = await ownerApi();
  const headers = { 'idempotency-key': 'fork-once-1' };
  const first = await api.post('/api/packages/@acme/bot/fork', { name: '@acme/bot-idem' }, { headers });
  assert.equal(first.status, 201, first.text);
  const again = await api.post('/api/packages/@acme/bot/fork', { name: '@acme/bot-idem' }, { headers });
  assert.equal(again.status, 201, again.text);
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(again.body.packageId, '@acme/bot-idem');

  expectProblem(await api.post('/api/packages/@acme/bot/fork', { name: '@acme/bot-idem' }), 409, 'name_collision');
  expectProblem(await api.post('/api/packages/@acme/bot/fork', { name: '@acme/bot' }), 409, 'name_collision');
  expectProblem(await api.post('/api/packages/@acme/bot/fork', { name: '@system/bot' }), 409, 'name_collision');
  expectProblem(await api.post('/api/packages/@acme/bot/fork', { name: 'no-scope' }), 400, 'validation_failed');
});

test('two forks racing for one id: one is made, the other is name_collision', async () => {
  const [one, two] = [await ownerApi(), await ownerApi()];
  const answers = await Promise.all([
    one.post('/api/packages/@acme/bot/fork', { name: '@acme/bot-race' }),
    two.post('/api/packages/@acme/bot/fork', { name: '@acme/bot-race', version: '1.0.0' }),
  ]);
  assert.deepEqual(answers.map((r) => r.status).sort(), [201, 409], answers.map((r) => r.text).join('\n'));
  assert.equal(answers.find((r) => r.status === 409)!.body.code, 'name_collision');
  const files = await one.get('/api/packages/@acme/bot-race/files');
  assert.equal(files.status, 200);
});

test('a deleted package\'s id can be taken by a fork', async () => {
  const api = await ownerApi();
  assert.equal((await api.post('/api/packages/@acme/bot/fork', { name: '@acme/bot-gone' })).status, 201);
  assert.equal((await api.delete('/api/packages/@acme/bot-gone')).status, 204);
  const again = await api.post('/api/packages/@acme/bot/fork', { name: '@acme/bot-gone' });
  assert.equal(again.status, 201, again.text);
});

test('a home space with package_copy restricted lets a package out only to writers of that home: 403 package_copy_restricted', async () => {
  const api = await ownerApi();
  // @acme/vault lives in "Vault" and is placed in "Team"; the user is an editor of Team alone
  const vault = await aSpace(pool, orgId, { name: 'Vault' });
  const team = await aSpace(pool, orgId, { name: 'Team' });
  const vaultKey = (await aKey(pool, { orgId, spaceId: vault, userId: ownerId })).key;
  assert.equal((await importArchive(w, zip(agentFiles('@acme/vault', '1.0.0')), { key: vaultKey })).status, 201);
  const owner = client(w.app.url, { cookie: ownerCookie, org: orgId });
  assert.equal((await owner.post(`/api/spaces/${team}/packages`, { packageId: '@acme/vault' })).status, 201);
  const editor = await aMember(pool, orgId, 'member', { spaceId: team, roleKey: 'editor' });
  const asEditor = client(w.app.url, { cookie: (await aSession(pool, editor)).cookie, org: orgId, space: team });
  const vaultWriter = await aMember(pool, orgId, 'member', { spaceId: vault, roleKey: 'editor' });
  await pool.query(`INSERT INTO space_members (space_id, user_id, org_id, role_key) VALUES ($1, $2, $3, 'editor')`, [team, vaultWriter, orgId]);
  const asVaultWriter = client(w.app.url, { cookie: (await aSession(pool, vaultWriter)).cookie, org: orgId, space: team });

  // by default whoever reads the package may fork it
  const open = await asEditor.post('/api/packages/@acme/vault/fork', { name: '@acme/vault-open' });
  assert.equal(open.status, 201, open.text);
  assert.equal(open.body.home_space_id, team);

  // only the space's administrators set the policy: an editor of Team cannot, a stranger to Vault does not see it
  expectProblem(await asEditor.patch(`/api/spaces/${team}`, { package_copy: 'restricted' }), 403, 'forbidden');
  expectProblem(await asEditor.patch(`/api/spaces/${vault}`, { package_copy: 'members' }), 404, 'not_found');
  const restricted = await owner.patch(`/api/spaces/${vault}`, { package_copy: 'restricted' });
  assert.equal(restricted.status, 200, restricted.text);
  assert.equal(restricted.body.package_copy, 'restricted');

  expectProblem(await asEditor.post('/api/packages/@acme/vault/fork', { name: '@acme/vault-leak' }), 403, 'package_copy_restricted');
  expectProblem(await asEditor.post('/api/packages/@acme/vault/fork', { name: '@acme/vault-leak', version: '1.0.0' }), 403, 'package_copy_restricted');
  assert.equal((await api.get('/api/packages/@acme/vault-leak')).status, 404, 'nothing was created');
  // the editor still reads and runs what is placed in Team: only copying is restricted
  assert.equal((await asEditor.get('/api/packages/@acme/vault')).status, 200);

  const allowed = await asVaultWriter.post('/api/packages/@acme/vault/fork', { name: '@acme/vault-by-writer' });
  assert.equal(allowed.status, 201, allowed.text);
  assert.equal(allowed.body.forked_from, '@acme/vault');

  // a key pinned to Team holds nothing in Vault, whoever created it
  const teamKey = (await aKey(pool, { orgId, spaceId: team, userId: vaultWriter })).key;
  expectProblem(await client(w.app.url, { key: teamKey }).post('/api/packages/@acme/vault/fork', { name: '@acme/vault-by-key' }), 403, 'package_copy_restricted');

  assert.equal((await owner.patch(`/api/spaces/${vault}`, { package_copy: 'members' })).status, 200);
  assert.equal((await asEditor.post('/api/packages/@acme/vault/fork', { name: '@acme/vault-later' })).status, 201);
});

test('hostile forks: sources and target spaces out of reach are 404, a target the caller only reads is 403', async () => {
  const api = await ownerApi();
  const hidden = await aSpace(pool, orgId, { name: 'Hidden' });
  const hiddenKey = (await aKey(pool, { orgId, spaceId: hidden, userId: ownerId })).key;
  assert.equal((await importArchive(w, zip(skillFiles('@acme/hidden', '1.0.0')), { key: hiddenKey })).status, 201);
  const reader = await aMember(pool, orgId, 'member', { spaceId: main, roleKey: 'viewer' });
  const writerSpace = await aSpace(pool, orgId, { name: 'Writer' });
  await pool.query(`INSERT INTO space_members (space_id, user_id, org_id, role_key) VALUES ($1, $2, $3, 'editor')`, [writerSpace, reader, orgId]);
  const asReader = client(w.app.url, { cookie: (await aSession(pool, reader)).cookie, org: orgId, space: main });
  const readerPersonal = await aSpace(pool, orgId, { kind: 'personal', ownerUserId: reader, name: 'Reader' });

  // a source the caller cannot read
  expectProblem(await asReader.post('/api/packages/@acme/hidden/fork', { name: '@acme/stolen', space_id: writerSpace }), 404, 'package_not_found');
  // targets: a space the caller holds nothing in, someone else's personal space, another organization's space
  const other = await anOrg(pool);
  for (const target of [hidden, personal, other.spaceId, 'spc_absent']) {
    expectProblem(await asReader.post('/api/packages/@acme/bot/fork', { name: '@acme/stolen', space_id: target }), 404, 'not_found');
  }
  // a space where the caller only reads
  expectProblem(await asReader.post('/api/packages/@acme/bot/fork', { name: '@acme/stolen' }), 403, 'forbidden');
  // where the caller writes, it works (their personal space included)
  assert.equal((await asReader.post('/api/packages/@acme/bot/fork', { name: '@acme/reader-copy', space_id: writerSpace })).status, 201);
  assert.equal((await asReader.post('/api/packages/@acme/bot/fork', { name: '@reader/bot', space_id: readerPersonal })).status, 201);

  // a key pinned to one space reaches no other space as a target
  expectProblem(await api.post('/api/packages/@acme/bot/fork', { name: '@acme/stolen', space_id: hidden }), 404, 'not_found');

  // another organization neither reads the source nor lands a copy in it
  const otherKey = (await aKey(pool, { orgId: other.orgId, spaceId: other.spaceId, userId: other.ownerId })).key;
  const outsider = client(w.app.url, { key: otherKey });
  expectProblem(await outsider.post('/api/packages/@acme/bot/fork', { name: '@acme/stolen' }), 404, 'package_not_found');
  expectProblem(await outsider.post('/api/packages/@acme/bot/fork', { name: '@acme/stolen', space_id: main }), 404, 'package_not_found');
  assert.equal((await api.get('/api/packages/@acme/stolen')).status, 404, 'no fork was made by any refused call');
});
