import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { aKey, aMember, aSession, aSpace } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { aPackageWorld, agentFiles, importArchive, integrationFiles, manifest, skillFiles, zip } from './packages-harness.ts';

const w = await aPackageWorld();
after(() => w.app.close());
const pool = w.app.deps.database.pool;
const keyWith = async (scopes: string[] | undefined, spaceId = w.org.spaceId) => (await aKey(pool, { orgId: w.org.orgId, spaceId, userId: w.org.ownerId, scopes })).key;
const mcpFiles = (name: string) => ({ 'manifest.json': manifest(name, '1.0.0', 'mcp-server', { server: { command: ['node', 'index.js'] } }), 'index.js': '' });

await importArchive(w, zip(agentFiles('@acme/agent', '1.0.0')));
await importArchive(w, zip(skillFiles('@acme/skill', '1.0.0')));
await importArchive(w, zip(integrationFiles('@acme/integration', '1.0.0')));
await importArchive(w, zip(mcpFiles('@acme/server')));

test('writing a package needs the write permission of its type', async () => {
  const skillsOnly = await keyWith(['skills:read', 'skills:write']);
  const agent = await importArchive(w, zip(agentFiles('@acme/agent-2', '1.0.0')), { key: skillsOnly });
  assert.equal(agent.status, 403);
  assert.equal(agent.body.code, 'forbidden');
  assert.equal((await importArchive(w, zip(skillFiles('@acme/skill-2', '1.0.0')), { key: skillsOnly })).status, 201);

  const integrationsOnly = await keyWith(['integrations:read', 'integrations:write']);
  assert.equal((await importArchive(w, zip(integrationFiles('@acme/integration-2', '1.0.0')), { key: integrationsOnly })).status, 201);
  assert.equal((await importArchive(w, zip(mcpFiles('@acme/server-2')), { key: integrationsOnly })).status, 403);
  const mcpOnly = await keyWith(['mcp-servers:read', 'mcp-servers:write']);
  assert.equal((await importArchive(w, zip(mcpFiles('@acme/server-2')), { key: mcpOnly })).status, 201);
});

test('a package of a type the caller cannot read answers 404, not 403; the list leaves it out', async () => {
  const agentsReader = client(w.app.url, { key: await keyWith(['agents:read']) });
  const skill = await agentsReader.get('/api/packages/@acme/skill');
  assert.equal(skill.status, 404);
  assert.equal(skill.body.code, 'package_not_found');
  for (const path of ['/api/packages/@acme/skill/files', '/api/packages/@acme/skill/draft', '/api/packages/@acme/skill/1.0.0/download']) {
    assert.equal((await agentsReader.get(path)).status, 404, path);
  }
  // holding no delete (nor skills:write) permission at all is refused before any lookup: the same
  // 403 for a package that exists and one that does not, so it tells nothing about the package
  for (const id of ['@acme/skill', '@acme/no-such-package']) {
    const del = await agentsReader.delete(`/api/packages/${id}`);
    assert.equal(del.status, 403, del.text);
    assert.equal(del.body.code, 'forbidden');
    assert.equal((await agentsReader.post(`/api/packages/skills/${id}/versions/1.0.0/restore`)).status, 403);
  }

  assert.equal((await agentsReader.get('/api/packages/@acme/agent')).status, 200);
  const list = await agentsReader.get('/api/packages');
  assert.deepEqual(list.body.data.map((p: any) => p.packageId), ['@acme/agent']);
  const filtered = await w.api.get('/api/packages?type=skill');
  assert.deepEqual(filtered.body.data.map((p: any) => p.packageId), ['@acme/skill', '@acme/skill-2']);
});

test('a readable package without the write or delete permission is 403', async () => {
  const reader = client(w.app.url, { key: await keyWith(['agents:read', 'skills:read']) });
  const del = await reader.delete('/api/packages/@acme/agent');
  assert.equal(del.status, 403);
  const edit = await reader.put('/api/packages/@acme/agent/draft/files', { path: 'notes.md', content: 'x' });
  assert.equal(edit.status, 403);
  const publish = await reader.post('/api/packages/@acme/agent/publish', {});
  assert.equal(publish.status, 403);
  const restore = await reader.post('/api/packages/skills/@acme/skill/versions/1.0.0/restore');
  assert.equal(restore.status, 403);
  const writer = client(w.app.url, { key: await keyWith(['agents:read', 'agents:write']) });
  assert.equal((await writer.delete('/api/packages/@acme/agent')).status, 403, 'deleting needs agents:delete');
});

test('a package living in another space, not placed here, answers 404', async () => {
  const other = await aSpace(pool, w.org.orgId, { name: 'Elsewhere' });
  const elsewhereKey = await keyWith(undefined, other);
  assert.equal((await importArchive(w, zip(agentFiles('@acme/far', '1.0.0')), { key: elsewhereKey })).status, 201);
  const here = await w.api.get('/api/packages/@acme/far');
  assert.equal(here.status, 404, 'a key pinned to the default space holds nothing in the package home');
  // a session holding agents:read in the home reads it from any space it acts in
  const member = await aMember(pool, w.org.orgId, 'member', { spaceId: w.org.spaceId, roleKey: 'editor' });
  await pool.query('INSERT INTO space_members (space_id, user_id, org_id, role_key) VALUES ($1, $2, $3, $4)', [other, member, w.org.orgId, 'viewer']);
  const session = client(w.app.url, { cookie: (await aSession(pool, member)).cookie, org: w.org.orgId, space: w.org.spaceId });
  assert.equal((await session.get('/api/packages/@acme/far')).status, 200);
  // but its draft is written only with agents:write in the home, where this member only views
  const edit = await session.put('/api/packages/@acme/far/draft/files', { path: 'notes.md', content: 'x' });
  assert.equal(edit.status, 403);
  // an import of a new version by the default-space key cannot take the id: it cannot read it
  const taken = await importArchive(w, zip(agentFiles('@acme/far', '2.0.0')));
  assert.equal(taken.status, 409);
  assert.equal(taken.body.code, 'name_collision');
});

test('a member with no role in the space gets 403 not_a_space_member before any package rule', async () => {
  const outsider = await aMember(pool, w.org.orgId, 'member');
  const api = client(w.app.url, { cookie: (await aSession(pool, outsider)).cookie, org: w.org.orgId, space: w.org.spaceId });
  const res = await api.get('/api/packages');
  assert.equal(res.status, 403);
  assert.equal(res.body.code, 'not_a_space_member');
});
