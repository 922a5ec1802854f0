import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { aPackageWorld, agentFiles, importArchive, skillFiles, zip } from './packages-harness.ts';

const w = await aPackageWorld();
after(() => w.app.close());
const pool = w.app.deps.database.pool;

await importArchive(w, zip(skillFiles('@acme/base', '1.0.0')));
await importArchive(w, zip(agentFiles('@acme/user', '1.0.0', { dependencies: { skills: { '@acme/base': '^1.0.0' } } })));

async function aRun(agentId: string, status: string): Promise<string> {
  const id = `run_test${Math.random().toString(36).slice(2, 10)}`;
  await pool.query(
    `INSERT INTO runs (id, org_id, space_id, agent_id, agent_version, status, trigger_kind, timeout_seconds, event_secret, sink_expires_at)
     VALUES ($1, $2, $3, $4, '1.0.0', $5, 'api_key', 60, 'secret', now() + interval '1 hour')`,
    [id, w.org.orgId, w.org.spaceId, agentId, status],
  );
  return id;
}

test('a package another package depends on is 409 in_use', async () => {
  const res = await w.api.delete('/api/packages/@acme/base');
  assert.equal(res.status, 409);
  assert.equal(res.body.code, 'in_use');
  assert.match(res.body.detail, /@acme\/user/);
});

test('an agent with runs pending or running is 409 agent_in_use; once they end it is deleted', async () => {
  const run = await aRun('@acme/user', 'running');
  const busy = await w.api.delete('/api/packages/@acme/user');
  assert.equal(busy.status, 409);
  assert.equal(busy.body.code, 'agent_in_use');
  await pool.query(`UPDATE runs SET status = 'success' WHERE id = $1`, [run]);
  assert.equal((await w.api.delete('/api/packages/@acme/user')).status, 204);
  const gone = await w.api.get('/api/packages/@acme/user');
  assert.equal(gone.status, 404);
  assert.equal((await w.api.get('/api/packages')).body.data.some((p: any) => p.packageId === '@acme/user'), false);
  // nothing depends on the skill any more
  assert.equal((await w.api.delete('/api/packages/@acme/base')).status, 204);
});

test('a deleted id may be imported again, starting afresh', async () => {
  const again = await importArchive(w, zip(agentFiles('@acme/user', '0.1.0')));
  assert.equal(again.status, 201, again.text);
  const record = await w.api.get('/api/packages/@acme/user');
  assert.deepEqual(record.body.versions.map((v: any) => v.version), ['0.1.0']);
});
