// Damage in the package catalog is a server fault, told apart from a client error: files whose
// bytes no longer match the integrity recorded at publish are 500 bundle_integrity_mismatch, a
// stored manifest that no longer names its package and version is 500 invalid_stored_manifest;
// content gone from the store is 422 version_artifact_unavailable. And the refusals of resolving an
// agent for export: not an agent, a dependency missing.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { aPackageWorld, agentFiles, download, importArchive, skillFiles, zip } from './packages-harness.ts';

const w = await aPackageWorld();
const pool = w.app.deps.database.pool;
after(() => w.app.close());

async function publish(id: string, prompt: string): Promise<void> {
  const res = await importArchive(w, zip(agentFiles(id, '1.0.0', {}, prompt)));
  assert.equal(res.status, 201, res.text);
}

async function bundle(id: string) {
  const res = await download(w.app.url, `/api/agents/${id}/bundle`, { key: w.key });
  return { status: res.status, body: res.status === 200 ? null : JSON.parse(res.bytes.toString()) };
}

test('a stored file whose bytes changed after publish is 500 bundle_integrity_mismatch', async () => {
  await publish('@dmg/bytes', 'Answer the question, carefully.');
  assert.equal((await bundle('@dmg/bytes')).status, 200);

  await publish('@dmg/flipped', 'Answer the question, precisely.');
  // the same length, other bytes: only a content check notices
  const { rows } = await pool.query(
    `SELECT b.digest FROM package_version_files f JOIN package_blobs b ON b.org_id = f.org_id AND b.digest = f.digest
      WHERE f.org_id = $1 AND f.package_id = '@dmg/flipped' AND f.path = 'prompt.md'`,
    [w.org.orgId],
  );
  await pool.query(`UPDATE package_blobs SET data = convert_to('Answer the question, PRECISELY.', 'UTF8') WHERE org_id = $1 AND digest = $2`, [w.org.orgId, rows[0].digest]);
  const res = await bundle('@dmg/flipped');
  assert.equal(res.status, 500);
  assert.equal(res.body.code, 'bundle_integrity_mismatch');
  assert.match(res.body.detail, /@dmg\/flipped@1\.0\.0/);
});

test('a stored manifest that no longer names its package is 500 invalid_stored_manifest', async () => {
  await publish('@dmg/manifest', 'Answer.');
  await pool.query(
    `UPDATE package_versions SET manifest = jsonb_set(manifest, '{name}', '"@dmg/someone-else"') WHERE org_id = $1 AND package_id = '@dmg/manifest'`,
    [w.org.orgId],
  );
  const res = await bundle('@dmg/manifest');
  assert.equal(res.status, 500);
  assert.equal(res.body.code, 'invalid_stored_manifest');

  await pool.query(`UPDATE package_versions SET manifest = '[]'::jsonb WHERE org_id = $1 AND package_id = '@dmg/manifest'`, [w.org.orgId]);
  const res2 = await bundle('@dmg/manifest');
  assert.equal(res2.status, 500);
  assert.equal(res2.body.code, 'invalid_stored_manifest');
});

test('a stored file whose content is gone is 422 version_artifact_unavailable', async () => {
  await publish('@dmg/gone', 'Answer the question, then stop.');
  const read = () => w.api.get('/api/packages/@dmg/gone/files/content?path=prompt.md&version=1.0.0');
  assert.equal((await read()).status, 200);
  await pool.query(
    `DELETE FROM package_blobs b USING package_version_files f
      WHERE f.org_id = $1 AND f.package_id = '@dmg/gone' AND f.path = 'prompt.md' AND b.org_id = f.org_id AND b.digest = f.digest`,
    [w.org.orgId],
  );
  const res = await read();
  assert.equal(res.status, 422, res.text);
  assert.equal(res.body.code, 'version_artifact_unavailable');
  const exported = await bundle('@dmg/gone');
  assert.equal(exported.status, 422);
  assert.equal(exported.body.code, 'version_artifact_unavailable');
});

test('exporting a package that is not an agent is 400 not_an_agent; an agent whose dependency is missing is dependency_unresolved', async () => {
  const skill = await importArchive(w, zip(skillFiles('@dmg/notes', '1.0.0')));
  assert.equal(skill.status, 201, skill.text);
  const notAgent = await bundle('@dmg/notes');
  assert.equal(notAgent.status, 400);
  assert.equal(notAgent.body.code, 'not_an_agent');

  const agent = await importArchive(w, zip(agentFiles('@dmg/needy', '1.0.0', { dependencies: { integrations: { '@dmg/absent': '^1.0.0' } } })));
  assert.equal(agent.status, 201, agent.text);
  const unresolved = await bundle('@dmg/needy');
  assert.equal(unresolved.body?.code, 'dependency_unresolved', JSON.stringify(unresolved));
  assert.equal(unresolved.body.errors[0].field, 'dependencies.integrations.@dmg/absent');
});
