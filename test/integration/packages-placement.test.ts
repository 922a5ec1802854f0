import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { isProblem } from '../../lib/problem.ts';
import type { SpaceScope } from '../../db/tenant.ts';
import { resolveRunnableAgent } from '../../api/services/packages/dependencies.ts';
import { requirePackageInSpace } from '../../api/services/packages/placement.ts';
import { aMember, aSession, aSpace } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { aPackageWorld, agentFiles, importArchive, integrationFiles, skillFiles, zip } from './packages-harness.ts';

const w = await aPackageWorld();
after(() => w.app.close());
const pool = w.app.deps.database.pool;
const team = await aSpace(pool, w.org.orgId, { name: 'Team B' });
const personal = await aSpace(pool, w.org.orgId, { name: 'Mine', kind: 'personal', ownerUserId: w.org.ownerId });
const owner = client(w.app.url, { cookie: (await aSession(pool, w.org.ownerId)).cookie, org: w.org.orgId });
const inTeam: SpaceScope = { pool, db: w.app.deps.database.db, orgId: w.org.orgId, spaceId: team, actor: { userId: w.org.ownerId } };

await importArchive(w, zip(skillFiles('@acme/notes', '1.0.0')));
await importArchive(w, zip(integrationFiles('@acme/crm', '1.4.0')));
await importArchive(w, zip(agentFiles('@acme/helper', '1.0.0', {
  display_name: 'Helper',
  dependencies: { skills: { '@acme/notes': '^1.0.0' }, integrations: { '@acme/crm': '^1.0.0' } },
})));
await importArchive(w, zip(agentFiles('@acme/helper', '2.0.0', { dependencies: { skills: { '@acme/notes': '^2.0.0' } } })));

async function rejectsWith(promise: Promise<unknown>, code: string, status?: number): Promise<void> {
  await assert.rejects(promise, (err) => {
    assert.ok(isProblem(err), String(err));
    assert.equal(err.code, code);
    if (status) assert.equal(err.status, status);
    return true;
  });
}

test('placing a package in a space, switching it off and removing it', async () => {
  const placed = await owner.post(`/api/spaces/${team}/packages`, { packageId: '@acme/helper', active: false });
  assert.equal(placed.status, 201, placed.text);
  assert.deepEqual([placed.body.packageId, placed.body.spaceId, placed.body.active], ['@acme/helper', team, false]);
  const again = await owner.post(`/api/spaces/${team}/packages`, { packageId: '@acme/helper', active: false });
  assert.equal(again.status, 200);

  const home = await owner.post(`/api/spaces/${w.org.spaceId}/packages`, { packageId: '@acme/helper' });
  assert.equal(home.status, 409);
  assert.equal(home.body.code, 'share_target_is_home');
  const unknown = await owner.post(`/api/spaces/${team}/packages`, { packageId: '@acme/nothing' });
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body.code, 'package_not_found');

  await importArchive(w, zip(skillFiles('@acme/gone', '1.0.0')));
  await w.api.post('/api/packages/@acme/gone/versions/1.0.0/yank');
  const noVersion = await owner.post(`/api/spaces/${team}/packages`, { packageId: '@acme/gone' });
  assert.equal(noVersion.status, 409);
  assert.equal(noVersion.body.code, 'package_has_no_version');

  const notPlaced = await owner.patch(`/api/spaces/${team}/packages/@acme/notes`, { active: true });
  assert.equal(notPlaced.status, 404);
  assert.equal(notPlaced.body.code, 'package_not_placed');

  const listed = await client(w.app.url, { cookie: (await aSession(pool, w.org.ownerId)).cookie, org: w.org.orgId, space: team }).get('/api/packages');
  assert.deepEqual(listed.body.data.map((p: any) => [p.packageId, p.placement]), [['@acme/helper', 'inactive']]);
});

