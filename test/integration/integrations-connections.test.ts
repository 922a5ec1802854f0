// Integrations in a space and the caller's connections: connect by fields, the record on the
// wire (never a secret; sealed at rest), rename and delete, governance (personal connections
// disabled, org defaults, pins, sharing), run readiness and the launch's errors[], and the
// sidecar assignment a launched run's boot builds from the connections it recorded.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseAssignment } from '../../sidecar/assignment.ts';
import { aKey, aMember, aSession, aSpace } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { anAgent, anIntegration, anIntegrationWorld, apiKeyAuth, type IntegrationWorld } from './integrations-harness.ts';

const UPSTREAM = 'http://127.0.0.1:9';
let world: IntegrationWorld;
let api: IntegrationWorld['api'];
const fields = (id: string, auth = 'key') => `/api/integrations/${id}/auths/${auth}/connect/fields`;

before(async () => {
  world = await anIntegrationWorld(['127.0.0.1:9']);
  api = world.api;
  await anIntegration(world, '@acme/crm', apiKeyAuth(UPSTREAM));
  await anIntegration(world, '@acme/mail', { ...apiKeyAuth(UPSTREAM), default_tools: ['api_call'] });
  await anIntegration(world, '@acme/vault', {
    source: { kind: 'none' },
    auths: { cert: { type: 'mtls', authorized_uris: [`${UPSTREAM}/*`] } },
  });
});
after(() => world.close());

