// Inline and remote runs that declare integrations resolve their connections as an agent run does:
// 409 missing_integration_connection with its errors[] when one is missing, the caller's own
// connections (an end-user's own under Service-User), recorded on the run. An inline run's sandbox
// gets them like an agent run's; a remote run's runner learns them from its sink and reads each
// credential through the run's signed connection route. An agent's pins are not an inline
// manifest's, whatever name it takes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runConnectionSigningPayload } from '../../lib/run-connection-signing.ts';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import { aKey, aMember } from '../support/builders.ts';
import { call, client } from '../support/http.ts';
import { anAgent, anIntegration, anIntegrationWorld, apiKeyAuth, type IntegrationWorld } from './integrations-harness.ts';

const UPSTREAM = 'http://127.0.0.1:9';
let world: IntegrationWorld;
let api: IntegrationWorld['api'];
const fields = (id: string) => `/api/integrations/${id}/auths/key/connect/fields`;

/** An inline run body whose manifest selects api_call of each integration given. */
const inline = (integrations: string[], name = '@inline/with-crm') => ({
  manifest: {
    name, version: '0.1.0', type: 'agent', schema_version: '0.3',
    dependencies: { integrations: Object.fromEntries(integrations.map((id) => [id, '*'])) },
    integrations_configuration: Object.fromEntries(integrations.map((id) => [id, { tools: ['api_call'] }])),
  },
  prompt: 'Use the integration.',
});

async function boundConnections(runId: string): Promise<Array<{ integration_package_id: string; connection_id: string | null }>> {
  const { rows } = await world.app.deps.database.pool.query(
    'SELECT integration_package_id, connection_id::text AS connection_id FROM run_connections WHERE run_id = $1 ORDER BY 1', [runId],
  );
  return rows;
}

function expectMissing(res: { status: number; body: any; text: string }, packageId: string): void {
  assert.equal(res.status, 409, res.text);
  assert.equal(res.body.code, 'missing_integration_connection');
  assert.equal(res.body.errors.length, 1);
  const entry = res.body.errors[0];
  assert.equal(entry.packageId, packageId);
  assert.equal(entry.code, 'missing_integration_connection');
  assert.equal(entry.required_auth_key, 'key');
  assert.deepEqual(entry.available_auth_keys, ['key']);
  assert.match(entry.connect_url, /\/api\/integrations\/connect\/start\?token=/);
}

before(async () => {
  world = await anIntegrationWorld(['127.0.0.1:9']);
  api = world.api;
  await anIntegration(world, '@acme/crm', apiKeyAuth(UPSTREAM));
  await anIntegration(world, '@acme/mail', apiKeyAuth(UPSTREAM));
  await anIntegration(world, '@acme/desktop', { source: { kind: 'local', command: ['desktop-mcp'] }, default_tools: ['open'] });
  await anAgent(world, '@acme/remote-crm', { '@acme/crm': ['api_call'] });
});
after(() => world.close());

describe('inline runs', () => {
  test('without a connection, validate and launch answer 409 missing_integration_connection with the errors[] of an agent launch', async () => {
    expectMissing(await api.post('/api/runs/inline/validate', inline(['@acme/mail'])), '@acme/mail');
    expectMissing(await api.post('/api/runs/inline', inline(['@acme/mail'])), '@acme/mail');
  });

  test("with the caller's connection, the run records it and its boot hands it, decrypted, to the sidecar only", async () => {
    const crm = await api.post(fields('@acme/crm'), { credentials: { api_key: 'sk-inline-crm' } });
    assert.equal(crm.status, 201, crm.text);
    const checked = await api.post('/api/runs/inline/validate', inline(['@acme/crm']));
    assert.equal(checked.status, 200, checked.text);
    const run = await api.post('/api/runs/inline', inline(['@acme/crm']));
    assert.equal(run.status, 201, run.text);
    assert.deepEqual(await boundConnections(run.body.id), [{ integration_package_id: '@acme/crm', connection_id: crm.body.id }]);

    const spec = await world.bootAssignment(run.body.id);
    const assigned = spec.sidecar.integrations!.find((i) => i.packageId === '@acme/crm')!;
    assert.equal(assigned.connectionId, crm.body.id);
    assert.deepEqual(assigned.tools, ['api_call']);
    assert.deepEqual(assigned.credentials, { api_key: 'sk-inline-crm' });
    assert.ok(!spec.workspace.some((f) => 'content' in f && f.content.includes('sk-inline-crm')), 'no credential in the agent workspace');
  });

  test("under Service-User an end-user's run uses the end-user's own connection, never the member's", async () => {
    const eu = await api.post('/api/end-users', { externalId: 'inline-customer', name: 'Customer' });
    assert.equal(eu.status, 201, eu.text);
    const asEndUser = client(world.app.url, { key: world.key, headers: { 'service-user': eu.body.id } });
    expectMissing(await asEndUser.post('/api/runs/inline', inline(['@acme/crm'])), '@acme/crm');
    const own = await asEndUser.post(fields('@acme/crm'), { credentials: { api_key: 'sk-end-user-crm' } });
    assert.equal(own.status, 201, own.text);
    const run = await asEndUser.post('/api/runs/inline', inline(['@acme/crm']));
    assert.equal(run.status, 201, run.text);
    assert.equal(run.body.triggered_by.kind, 'end_user');
    assert.deepEqual(await boundConnections(run.body.id), [{ integration_package_id: '@acme/crm', connection_id: own.body.id }]);
  });

  test("an agent's pinned connection is not an inline manifest's that takes the agent's name", async () => {
    const pool = world.app.deps.database.pool;
    const agent = await anAgent(world, '@acme/pinned-mail', { '@acme/mail': ['api_call'] });
    const owners = await api.post(fields('@acme/mail'), { credentials: { api_key: 'sk-owner-mail' } });
    assert.equal((await api.put(`/api/connections/${owners.body.id}/pins`, { agents: [agent] })).status, 200);
    const memberId = await aMember(pool, world.org.orgId, 'member', { spaceId: world.org.spaceId, roleKey: 'editor' });
    const member = client(world.app.url, { key: (await aKey(pool, { ...world.org, userId: memberId })).key });
    // the stored agent runs with its pin for the member ...
    const stored = await member.post(`/api/agents/${agent}/run`, { input: {} });
    assert.equal(stored.status, 201, stored.text);
    assert.deepEqual(await boundConnections(stored.body.id), [{ integration_package_id: '@acme/mail', connection_id: owners.body.id }]);
    // ... a manifest of the member's own making under that name does not
    expectMissing(await member.post('/api/runs/inline', inline(['@acme/mail'], agent)), '@acme/mail');
  });

  test('a local integration is refused on the process backend as for an agent run', async () => {
    const body = inline([]);
    body.manifest.dependencies = { integrations: { '@acme/desktop': '*' } };
    body.manifest.integrations_configuration = { '@acme/desktop': { tools: ['open'] } };
    const res = await api.post('/api/runs/inline', body);
    assert.equal(res.status, 409, res.text);
    assert.equal(res.body.code, 'local_integration_unavailable');
    assert.match(res.body.detail, /@acme\/desktop/);
  });
});