test('a run in a space resolves only agents living or active there, with their dependencies', async () => {
  await rejectsWith(resolveRunnableAgent(inTeam, '@acme/nothing'), 'agent_not_found', 404);
  await rejectsWith(resolveRunnableAgent(inTeam, '@acme/notes'), 'agent_not_found', 404);
  await rejectsWith(resolveRunnableAgent(inTeam, '@acme/helper'), 'agent_not_active_in_space', 404);
  await rejectsWith(requirePackageInSpace(inTeam, '@acme/helper'), 'package_not_active_in_space', 404);
  await rejectsWith(requirePackageInSpace(inTeam, '@acme/notes'), 'package_not_placed', 404);

  assert.equal((await owner.patch(`/api/spaces/${team}/packages/@acme/helper`, { active: true })).status, 200);
  await rejectsWith(resolveRunnableAgent(inTeam, '@acme/helper', '1.0.0'), 'missing_skill', 400);
  assert.equal((await owner.post(`/api/spaces/${team}/packages`, { packageId: '@acme/notes' })).status, 201);
  await rejectsWith(resolveRunnableAgent(inTeam, '@acme/helper', '1.0.0'), 'dependency_unresolved', 422);
  assert.equal((await owner.post(`/api/spaces/${team}/packages`, { packageId: '@acme/crm' })).status, 201);
  await rejectsWith(resolveRunnableAgent(inTeam, '@acme/helper'), 'dependency_unresolved', 422); // latest (2.0.0) wants notes ^2

  const agent = await resolveRunnableAgent(inTeam, '@acme/helper', '^1.0.0');
  assert.equal(agent.version, '1.0.0');
  assert.equal(agent.manifest.display_name, 'Helper');
  assert.equal(agent.files.get('prompt.md')!.toString(), 'Answer the question.');
  assert.deepEqual(agent.skills.map((s) => [s.id, s.version, [...s.files.keys()].sort()]), [['@acme/notes', '1.0.0', ['SKILL.md', 'manifest.json']]]);
  assert.deepEqual(agent.integrations.map((i) => [i.id, i.version]), [['@acme/crm', '1.4.0']]);

  const inHome: SpaceScope = { ...inTeam, spaceId: w.org.spaceId };
  await rejectsWith(resolveRunnableAgent(inHome, '@acme/notes'), 'not_an_agent', 400);
  await pool.query(
    `INSERT INTO packages (org_id, id, type, home_space_id, draft_integrity) VALUES ($1, '@acme/unpublished', 'agent', $2, 'sha256-x')`,
    [w.org.orgId, w.org.spaceId],
  );
  await rejectsWith(resolveRunnableAgent(inHome, '@acme/unpublished'), 'no_published_version', 404);
});

test('the bundle export follows the same rules in the space it is asked from', async () => {
  const teamKeyless = client(w.app.url, { cookie: (await aSession(pool, w.org.ownerId)).cookie, org: w.org.orgId, space: team });
  assert.equal((await owner.patch(`/api/spaces/${team}/packages/@acme/helper`, { active: false })).status, 200);
  const off = await teamKeyless.get('/api/agents/@acme/helper/bundle');
  assert.equal(off.status, 404);
  assert.equal(off.body.code, 'agent_not_active_in_space');
  assert.equal((await owner.delete(`/api/spaces/${team}/packages/@acme/helper`)).status, 204);
  assert.equal((await owner.delete(`/api/spaces/${team}/packages/@acme/helper`)).body.code, 'package_not_placed');
  const gone = await teamKeyless.get('/api/agents/@acme/helper/bundle');
  assert.equal(gone.body.code, 'agent_not_found');
});