describe('connections', () => {
  let connectionId: string;

  test('connect/fields stores a connection: the record of the spec, never the secret, sealed at rest', async () => {
    const res = await api.post(fields('@acme/crm'), { credentials: { api_key: 'sk-crm-very-secret' } });
    assert.equal(res.status, 201, res.text);
    connectionId = res.body.id;
    assert.match(connectionId, /^[0-9a-f-]{36}$/);
    assert.equal(res.headers.get('location'), `/api/connections/${connectionId}`);
    assert.deepEqual(
      { integration_package_id: res.body.integration_package_id, auth_key: res.body.auth_key, account_id: res.body.account_id, label: res.body.label, needs_reconnection: res.body.needs_reconnection, owned_by_actor: res.body.owned_by_actor },
      { integration_package_id: '@acme/crm', auth_key: 'key', account_id: 'default', label: 'Connection', needs_reconnection: false, owned_by_actor: true },
    );
    assert.ok(res.body.createdAt && res.body.updatedAt);
    assert.ok(!res.text.includes('sk-crm-very-secret'));
    for (const path of [`/api/connections/${connectionId}`, '/api/connections', '/api/integrations']) {
      const read = await api.get(path);
      assert.equal(read.status, 200, read.text);
      assert.ok(!read.text.includes('sk-crm-very-secret'), `${path} shows the secret`);
    }
    const { rows } = await world.app.deps.database.pool.query('SELECT credentials FROM integration_connections WHERE id = $1', [connectionId]);
    assert.ok(!rows[0].credentials.includes('sk-crm-very-secret'), 'the raw column holds no plaintext');
    assert.ok(!Buffer.from(rows[0].credentials).toString('base64').includes(Buffer.from('sk-crm-very-secret').toString('base64')));
    assert.deepEqual(JSON.parse(world.app.deps.secrets.open(rows[0].credentials)), { api_key: 'sk-crm-very-secret' });
  });

  test('GET /api/integrations lists the space\'s integrations with auths, tools and the caller\'s connections per auth', async () => {
    const res = await api.get('/api/integrations');
    assert.equal(res.status, 200);
    assert.equal(res.body.limit, 100);
    const crm = res.body.data.find((i: any) => i.packageId === '@acme/crm');
    assert.deepEqual(crm.tools, ['api_call']);
    assert.equal(crm.auths[0].key, 'key');
    assert.equal(crm.auths[0].type, 'api_key');
    assert.deepEqual(crm.auths[0].credentials_schema.required, ['api_key']);
    assert.deepEqual(crm.auths[0].connections.map((c: any) => c.id), [connectionId]);
    const page = await api.get('/api/integrations?limit=1');
    assert.equal(page.body.data.length, 1);
    assert.equal(page.body.hasMore, true);
    assert.match(page.headers.get('link') ?? '', /rel="next"/);
  });

  test('credentials failing credentials.schema are 400 validation_failed; an mTLS auth is refused 503 connect_unavailable', async () => {
    const bad = await api.post(fields('@acme/crm'), { credentials: { api_key: 'x' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'validation_failed');
    assert.equal(bad.body.errors[0].field, 'credentials.api_key');
    const mtls = await api.post(fields('@acme/vault', 'cert'), { credentials: {} });
    assert.equal(mtls.status, 503);
    assert.equal(mtls.body.code, 'connect_unavailable');
    assert.match(mtls.body.detail, /mTLS/);
  });

  test('rename: a label already used for the integration is 409 connection_label_taken; delete needs integrations:disconnect', async () => {
    const second = await api.post(fields('@acme/crm'), { credentials: { api_key: 'sk-second-one' } });
    assert.equal(second.status, 201);
    assert.equal(second.body.label, 'Connection 2', 'a generic label, made unique');
    const renamed = await api.patch(`/api/connections/${second.body.id}`, { label: 'Sales' });
    assert.equal(renamed.status, 200);
    assert.equal(renamed.body.label, 'Sales');
    const taken = await api.patch(`/api/connections/${second.body.id}`, { label: 'Connection' });
    assert.equal(taken.status, 409);
    assert.equal(taken.body.code, 'connection_label_taken');

    const pool = world.app.deps.database.pool;
    const { key: readOnly } = await aKey(pool, { ...world.org, userId: world.org.ownerId, scopes: ['integrations:read', 'integrations:connect'] });
    const refused = await client(world.app.url, { key: readOnly }).delete(`/api/connections/${second.body.id}`);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'forbidden');
    assert.equal((await api.delete(`/api/connections/${second.body.id}`)).status, 204);
    assert.equal((await api.get(`/api/connections/${second.body.id}`)).status, 404);
  });
});

describe('readiness and launch', () => {
  test('readiness reports per integration; the launch answers 409 missing_integration_connection with one errors[] entry per unready integration', async () => {
    const agent = await anAgent(world, '@acme/assistant', { '@acme/crm': ['api_call'], '@acme/mail': ['api_call'] });
    const readiness = await api.get(`/api/agents/${agent}/connection-readiness`);
    assert.equal(readiness.status, 200, readiness.text);
    assert.equal(readiness.body.ready, false);
    const byId = Object.fromEntries(readiness.body.integrations.map((i: any) => [i.packageId, i]));
    assert.equal(byId['@acme/crm'].ready, true);
    assert.equal(byId['@acme/mail'].ready, false);

    const launch = await api.post(`/api/agents/${agent}/run`, { input: {} });
    assert.equal(launch.status, 409, launch.text);
    assert.equal(launch.body.code, 'missing_integration_connection');
    assert.equal(launch.body.errors.length, 1);
    const entry = launch.body.errors[0];
    assert.equal(entry.packageId, '@acme/mail');
    assert.equal(entry.code, 'missing_integration_connection');
    for (const member of ['candidate_connections', 'connection_id', 'missing_scopes', 'required_scopes', 'owned_by_actor', 'auth_key', 'required_auth_key', 'available_auth_keys', 'connect_url', 'expiresAt', 'packageId']) {
      assert.ok(member in entry, `errors[] entry lacks ${member}`);
    }
    assert.deepEqual(entry.candidate_connections, []);
    assert.equal(entry.connection_id, null);
    assert.equal(entry.required_auth_key, 'key');
    assert.deepEqual(entry.available_auth_keys, ['key']);
    assert.match(entry.connect_url, /\/api\/integrations\/connect\/start\?token=[A-Za-z0-9_-]{43}$/);
    assert.ok(Date.parse(entry.expiresAt) > Date.now() + 9 * 60_000);
  });

  test('a launched run records its connections, and its boot puts them, decrypted, in the sidecar assignment', async () => {
    const mail = await api.post(fields('@acme/mail'), { credentials: { api_key: 'sk-mail-secret' } });
    assert.equal(mail.status, 201);
    const launch = await api.post('/api/agents/@acme/assistant/run', { input: {} });
    assert.equal(launch.status, 201, launch.text);
    const runId = launch.body.id;
    const pool = world.app.deps.database.pool;
    const { rows } = await pool.query('SELECT integration_package_id, auth_key, connection_id FROM run_connections WHERE run_id = $1 ORDER BY 1', [runId]);
    assert.deepEqual(rows.map((r) => r.integration_package_id), ['@acme/crm', '@acme/mail']);
    assert.equal(rows[1].connection_id, mail.body.id);

    const spec = await world.bootAssignment(runId);
    const assigned = spec.sidecar.integrations!;
    const mailEntry = assigned.find((i) => i.packageId === '@acme/mail')!;
    assert.deepEqual(mailEntry, {
      packageId: '@acme/mail', toolPrefix: 'acme_mail', tools: ['api_call'], source: { kind: 'none' }, authKey: 'key', authType: 'api_key',
      connectionId: mail.body.id, authorizedUris: [`${UPSTREAM}/*`],
      delivery: { in: 'header', name: 'X-Api-Key', value: '{$credential.api_key}' },
      credentials: { api_key: 'sk-mail-secret' },
    });
    // the sidecar reads the same line back
    const line = JSON.stringify({ ...spec.sidecar, token: 'a'.repeat(43) });
    assert.deepEqual(parseAssignment(line).integrations, assigned);
    assert.ok(!spec.workspace.some((f) => 'content' in f && f.content.includes('sk-mail-secret')), 'no credential in the agent workspace');
  });

  test('a source.kind local integration refuses the launch on the process backend, naming it', async () => {
    await anIntegration(world, '@acme/desktop', { source: { kind: 'local', command: ['desktop-mcp'] }, default_tools: ['open'] });
    const agent = await anAgent(world, '@acme/desk-agent', { '@acme/desktop': ['open'] });
    const res = await api.post(`/api/agents/${agent}/run`, { input: {} });
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'local_integration_unavailable');
    assert.match(res.body.detail, /@acme\/desktop/);
  });
});