describe('remote runs', () => {
  const runner = (url: string, connectionId: string, integration: string, secret: string) =>
    call(world.app.url, 'GET', `${new URL(url).pathname}/${connectionId}?integration=${encodeURIComponent(integration)}`, {
      headers: signedRunEventHeaders(secret, runConnectionSigningPayload('read', connectionId, integration)),
    });

  test('without a connection the creation is 409 missing_integration_connection, and no run exists', async () => {
    const memberId = await aMember(world.app.deps.database.pool, world.org.orgId, 'member', { spaceId: world.org.spaceId, roleKey: 'editor' });
    const member = client(world.app.url, { key: (await aKey(world.app.deps.database.pool, { ...world.org, userId: memberId })).key });
    const before = (await world.app.deps.database.pool.query("SELECT count(*)::int AS n FROM runs WHERE kind = 'remote'")).rows[0].n;
    expectMissing(await member.post('/api/runs/remote', { packageId: '@acme/remote-crm', input: {} }), '@acme/crm');
    assert.equal((await world.app.deps.database.pool.query("SELECT count(*)::int AS n FROM runs WHERE kind = 'remote'")).rows[0].n, before);
  });

  test("the sink names the run's connections and the runner reads each credential through the signed connection route", async () => {
    const crm = (await api.get('/api/connections?integration_package_id=@acme/crm')).body.data.find((c: any) => c.owned_by_actor);
    const created = await api.post('/api/runs/remote', { packageId: '@acme/remote-crm', input: {} });
    assert.equal(created.status, 201, created.text);
    const { sink } = created.body;
    assert.match(sink.connections_url, new RegExp(`/internal/runs/${created.body.id}/connections$`));
    assert.deepEqual(sink.connections, [{ integration_package_id: '@acme/crm', integration_version: '1.0.0', auth_key: 'key', connection_id: crm.id }]);
    assert.deepEqual(await boundConnections(created.body.id), [{ integration_package_id: '@acme/crm', connection_id: crm.id }]);

    const read = await runner(sink.connections_url, crm.id, '@acme/crm', sink.secret);
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.connection_id, crm.id);
    assert.deepEqual(read.body.credentials, { api_key: 'sk-inline-crm' });
    const forged = await runner(sink.connections_url, crm.id, '@acme/crm', `whsec_${Buffer.alloc(32, 7).toString('base64')}`);
    assert.equal(forged.status, 401);
  });

  test("an end-user's remote run binds the end-user's own connection", async () => {
    const eu = await api.post('/api/end-users', { externalId: 'remote-customer', name: 'Remote customer' });
    const asEndUser = client(world.app.url, { key: world.key, headers: { 'service-user': eu.body.id } });
    expectMissing(await asEndUser.post('/api/runs/remote', { packageId: '@acme/remote-crm', input: {} }), '@acme/crm');
    const own = await asEndUser.post(fields('@acme/crm'), { credentials: { api_key: 'sk-remote-end-user' } });
    const created = await asEndUser.post('/api/runs/remote', { packageId: '@acme/remote-crm', input: {} });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.sink.connections[0].connection_id, own.body.id);
    const read = await runner(created.body.sink.connections_url, own.body.id, '@acme/crm', created.body.sink.secret);
    assert.deepEqual(read.body.credentials, { api_key: 'sk-remote-end-user' });
  });
});
