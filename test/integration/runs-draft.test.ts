// Runnable drafts: POST /api/agents/{scope}/{name}/run with source: draft runs the agent's draft
// as it is at launch (needs agents:write in its home space), records the draft's content hash,
// and executes that snapshot even after a later edit.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createRunActivities } from '../../activities/run-activities.ts';
import { createProcessAdapter, type ProcessSandboxAdapter } from '../../activities/sandbox/process-adapter.ts';
import { treeIntegrityOf, putBlobs, blobOf } from '../../api/services/packages/store.ts';
import { runMaterialsFor } from '../../bin/sandbox.ts';
import { aKey, aMember } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { aRunWorld, type RunWorld } from '../support/runs.ts';

const ECHO = '/api/agents/@fixtures/agent-echo';
const DRAFT = '/api/packages/@fixtures/agent-echo/draft';
const input = { message: 'from the draft' };

let world: RunWorld;
let api: RunWorld['api'];

const expectProblem = (res: { status: number; body: any; text: string }, status: number, code: string) => {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.code, code, res.text);
};

/** The draft's current tree integrity, as a draft run records it. */
async function draftIntegrity(packageId: string): Promise<string> {
  const { rows } = await world.app.deps.database.pool.query('SELECT draft_integrity FROM packages WHERE org_id = $1 AND id = $2', [world.org.orgId, packageId]);
  return rows[0].draft_integrity;
}

before(async () => {
  world = await aRunWorld();
  ({ api } = world);
});
after(() => world.close());

describe('the source selector', () => {
  test('anything but draft or published is 400 invalid_source', async () => {
    for (const source of ['staging', 'Draft', '']) expectProblem(await api.post(`${ECHO}/run`, { input, source }), 400, 'invalid_source');
    expectProblem(await api.post(`${ECHO}/run`, { input, source: 'nightly', version: '1.0.0' }), 400, 'invalid_source');
  });

  test('source: draft with an exact version is draft_with_version; with a dist-tag or range, draft_with_spec', async () => {
    expectProblem(await api.post(`${ECHO}/run`, { input, source: 'draft', version: '1.0.0' }), 400, 'draft_with_version');
    expectProblem(await api.post(`${ECHO}/run`, { input, source: 'draft', version: 'latest' }), 400, 'draft_with_spec');
    expectProblem(await api.post(`${ECHO}/run`, { input, source: 'draft', version: '^1.0.0' }), 400, 'draft_with_spec');
    const published = await api.post(`${ECHO}/run`, { input, source: 'published', version: '1.0.0' });
    assert.equal(published.status, 201, published.text);
    assert.equal(published.body.source, 'published');
    assert.equal(published.body.draft_integrity, null);
  });

  test('a member without agents:write in the home space gets 403 draft_not_writable; the published version still runs', async () => {
    const runnerId = await aMember(world.app.deps.database.pool, world.org.orgId, 'member', { spaceId: world.org.spaceId, roleKey: 'runner' });
    const { key } = await aKey(world.app.deps.database.pool, { orgId: world.org.orgId, spaceId: world.org.spaceId, userId: runnerId });
    const runner = client(world.app.url, { key });
    expectProblem(await runner.post(`${ECHO}/run`, { input, source: 'draft' }), 403, 'draft_not_writable');
    const published = await runner.post(`${ECHO}/run`, { input });
    assert.equal(published.status, 201, published.text);
    assert.equal(published.body.source, 'published');
  });

  test('an agent never published: 404 no_published_version without source: draft; its draft runs', async () => {
    const pool = world.app.deps.database.pool;
    const id = '@fixtures/unpublished';
    const files = new Map([
      ['manifest.json', Buffer.from(JSON.stringify({ name: id, version: '0.1.0', type: 'agent', schema_version: '0.3', runtime_tools: ['output'] }))],
      ['prompt.md', Buffer.from('Say hello.')],
    ]);
    const blobs = [...files.values()].map(blobOf);
    const entries = [...files].map(([path, bytes], i) => ({ path, digest: blobs[i].digest, size: bytes.length }));
    // as a package created before its first publish leaves it: a detached draft and no version
    await putBlobs(pool, world.org.orgId, blobs);
    await pool.query(
      `INSERT INTO packages (org_id, id, type, home_space_id, draft_detached, draft_integrity) VALUES ($1, $2, 'agent', $3, true, $4)`,
      [world.org.orgId, id, world.org.spaceId, treeIntegrityOf(entries)],
    );
    for (const e of entries) {
      await pool.query('INSERT INTO package_draft_files (org_id, package_id, path, digest, size) VALUES ($1, $2, $3, $4, $5)', [world.org.orgId, id, e.path, e.digest, e.size]);
    }
    expectProblem(await api.post(`/api/agents/${id}/run`, {}), 404, 'no_published_version');
    expectProblem(await api.post(`/api/agents/${id}/run`, { source: 'published' }), 404, 'no_published_version');
    const run = await api.post(`/api/agents/${id}/run`, { source: 'draft' });
    assert.equal(run.status, 201, run.text);
    assert.equal(run.body.source, 'draft');
    assert.equal(run.body.agent_version, '0.1.0');
    assert.equal(run.body.draft_integrity, treeIntegrityOf(entries));
  });

  test('a draft whose manifest is invalid is 400 invalid_draft_manifest', async () => {
    const pool = world.app.deps.database.pool;
    const id = '@fixtures/broken-draft';
    const blob = blobOf(Buffer.from('{ not json'));
    await putBlobs(pool, world.org.orgId, [blob]);
    const entries = [{ path: 'manifest.json', digest: blob.digest, size: blob.bytes.length }];
    await pool.query(
      `INSERT INTO packages (org_id, id, type, home_space_id, draft_detached, draft_integrity) VALUES ($1, $2, 'agent', $3, true, $4)`,
      [world.org.orgId, id, world.org.spaceId, treeIntegrityOf(entries)],
    );
    await pool.query('INSERT INTO package_draft_files (org_id, package_id, path, digest, size) VALUES ($1, $2, $3, $4, $5)', [world.org.orgId, id, entries[0].path, entries[0].digest, entries[0].size]);
    expectProblem(await api.post(`/api/agents/${id}/run`, { source: 'draft' }), 400, 'invalid_draft_manifest');
  });
});