describe('governance', () => {
  test('personal connections disabled by an admin: a member is refused 403 connection_blocked_by_admin, the owner connects and shares', async () => {
    const pool = world.app.deps.database.pool;
    const memberId = await aMember(pool, world.org.orgId, 'member', { spaceId: world.org.spaceId, roleKey: 'editor' });
    const member = client(world.app.url, { key: (await aKey(pool, { ...world.org, userId: memberId })).key });
    await anIntegration(world, '@acme/erp', apiKeyAuth(UPSTREAM));
    const notAdmin = await member.put('/api/integrations/@acme/erp/settings', { personal_connections_disabled: true });
    assert.equal(notAdmin.status, 403);
    const set = await api.put('/api/integrations/@acme/erp/settings', { personal_connections_disabled: true });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.personal_connections_disabled, true);
    const blocked = await member.post(fields('@acme/erp'), { credentials: { api_key: 'sk-member' } });
    assert.equal(blocked.status, 403);
    assert.equal(blocked.body.code, 'connection_blocked_by_admin');
    const blockedLink = await member.post('/api/integrations/@acme/erp/auths/key/connect/session', {});
    assert.equal(blockedLink.body.code, 'connection_blocked_by_admin');

    const shared = await api.post(fields('@acme/erp'), { credentials: { api_key: 'sk-org-erp' } });
    assert.equal(shared.status, 201);
    const def = await api.put('/api/integrations/@acme/erp/settings', { default_connection_id: shared.body.id, enforce_default: true });
    assert.equal(def.body.default_connection_id, shared.body.id);
    // the member's runs use the organization's connection
    const agent = await anAgent(world, '@acme/erp-agent', { '@acme/erp': ['api_call'] });
    const readiness = await member.get(`/api/agents/${agent}/connection-readiness`);
    assert.equal(readiness.body.integrations[0].connection_id, shared.body.id);
    assert.equal(readiness.body.integrations[0].owned_by_actor, false);
    // a default cannot be deleted
    const del = await api.delete(`/api/connections/${shared.body.id}`);
    assert.equal(del.status, 409);
    assert.equal(del.body.code, 'connection_pinned');
  });

  test('pins: a connection pinned to an agent cannot be deleted (connection_pinned); pinning to a version lacking its auth is integration_auth_undeclared', async () => {
    await anIntegration(world, '@acme/docs', apiKeyAuth(UPSTREAM));
    const conn = await api.post(fields('@acme/docs'), { credentials: { api_key: 'sk-docs' } });
    const agent = await anAgent(world, '@acme/docs-agent', { '@acme/docs': ['api_call'] });
    const pinned = await api.put(`/api/connections/${conn.body.id}/pins`, { agents: [agent] });
    assert.equal(pinned.status, 200, pinned.text);
    assert.deepEqual(pinned.body.agents, [agent]);
    const del = await api.delete(`/api/connections/${conn.body.id}`);
    assert.equal(del.status, 409);
    assert.equal(del.body.code, 'connection_pinned');

    // version 2 of the integration replaces the auth "key" with "token"
    const v2 = apiKeyAuth(UPSTREAM) as { auths: Record<string, unknown> };
    await anIntegration(world, '@acme/docs', { ...v2, auths: { token: v2.auths.key } }, '2.0.0');
    const undeclared = await api.put(`/api/connections/${conn.body.id}/pins`, { agents: [agent] });
    assert.equal(undeclared.status, 409);
    assert.equal(undeclared.body.code, 'integration_auth_undeclared');
    assert.equal((await api.put(`/api/connections/${conn.body.id}/pins`, { agents: [] })).status, 200);
    assert.equal((await api.delete(`/api/connections/${conn.body.id}`)).status, 204);
  });

  test('sharing: an end-user\'s connection is not shareable; a member who lost space access cannot have theirs made the default', async () => {
    const eu = await api.post('/api/end-users', { externalId: 'customer-9', name: 'Customer' });
    assert.equal(eu.status, 201, eu.text);
    const asEndUser = client(world.app.url, { key: world.key, headers: { 'service-user': eu.body.id } });
    const own = await asEndUser.post(fields('@acme/crm'), { credentials: { api_key: 'sk-end-user' } });
    assert.equal(own.status, 201, own.text);
    assert.equal(own.body.owner_kind, 'end_user');
    const share = await asEndUser.patch(`/api/connections/${own.body.id}`, { shared_with_org: true });
    assert.equal(share.status, 409);
    assert.equal(share.body.code, 'end_user_connection_not_shareable');
    // the end-user sees only its own connections, the member not the end-user's
    assert.deepEqual((await asEndUser.get('/api/connections')).body.data.map((c: any) => c.id), [own.body.id]);
    assert.ok(!(await api.get('/api/connections')).body.data.some((c: any) => c.id === own.body.id));

    const pool = world.app.deps.database.pool;
    const memberId = await aMember(pool, world.org.orgId, 'member', { spaceId: world.org.spaceId, roleKey: 'editor' });
    const member = client(world.app.url, { key: (await aKey(pool, { ...world.org, userId: memberId })).key });
    const theirs = await member.post(fields('@acme/crm'), { credentials: { api_key: 'sk-leaving' } });
    assert.equal((await member.patch(`/api/connections/${theirs.body.id}`, { shared_with_org: true })).status, 200);
    await pool.query('DELETE FROM space_members WHERE user_id = $1', [memberId]);
    const def = await api.put('/api/integrations/@acme/crm/settings', { default_connection_id: theirs.body.id });
    assert.equal(def.status, 409);
    assert.equal(def.body.code, 'connection_owner_without_access');
  });
});

