import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { aKey, anOrg } from '../support/builders.ts';
import { aPackageWorld, agentFiles, download, importArchive, skillFiles, storedZip, zip } from './packages-harness.ts';

const w = await aPackageWorld();
after(() => w.app.close());

test('publishing 1.0.0 twice with different content is 409 version_exists', async () => {
  assert.equal((await importArchive(w, zip(agentFiles('@acme/twice', '1.0.0')))).status, 201);
  const again = await importArchive(w, zip(agentFiles('@acme/twice', '1.0.0', {}, 'Another prompt.')));
  assert.equal(again.status, 409);
  assert.equal(again.body.code, 'version_exists');
});

test('0.9.0 after 1.0.0 is 409 version_not_higher', async () => {
  assert.equal((await importArchive(w, zip(agentFiles('@acme/forward', '1.0.0')))).status, 201);
  const lower = await importArchive(w, zip(agentFiles('@acme/forward', '0.9.0')));
  assert.equal(lower.status, 409);
  assert.equal(lower.body.code, 'version_not_higher');
  const record = await w.api.get('/api/packages/@acme/forward');
  assert.deepEqual(record.body.versions.map((v: any) => v.version), ['1.0.0']);
});

test('the same id under another type is type_mismatch; a system id is name_collision', async () => {
  assert.equal((await importArchive(w, zip(skillFiles('@acme/kind', '1.0.0')))).status, 201);
  const other = await importArchive(w, zip(agentFiles('@acme/kind', '2.0.0')));
  assert.equal(other.status, 400);
  assert.equal(other.body.code, 'type_mismatch');
  const system = await importArchive(w, zip(skillFiles('@system/kind', '1.0.0')));
  assert.equal(system.status, 409);
  assert.equal(system.body.code, 'name_collision');
});

test('ids are per organization: another organization may use the same id', async () => {
  const pool = w.app.deps.database.pool;
  const org2 = await anOrg(pool);
  const { key: key2 } = await aKey(pool, { orgId: org2.orgId, spaceId: org2.spaceId, userId: org2.ownerId });
  assert.equal((await importArchive(w, zip(agentFiles('@shared/bot', '1.0.0')))).status, 201);
  assert.equal((await importArchive(w, zip(agentFiles('@shared/bot', '1.0.0', {}, 'Different.')), { key: key2 })).status, 201);
  const mine = await w.api.get('/api/packages/@shared/bot/files/content?path=prompt.md');
  assert.equal(mine.text, 'Answer the question.');
  const theirs = await w.api.get('/api/packages/@shared/bot/files/content?path=prompt.md', { key: key2 });
  assert.equal(theirs.text, 'Different.');
});

test('an import never overwrites unpublished draft changes (409 draft_overwrite)', async () => {
  assert.equal((await importArchive(w, zip(agentFiles('@acme/drafty', '1.0.0')))).status, 201);
  const edit = await w.api.put('/api/packages/@acme/drafty/draft/files', { path: 'prompt.md', content: 'Work in progress.' });
  assert.equal(edit.status, 200, edit.text);
  const overwrite = await importArchive(w, zip(agentFiles('@acme/drafty', '1.1.0')));
  assert.equal(overwrite.status, 409);
  assert.equal(overwrite.body.code, 'draft_overwrite');
  // putting the draft back as published lets the import through
  const back = await w.api.put('/api/packages/@acme/drafty/draft/files', { path: 'prompt.md', content: 'Answer the question.' });
  assert.equal(back.body.has_unarchived_changes, false);
  assert.equal((await importArchive(w, zip(agentFiles('@acme/drafty', '1.1.0')))).status, 201);
  const draft = await w.api.get('/api/packages/@acme/drafty/draft');
  assert.equal(draft.body.base_version, '1.1.0');
  assert.equal(draft.body.manifest.version, '1.1.0');
});

test('a yanked version answers 410 when asked exactly, ranges and latest move past it', async () => {
  const v1 = storedZip(agentFiles('@acme/yank', '1.0.0'));
  const v2 = storedZip(agentFiles('@acme/yank', '1.1.0', {}, 'v2'));
  await importArchive(w, v1);
  await importArchive(w, v2);
  const yanked = await w.api.post('/api/packages/@acme/yank/versions/1.1.0/yank');
  assert.equal(yanked.status, 200);
  assert.equal(yanked.body.yanked, true);
  const exact = await download(w.app.url, '/api/packages/@acme/yank/1.1.0/download', { key: w.key });
  assert.equal(exact.status, 410);
  assert.equal(JSON.parse(exact.bytes.toString()).code, 'version_yanked');
  const ranged = await download(w.app.url, `/api/packages/@acme/yank/${encodeURIComponent('^1.0.0')}/download`, { key: w.key });
  assert.equal(ranged.status, 200);
  assert.ok(ranged.bytes.equals(v1));
  const versions = await w.api.get('/api/packages/@acme/yank/versions');
  assert.deepEqual(versions.body.dist_tags, { latest: '1.0.0' });
  assert.deepEqual(versions.body.data.map((v: any) => [v.version, v.yanked]), [['1.1.0', true], ['1.0.0', false]]);
  // a yanked number is never reused
  const reuse = await importArchive(w, zip(agentFiles('@acme/yank', '1.1.0', {}, 'v2 again')));
  assert.equal(reuse.body.code, 'version_exists');
});