describe('a draft run', () => {
  let adapter: ProcessSandboxAdapter;
  let workDir: string;
  before(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'draft-run-'));
    adapter = await createProcessAdapter({ warmPool: 0, workDir });
  });
  after(async () => {
    await adapter?.close();
    await rm(workDir, { recursive: true, force: true });
  });

  test('records the draft and its hash, and executes the draft as launched, not a later edit', async () => {
    const edited = await api.put(`${DRAFT}/files`, {
      path: 'prompt.md',
      content: 'DRAFT-AT-LAUNCH. Read the `message` field of your input and call the `output` tool with { "echo": <message> }.',
    });
    assert.equal(edited.status, 200, edited.text);
    // the draft manifest at launch asks for another output than the published version's
    const original = edited.body.manifest;
    const launchedManifest = { ...original, output: { schema: { type: 'object', properties: { said: { type: 'string' } }, required: ['said'], additionalProperties: false } } };
    const saved = await api.put(DRAFT, { manifest: launchedManifest }, { headers: { 'if-match': edited.headers.get('etag')! } });
    assert.equal(saved.status, 200, saved.text);
    const atLaunch = await draftIntegrity('@fixtures/agent-echo');

    const launched = await api.post(`${ECHO}/run`, { input, source: 'draft' });
    assert.equal(launched.status, 201, launched.text);
    assert.equal(launched.body.source, 'draft');
    assert.equal(launched.body.draft_integrity, atLaunch);
    const runId = launched.body.id;

    // an edit after the launch: the run keeps the draft it was launched with
    const later = await api.put(`${DRAFT}/files`, { path: 'prompt.md', content: 'DRAFT-EDITED-LATER. Do nothing.' });
    assert.equal(later.status, 200, later.text);
    const restored = await api.put(DRAFT, { manifest: original }, { headers: { 'if-match': later.headers.get('etag')! } });
    assert.equal(restored.status, 200, restored.text);
    assert.notEqual(await draftIntegrity('@fixtures/agent-echo'), atLaunch);

    const { app, fake } = world;
    const activities = createRunActivities({
      pool: app.deps.database.pool, db: app.deps.database.db, secrets: app.deps.secrets, log: app.deps.log,
      adapter, materials: runMaterialsFor(app.deps), eventsBaseUrl: app.url, bootSeconds: 60, heartbeatSeconds: 10,
      egressAllowInternalHosts: [new URL(fake.url).host], limits: { memoryMb: 512, cpus: 1 },
    });
    const sandbox = await activities.boot(runId);
    try {
      let run = (await api.get(`/api/runs/${runId}?wait=true`)).body;
      while (run.status === 'pending' || run.status === 'running') run = (await api.get(`/api/runs/${runId}?wait=true`)).body;
      assert.equal(run.status, 'success', JSON.stringify(run.error));
      assert.deepEqual(Object.keys(run.result.output), ['said'], 'the output follows the manifest of the draft as launched');
      assert.equal(run.source, 'draft');
      assert.equal(run.draft_integrity, atLaunch);
    } finally {
      await activities.teardown(runId, sandbox.sandboxId);
    }
    const sent = JSON.stringify(fake.requests.map((r) => r.body));
    assert.ok(sent.includes('DRAFT-AT-LAUNCH'), 'the model saw the prompt of the draft as launched');
    assert.ok(!sent.includes('DRAFT-EDITED-LATER'), 'never the later edit');

    const listed = await api.get(`${ECHO}/runs`);
    assert.equal(listed.body.data.find((r: any) => r.id === runId).draft_integrity, atLaunch);
  });
});