describe('install and uninstall', () => {
  test('placing an integration in another space needs integrations:install there, removing it integrations:uninstall', async () => {
    const pool = world.app.deps.database.pool;
    const s2 = await aSpace(pool, world.org.orgId, { name: 'Support' });
    await pool.query(`INSERT INTO space_roles (id, org_id, key, name, permissions) VALUES ('role_installer', $1, 'installer', 'Installer', '{integrations:read,integrations:install}')`, [world.org.orgId]);
    await pool.query(`INSERT INTO space_roles (id, org_id, key, name, permissions) VALUES ('role_remover', $1, 'remover', 'Remover', '{integrations:read,integrations:uninstall}')`, [world.org.orgId]);
    const installer = await aMember(pool, world.org.orgId, 'member', { spaceId: s2, roleKey: 'installer' });
    const remover = await aMember(pool, world.org.orgId, 'member', { spaceId: s2, roleKey: 'remover' });
    const owner = client(world.app.url, { cookie: (await aSession(pool, world.org.ownerId)).cookie, org: world.org.orgId });
    const placed = await owner.post(`/api/spaces/${s2}/packages`, { packageId: '@acme/crm' });
    assert.equal(placed.status, 201, placed.text);
    const inS2 = await owner.get('/api/integrations', { space: s2 });
    assert.ok(inS2.body.data.some((i: any) => i.packageId === '@acme/crm'), 'the placed integration is usable in the space');
    const asInstaller = client(world.app.url, { cookie: (await aSession(pool, installer)).cookie, org: world.org.orgId });
    const refused = await asInstaller.delete(`/api/spaces/${s2}/packages/@acme/crm`);
    assert.equal(refused.status, 403, refused.text);
    const asRemover = client(world.app.url, { cookie: (await aSession(pool, remover)).cookie, org: world.org.orgId });
    assert.equal((await asRemover.delete(`/api/spaces/${s2}/packages/@acme/crm`)).status, 204);
  });
});