test('moving the home: never into a personal space, never onto itself; the old home keeps it placed', async () => {
  const intoPersonal = await w.api.put('/api/packages/@acme/crm/home', { space_id: personal });
  assert.equal(intoPersonal.status, 409);
  assert.equal(intoPersonal.body.code, 'home_move_into_personal_space');
  const ontoItself = await w.api.put('/api/packages/@acme/crm/home', { space_id: w.org.spaceId });
  assert.equal(ontoItself.body.code, 'share_target_is_home');
  const keyElsewhere = await w.api.put('/api/packages/@acme/crm/home', { space_id: team });
  assert.equal(keyElsewhere.status, 403, 'a key pinned to the home holds nothing in the target space');

  const homeSession = client(w.app.url, { cookie: (await aSession(pool, w.org.ownerId)).cookie, org: w.org.orgId, space: w.org.spaceId });
  const moved = await homeSession.put('/api/packages/@acme/crm/home', { space_id: team });
  assert.equal(moved.status, 200, moved.text);
  assert.deepEqual(moved.body, { packageId: '@acme/crm', home_space_id: team, previous_home_space_id: w.org.spaceId });
  const record = await homeSession.get('/api/packages/@acme/crm');
  assert.equal(record.body.home_space_id, team);
  assert.equal(record.body.placement, 'active');
  assert.deepEqual(record.body.placements, [{ spaceId: w.org.spaceId, active: true }]);

  const back = await homeSession.put('/api/packages/@acme/crm/home', {});
  assert.equal(back.status, 200, 'no target: the default space');
  assert.equal(back.body.home_space_id, w.org.spaceId);

  await pool.query('UPDATE spaces SET is_default = false WHERE org_id = $1', [w.org.orgId]);
  try {
    const noDefault = await homeSession.put('/api/packages/@acme/crm/home', { space_id: null });
    assert.equal(noDefault.status, 409);
    assert.equal(noDefault.body.code, 'organization_has_no_default_space');
  } finally {
    await pool.query('UPDATE spaces SET is_default = true WHERE id = $1', [w.org.spaceId]);
  }
});

// Issue 29, checks (d, e): the space filter of placements in the package list and in the lookup
// behind reads, launches and bundle exports. A package placed in s2 is nowhere in s3; one placed
// in two spaces is listed once in each.
test('a placement counts in its own space only: absent from and 404 in another space, listed once in each of two', async () => {
  const s2 = await aSpace(pool, w.org.orgId, { name: 'Placed S2' });
  const s3 = await aSpace(pool, w.org.orgId, { name: 'Placed S3' });
  await importArchive(w, zip(agentFiles('@acme/only-s2', '1.0.0')));
  await importArchive(w, zip(agentFiles('@acme/in-both', '1.0.0')));
  for (const [space, id] of [[s2, '@acme/only-s2'], [s2, '@acme/in-both'], [s3, '@acme/in-both']]) {
    assert.equal((await owner.post(`/api/spaces/${space}/packages`, { packageId: id })).status, 201);
  }
  const cookie = (await aSession(pool, w.org.ownerId)).cookie;
  const inSpace = (space: string) => client(w.app.url, { cookie, org: w.org.orgId, space });
  const listed = async (space: string) => (await inSpace(space).get('/api/packages?limit=100')).body.data.map((p: { packageId: string }) => p.packageId).sort();
  assert.deepEqual(await listed(s2), ['@acme/in-both', '@acme/only-s2']);
  assert.deepEqual(await listed(s3), ['@acme/in-both']);

  // reads by a member of s3 alone (the home space's readers may read from anywhere)
  const s3member = await aMember(pool, w.org.orgId, 'member', { spaceId: s3, roleKey: 'editor' });
  const s3api = client(w.app.url, { cookie: (await aSession(pool, s3member)).cookie, org: w.org.orgId, space: s3 });
  assert.equal((await s3api.get('/api/packages/@acme/in-both')).status, 200, 'the member reads what is placed in s3');
  const read = await s3api.get('/api/packages/@acme/only-s2');
  assert.deepEqual([read.status, read.body.code], [404, 'package_not_found']);
  const versions = await s3api.get('/api/packages/@acme/only-s2/versions');
  assert.equal(versions.status, 404);
  const launch = await s3api.post('/api/agents/@acme/only-s2/run', { input: {} });
  assert.deepEqual([launch.status, launch.body.code], [404, 'agent_not_found']);
  const bundle = await s3api.get('/api/agents/@acme/only-s2/bundle');
  assert.deepEqual([bundle.status, bundle.body.code], [404, 'agent_not_found']);

  // where it is placed, the same reads answer
  assert.equal((await inSpace(s2).get('/api/packages/@acme/only-s2')).status, 200);
  assert.equal((await inSpace(s2).get('/api/agents/@acme/only-s2/bundle')).status, 200);
  const both = await s3api.get('/api/packages/@acme/in-both');
  assert.equal(both.status, 200, both.text);
  assert.equal(both.body.placement, 'active');
});
