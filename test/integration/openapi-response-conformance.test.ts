// The main journeys, each response checked against the instance's own document: every status,
// body field and meaningful header the server sends is one the document describes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import { buildFixtureArchive } from '../fixtures/build-packages.ts';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aMember, aSession, aUser } from '../support/builders.ts';
import { call, type CallOptions, type WireResponse } from '../support/http.ts';
import { conformanceChecker } from '../support/openapi-conformance.ts';

let fake: Awaited<ReturnType<typeof startFakeModel>>;
let app: TestApp;
let check: ReturnType<typeof conformanceChecker>;
let mismatches: string[] = [];
const seen = new Set<string>();

before(async () => {
  fake = await startFakeModel();
  app = await startTestApp({ env: { EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host } });
  check = conformanceChecker((await call(app.url, 'GET', '/api/openapi.json')).body);
});
after(async () => {
  await app.close();
  await fake.close();
});

async function checked(method: string, path: string, opts: CallOptions = {}): Promise<WireResponse> {
  const res = await call(app.url, method, path, opts);
  seen.add(`${method} ${path.split('?')[0]} ${res.status}`);
  mismatches.push(...check(method, path, res));
  // a creation says where its resource lives, at a path the document describes
  if (res.status === 201 && !path.startsWith('/api/auth/')) {
    const location = res.headers.get('location');
    if (!location) mismatches.push(`${method} ${path} 201: no Location`);
    else if (!['GET', 'PATCH', 'DELETE'].some((m) => !check(m, location, { ...res, status: 0 }).some((p) => p.endsWith('no operation in the document')))) mismatches.push(`${method} ${path} 201: Location ${location} is no documented path`);
  }
  return res;
}

function conforms(): void {
  const found = mismatches;
  mismatches = [];
  assert.deepEqual(found, []);
}

let owner: { cookie: string; org: string; space: string; userId: string };
let key: string;