// Issue 29, check (f): the ownership condition of connection visibility. A member's unshared
// connection is nobody else's: not listed, 404 to read or change, not chosen for a run, not usable
// through the credential proxy.
describe("another member's unshared connection", () => {
  test('is absent from the list, 404 on read, rename and delete, refused for a run (409 missing_integration_connection) and through the proxy', async () => {
    const pool = world.app.deps.database.pool;
    await anIntegration(world, '@acme/private', apiKeyAuth(UPSTREAM));
    const agent = await anAgent(world, '@acme/private-agent', { '@acme/private': ['api_call'] });
    const asMember = async () => {
      const id = await aMember(pool, world.org.orgId, 'member', { spaceId: world.org.spaceId, roleKey: 'editor' });
      return client(world.app.url, { key: (await aKey(pool, { ...world.org, userId: id })).key });
    };
    const [alice, bob] = [await asMember(), await asMember()];
    const connected = await alice.post(fields('@acme/private'), { credentials: { api_key: 'sk-alice-only' } });
    assert.equal(connected.status, 201, connected.text);
    const id = connected.body.id as string;
    assert.equal(connected.body.shared_with_org, false);
    assert.equal((await alice.get(`/api/connections/${id}`)).status, 200, 'its owner reads it');

    const listed = await bob.get('/api/connections?limit=100');
    assert.equal(listed.status, 200);
    assert.ok(!listed.body.data.some((c: { id: string }) => c.id === id), 'not in the list');
    for (const [method, res] of [
      ['GET', await bob.get(`/api/connections/${id}`)],
      ['PATCH', await bob.patch(`/api/connections/${id}`, { label: 'mine now' })],
      ['DELETE', await bob.delete(`/api/connections/${id}`)],
    ] as const) {
      assert.equal(res.status, 404, `${method}: ${res.text}`);
      assert.equal(res.body.code, 'not_found');
    }
    const launch = await bob.post(`/api/agents/${agent}/run`, { input: {} });
    assert.equal(launch.status, 409, launch.text);
    assert.equal(launch.body.code, 'missing_integration_connection');
    assert.deepEqual(launch.body.errors[0].candidate_connections, []);
    const proxied = await bob.post('/api/credential-proxy/proxy', undefined, {
      headers: { 'x-integration-id': '@acme/private', 'x-target': `${UPSTREAM}/x`, 'x-session-id': crypto.randomUUID(), 'x-connection-id': id },
    });
    assert.equal(proxied.status, 404, proxied.text);
    assert.equal(proxied.body.code, 'credential_not_found');
    const { rows } = await pool.query('SELECT label FROM integration_connections WHERE id = $1', [id]);
    assert.deepEqual(rows, [{ label: 'Connection' }], 'nothing changed');
  });
});