test('the first run: claim, key, model, import, launch, wait, list, logs', async () => {
  const claimed = await checked('POST', '/api/auth/bootstrap/redeem', { body: { token: 'test-bootstrap-token-0123456789', email: 'me@example.com', password: 'a long passphrase', name: 'Me' } });
  assert.equal(claimed.status, 201, claimed.text);
  const cookie = claimed.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  owner = { cookie, org: claimed.body.org_id, space: claimed.body.space_id, userId: claimed.body.user_id };
  await checked('GET', '/api/auth/session', { cookie });
  const session = { cookie, org: owner.org, space: owner.space };
  const created = await checked('POST', '/api/api-keys', { ...session, body: { name: 'laptop' } });
  assert.equal(created.status, 201, created.text);
  key = created.body.key;
  await checked('GET', '/api/api-keys', session);
  await checked('GET', '/api/api-keys/available-scopes', session);
  await checked('POST', '/api/api-keys', { key, body: { name: 'no' } });

  const cred = await checked('POST', '/api/model-provider-credentials', { key, body: { provider: 'openai-compatible', name: 'local', base_url: fake.url, api_key: 'x' } });
  await checked('GET', '/api/model-provider-credentials', { key });
  await checked('GET', `/api/model-provider-credentials/${cred.body.id}`, { key });
  const model = await checked('POST', '/api/models', { key, body: { credential_id: cred.body.id, model: 'fake', is_default: true } });
  await checked('GET', '/api/models', { key });
  await checked('GET', `/api/models/${model.body.id}`, { key });
  // a name resolves only at call time: saving it contacts nothing
  const prx = await checked('POST', '/api/proxies', { key, body: { name: 'office', url: 'http://proxy.example.test:3128', username: 'u', password: 'p' } });
  assert.equal(prx.status, 201, prx.text);
  await checked('GET', '/api/proxies', { key });
  await checked('GET', `/api/proxies/${prx.body.id}`, { key });
  await checked('PATCH', `/api/proxies/${prx.body.id}`, { key, body: { is_default: true } });
  await checked('POST', `/api/proxies/${prx.body.id}/test`, { key, body: { target_url: 'http://127.0.0.1:9/' } });
  await checked('PATCH', `/api/proxies/${prx.body.id}`, { key, body: { is_default: false } });

  const form = new FormData();
  form.append('file', new Blob([buildFixtureArchive('agent-echo')]), 'agent-echo.afps');
  const upload = await fetch(`${app.url}/api/packages/import`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const uploadText = await upload.text();
  mismatches.push(...check('POST', '/api/packages/import', { status: upload.status, headers: upload.headers, body: JSON.parse(uploadText), text: uploadText }));
  assert.equal(upload.status, 201, uploadText);
  await checked('POST', '/api/packages/import', { key, body: { manifest: { name: '@first/plain', version: '1.0.0', type: 'agent', schema_version: '0.3', display_name: 'Plain' }, files: { 'prompt.md': 'Say hello.' } } });

  const ECHO = '/api/agents/@fixtures/agent-echo';
  const launched = await checked('POST', `${ECHO}/run`, { key, headers: { 'idempotency-key': 'conformance-1' }, body: { input: { message: 'hello' } } });
  assert.equal(launched.status, 201, launched.text);
  await checked('POST', `${ECHO}/run`, { key, headers: { 'idempotency-key': 'conformance-1' }, body: { input: { message: 'hello' } } });
  await checked('POST', `${ECHO}/run`, { key, body: { input: { wrong: 1 } } });
  const runId = launched.body.id;
  const { rows } = await app.deps.database.pool.query('SELECT event_secret FROM runs WHERE id = $1', [runId]);
  const secret = app.deps.secrets.open(rows[0].event_secret);
  const events = [{ type: 'started', data: {} }, { type: 'log', data: { level: 'info', message: 'echoing' } }, { type: 'metric', data: { model: 'fake', prompt_tokens: 3, completion_tokens: 2, cost_usd: 0.01 } }, { type: 'output', data: { output: { echo: 'hello' } } }, { type: 'completed', data: {} }];
  for (const [i, event] of events.entries()) {
    const raw = JSON.stringify({ sequence: i + 1, at: new Date().toISOString(), ...event });
    assert.equal((await call(app.url, 'POST', `/internal/runs/${runId}/events`, { rawBody: raw, headers: { 'content-type': 'application/json', ...signedRunEventHeaders(secret, raw) } })).status, 204);
  }
  const done = await checked('GET', `/api/runs/${runId}?wait=5`, { key });
  assert.equal(done.body.status, 'success', done.text);
  await checked('GET', '/api/runs?limit=1', { key });
  await checked('GET', '/api/runs?limit=x', { key });
  await checked('GET', `${ECHO}/runs`, { key });
  await checked('GET', `/api/runs/${runId}/logs`, { key });
  const other = await checked('POST', `${ECHO}/run`, { key, body: { input: { message: 'again' } } });
  await checked('POST', `/api/runs/${other.body.id}/cancel`, { key, body: {} });
  await checked('DELETE', `/api/runs/${other.body.id}`, { key });
  await checked('GET', '/api/runs/run_missing', { key });
  await checked('GET', `${ECHO}/config`, { key });
  conforms();
});

test('packages: list, read, versions, files, draft, download', async () => {
  const ECHO = '/api/packages/@fixtures/agent-echo';
  await checked('GET', '/api/packages?limit=1', { key });
  await checked('GET', ECHO, { key });
  await checked('GET', `${ECHO}/versions`, { key });
  await checked('GET', `${ECHO}/files`, { key });
  await checked('GET', `${ECHO}/files/content?path=prompt.md`, { key });
  await checked('GET', `${ECHO}/draft`, { key });
  await checked('GET', `${ECHO}/1.0.0/download`, { key });
  await checked('GET', '/api/packages/@fixtures/missing', { key });
  conforms();
});

test('schedules: create, refusals, read, list, update, disable, enable, runs, delete', async () => {
  const ECHO = '/api/agents/@fixtures/agent-echo';
  const made = await checked('POST', `${ECHO}/schedules`, { key, body: { name: 'Nightly', cron_expression: '0 3 * * *', timezone: 'Europe/Paris', input: { message: 'hi' } } });
  assert.equal(made.status, 201, made.text);
  const id = made.body.id;
  await checked('POST', `${ECHO}/schedules`, { key, body: { name: 'Bad', cron_expression: '* *', timezone: 'UTC' } });
  await checked('POST', `${ECHO}/schedules`, { key, body: { name: 'Bad', cron_expression: '* * * * *', timezone: 'Nowhere/Land' } });
  await checked('POST', `${ECHO}/schedules`, { key, body: { name: 'Bad', cron_expression: '* * * * *', timezone: 'UTC', input: { nope: 1 } } });
  await checked('GET', `/api/schedules/${id}`, { key });
  await checked('GET', '/api/schedules?limit=1', { key });
  await checked('GET', `${ECHO}/schedules`, { key });
  await checked('PATCH', `/api/schedules/${id}`, { key, body: { name: 'Nightly run', version: made.body.version } });
  await checked('PATCH', `/api/schedules/${id}`, { key, body: { name: 'Stale' }, headers: { 'if-match': made.headers.get('etag')! } });
  await checked('POST', `/api/schedules/${id}/disable`, { key, body: {} });
  await checked('POST', `/api/schedules/${id}/enable`, { key, body: {} });
  await checked('GET', `/api/schedules/${id}/runs`, { key });
  await checked('DELETE', `/api/schedules/${id}`, { key });
  await checked('GET', `/api/schedules/${id}`, { key });
  conforms();
});

test('end-users: create, list by pages, read, update, delete, and refusals', async () => {
  const made = [];
  for (const n of [1, 2, 3]) made.push((await checked('POST', '/api/end-users', { key, body: { name: `User ${n}`, externalId: `ext-${n}` } })).body);
  assert.ok(made[0].id, JSON.stringify(made[0]));
  await checked('GET', '/api/end-users?limit=2', { key });
  await checked('GET', `/api/end-users/${made[0].id}`, { key });
  await checked('PATCH', `/api/end-users/${made[0].id}`, { key, body: { name: 'Renamed' } });
  await checked('DELETE', `/api/end-users/${made[1].id}`, { key });
  await checked('POST', '/api/end-users', { key, body: { name: 5, extra: true } });
  await checked('GET', '/api/end-users', {});
  conforms();
});

test('organizations, spaces, members, roles and invitations', async () => {
  const session = { cookie: owner.cookie, org: owner.org };
  await checked('GET', '/api/orgs', session);
  await checked('GET', `/api/orgs/${owner.org}`, session);
  await checked('GET', `/api/orgs/${owner.org}/members`, session);
  await checked('GET', '/api/spaces', session);
  const space = await checked('POST', '/api/spaces', { ...session, body: { name: 'Team' } });
  await checked('GET', `/api/spaces/${space.body.id}`, session);
  const userId = await aMember(app.deps.database.pool, owner.org, 'member');
  await checked('POST', `/api/spaces/${space.body.id}/members`, { ...session, body: { userId, role_key: 'viewer' } });
  await checked('GET', `/api/spaces/${space.body.id}/members`, session);
  await checked('GET', `/api/orgs/${owner.org}/roles`, session);
  await checked('POST', `/api/orgs/${owner.org}/roles`, { ...session, body: { key: 'helpers', name: 'Helpers', permissions: ['runs:read'] } });
  await checked('POST', `/api/orgs/${owner.org}/invitations`, { ...session, body: { email: 'new@example.com', role: 'member' } });
  await checked('GET', `/api/orgs/${owner.org}/invitations`, session);
  const { cookie: stranger } = await aSession(app.deps.database.pool, (await aUser(app.deps.database.pool)).userId);
  await checked('GET', `/api/orgs/${owner.org}`, { cookie: stranger, org: owner.org });
  conforms();
});

test('identity: sign-up, sign-in, an invitation accepted, a second organization, a key revoked, sign-out', async () => {
  const newcomer = { email: 'newcomer@example.com', password: 'another long passphrase', name: 'New' };
  const signedUp = await checked('POST', '/api/auth/sign-up/email', { body: newcomer });
  assert.equal(signedUp.status, 201, signedUp.text);
  await checked('POST', '/api/auth/sign-up/email', { body: newcomer });
  const signedIn = await checked('POST', '/api/auth/sign-in/email', { body: { email: newcomer.email, password: newcomer.password } });
  const cookie = signedIn.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  await checked('POST', '/api/auth/sign-in/email', { body: { email: newcomer.email, password: 'wrong passphrase!!' } });
  const invited = await checked('POST', `/api/orgs/${owner.org}/invitations`, { cookie: owner.cookie, org: owner.org, body: { email: newcomer.email, role: 'member' } });
  assert.equal((await checked('POST', `/api/invitations/${invited.body.token}/accept`, { cookie })).status, 200);
  await checked('POST', `/api/invitations/${invited.body.token}/accept`, { cookie });
  await checked('POST', '/api/orgs', { cookie, body: { name: 'Second Org' } });
  const session = { cookie: owner.cookie, org: owner.org, space: owner.space };
  const made = await checked('POST', '/api/api-keys', { ...session, body: { name: 'short-lived', scopes: ['runs:read'] } });
  await checked('GET', '/api/runs', { key: made.body.key });
  await checked('POST', '/api/end-users', { key: made.body.key, body: { externalId: 'nope', name: 'Nope' } });
  await checked('DELETE', `/api/api-keys/${made.body.id}`, session);
  assert.equal((await checked('GET', '/api/runs', { key: made.body.key })).status, 401);
  await checked('POST', '/api/auth/sign-out', { cookie });
  await checked('GET', '/api/auth/session', { cookie });
  conforms();
});

test('chat: sessions, a streamed turn, refusals and enforced skills', async () => {
  const session = { cookie: owner.cookie, org: owner.org, space: owner.space };
  const made = await checked('POST', '/api/chat/sessions', { ...session, body: { title: 'conformance' } });
  assert.equal(made.status, 201, made.text);
  await checked('POST', '/api/chat/sessions', { ...session, body: { title: '' } });
  await checked('GET', '/api/chat/sessions?limit=1', session);
  await checked('GET', `/api/chat/sessions/${made.body.id}`, session);
  const turn = await checked('POST', `/api/chat/sessions/${made.body.id}/messages`, { ...session, body: { content: 'hello' } });
  assert.equal(turn.status, 200, turn.text);
  assert.match(turn.text, /event: done/);
  await checked('GET', `/api/chat/sessions/${made.body.id}`, session);
  await checked('POST', '/api/chat/sessions/chat_missing/messages', { ...session, body: { content: 'hello' } });
  await checked('GET', '/api/chat/sessions', { key });
  await checked('GET', '/api/chat/enforced-skills', session);
  await checked('PUT', '/api/chat/enforced-skills', { ...session, body: { skills: ['@fixtures/agent-echo'] } });
  await checked('PUT', '/api/chat/enforced-skills', { ...session, body: { skills: [] } });
  await checked('DELETE', `/api/chat/sessions/${made.body.id}`, session);
  await checked('DELETE', `/api/chat/sessions/${made.body.id}`, session);
  conforms();
});

test('public resources', async () => {
  await checked('GET', '/api/openapi.json');
  await checked('GET', '/health/live');
  await checked('GET', '/health/ready');
  await checked('GET', '/llms.txt');
  conforms();
  assert.ok(seen.size > 40, [...seen].join(', '));
});

test('the check can fail: an undescribed field, an undeclared header or status is a mismatch', async () => {
  const res = await call(app.url, 'GET', '/api/end-users?limit=1', { key });
  assert.deepEqual(check('GET', '/api/end-users?limit=1', res), []);
  const text = JSON.stringify({ ...res.body, data: res.body.data.map((u: object) => ({ ...u, secret_note: 'x' })) });
  assert.match(check('GET', '/api/end-users', { ...res, text, body: JSON.parse(text) }).join('\n'), /data\/0 must NOT have additional properties \(secret_note\)/);
  const headers = new Headers(res.headers);
  headers.set('Location', '/api/end-users/x');
  assert.match(check('GET', '/api/end-users', { ...res, headers }).join('\n'), /header Location not declared/);
  assert.match(check('GET', '/api/end-users', { ...res, status: 418 }).join('\n'), /status not declared/);
});

test("in production the sign-in limiter's headers are declared too", async () => {
  const prod = await startTestApp({ env: { NODE_ENV: 'production' } });
  try {
    const checkProd = conformanceChecker((await call(prod.url, 'GET', '/api/openapi.json')).body);
    const res = await call(prod.url, 'POST', '/api/auth/sign-in/email', { body: { email: 'who@example.test', password: 'whatever' } });
    assert.equal(res.status, 401);
    assert.ok(res.headers.get('ratelimit'));
    assert.deepEqual(checkProd('POST', '/api/auth/sign-in/email', res), []);
  } finally {
    await prod.close();
  }
});

test('every numeric query parameter in the document refuses a value that is not a number: invalid_request naming it', async () => {
  const doc = (await call(app.url, 'GET', '/api/openapi.json')).body;
  const numeric = (s: any): boolean => s?.type === 'integer' || s?.type === 'number' || (s?.anyOf ?? []).some(numeric);
  const refused: string[] = [];
  let probed = 0;
  for (const [template, ops] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      for (const p of (op.parameters ?? []).filter((p: any) => p.in === 'query' && numeric(p.schema))) {
        probed++;
        const path = template.replace(/\{scope\}/g, '@fixtures').replace(/\{[^}]+\}/g, 'x');
        // session-only operations refuse a key before reading the query: they are asked with the session
        const credential = JSON.stringify(op.security) === JSON.stringify([{ session: [] }]) ? { cookie: owner.cookie, org: owner.org, space: owner.space } : { key };
        const res = await checked(method.toUpperCase(), `${path}?${p.name}=abc`, credential);
        if (res.status !== 400 || res.body.code !== 'invalid_request' || res.body.param !== p.name) refused.push(`${method} ${template} ${p.name}: ${res.status} ${res.body.code} ${res.body.param}`);
      }
    }
  }
  assert.ok(probed >= 8, `probed ${probed}`);
  assert.deepEqual(refused, []);
  conforms();
});
