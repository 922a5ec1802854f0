// identity_claims: JSONPath expressions in an integration's auth naming the connection's account
// (account_id, label) in the login's JSON answer or the OAuth token answer. An expression outside
// the subset is refused at import and at draft save with 400 invalid_config naming the field;
// hostile manifests and answers (huge or deep expressions, __proto__ keys, a claim naming the
// session itself) neither crash, pollute, nor turn a secret into a visible label.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { OAuth2Server } from 'oauth2-mock-server';
import { aKey } from '../support/builders.ts';
import { anIntegration, anIntegrationWorld, archive, type IntegrationWorld } from './integrations-harness.ts';

let world: IntegrationWorld;
let api: IntegrationWorld['api'];
const oauth = new OAuth2Server();
let loginUrl: string;
let loginAnswer = '';
const login = createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'application/json' }).end(loginAnswer);
});

/** An import as a client sends it; answers the wire response. */
async function tryImport(manifest: Record<string, unknown>) {
  const { key } = await aKey(world.app.deps.database.pool, { ...world.org, userId: world.org.ownerId });
  const form = new FormData();
  form.append('file', new Blob([archive({ version: '1.0.0', type: 'integration', schema_version: '0.3', ...manifest })]), 'package.afps');
  const res = await fetch(`${world.app.url}/api/packages/import`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text), type: res.headers.get('content-type') ?? '' };
}

function oauthAuth(claims: unknown): Record<string, unknown> {
  const issuer = new URL(oauth.issuer.url!);
  return {
    source: { kind: 'none' }, default_tools: ['api_call'],
    auths: { oauth: {
      type: 'oauth2',
      oauth2: { authorization_url: `${issuer.origin}/authorize`, token_url: `${issuer.origin}/token`, scopes: ['read'] },
      authorized_uris: ['https://calendar.example/*'],
      delivery: { http: { in: 'header', name: 'Authorization', prefix: 'Bearer ', value: '{$credential.access_token}' } },
      identity_claims: claims,
    } },
  };
}

function loginAuth(claims: unknown): Record<string, unknown> {
  return {
    source: { kind: 'none' }, default_tools: ['api_call'],
    auths: { login: {
      type: 'custom',
      credentials: { schema: { type: 'object', properties: { username: { type: 'string' }, password: { type: 'string' } }, required: ['username', 'password'] } },
      connect: { login: {
        request: { method: 'POST', url: `${loginUrl}/login`, content_type: 'application/json', body: '{"u":"{{username}}","p":"{{password}}"}' },
        outputs: { session: { from: 'body', path: 'session' } },
      } },
      authorized_uris: [`${loginUrl}/*`],
      delivery: { http: { in: 'header', name: 'X-Session', value: '{$credential.session}' } },
      identity_claims: claims,
    } },
  };
}

before(async () => {
  await oauth.issuer.keys.generate('RS256');
  await oauth.start(0, '127.0.0.1');
  oauth.service.on('beforeResponse', (response: { body: Record<string, unknown> }) => {
    response.body.scope = 'read';
    response.body.user = { id: 'u-77', email: 'ada@calendar.example', teams: [{ name: 'core' }] };
  });
  await new Promise<void>((resolve) => login.listen(0, '127.0.0.1', resolve));
  loginUrl = `http://127.0.0.1:${(login.address() as AddressInfo).port}`;
  world = await anIntegrationWorld([new URL(oauth.issuer.url!).host, new URL(loginUrl).host]);
  api = world.api;
});
after(async () => {
  await world.close();
  await oauth.stop();
  login.closeAllConnections();
  await new Promise<void>((resolve) => login.close(() => resolve()));
});

test('an identity_claims expression outside the JSONPath subset is refused at import with 400 invalid_config naming the field', async () => {
  const refused: Array<[string, unknown, string]> = [
    ['recursive descent', { account_id: '$..id' }, 'auths.oauth.identity_claims.account_id'],
    ['a filter', { label: '$.users[?(@.admin)].email' }, 'auths.oauth.identity_claims.label'],
    ['a script', { label: '$.users[(@.length-1)]' }, 'auths.oauth.identity_claims.label'],
    ['no root', { account_id: 'user.id' }, 'auths.oauth.identity_claims.account_id'],
    ['not a string', { account_id: 42 }, 'auths.oauth.identity_claims.account_id'],
    ['too deep', { account_id: `$${'.a'.repeat(40)}` }, 'auths.oauth.identity_claims.account_id'],
    ['huge', { label: `$.${'x'.repeat(200_000)}` }, 'auths.oauth.identity_claims.label'],
  ];
  for (const [what, claims, field] of refused) {
    const res = await tryImport({ name: '@acme/refused', ...oauthAuth(claims) });
    assert.equal(res.status, 400, `${what}: ${res.text.slice(0, 300)}`);
    assert.equal(res.body.code, 'invalid_config', what);
    assert.match(res.type, /problem\+json/);
    const entry = res.body.errors.find((e: { field: string }) => e.field === field);
    assert.ok(entry, `${what}: ${JSON.stringify(res.body.errors).slice(0, 300)}`);
    assert.equal(entry.code, 'invalid_jsonpath');
    assert.ok(res.text.length < 4000, `${what}: the answer does not echo the expression`);
  }
  assert.equal((await api.get('/api/packages/@acme/refused')).status, 404, 'nothing was imported');

  // other faults of identity_claims are manifest faults, and a __proto__ key pollutes nothing
  const proto = JSON.parse('{"__proto__": "$.user.id"}');
  const polluted = await tryImport({ name: '@acme/proto', ...oauthAuth(proto) });
  assert.equal(polluted.status, 400, polluted.text);
  assert.equal(polluted.body.code, 'invalid_manifest');
  assert.ok(polluted.body.errors.some((e: { field: string; code: string }) => e.field === 'auths.oauth.identity_claims.__proto__' && e.code === 'unknown_field'), polluted.text);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  const unread = await tryImport({ name: '@acme/unread', source: { kind: 'none' }, auths: { key: { type: 'api_key', identity_claims: { account_id: '$.id' } } } });
  assert.equal(unread.status, 400, unread.text);
  assert.equal(unread.body.code, 'invalid_manifest', 'an API key has no answer to read claims from');
});

test('a draft save with an invalid identity_claims expression is 400 invalid_config; a valid one saves', async () => {
  await anIntegration(world, '@acme/drafted', oauthAuth({ account_id: '$.user.id' }));
  const current = await api.get('/api/packages/@acme/drafted/draft');
  assert.equal(current.status, 200, current.text);
  const etag = current.headers.get('etag')!;
  const manifest = current.body.manifest;
  const bad = structuredClone(manifest);
  bad.auths.oauth.identity_claims = { account_id: '$.user.id', label: '$.user.*' };
  const refused = await api.put('/api/packages/@acme/drafted/draft', { manifest: bad }, { headers: { 'if-match': etag } });
  assert.equal(refused.status, 400, refused.text);
  assert.equal(refused.body.code, 'invalid_config');
  assert.deepEqual(refused.body.errors.map((e: { field: string; code: string }) => [e.field, e.code]), [['manifest.auths.oauth.identity_claims.label', 'invalid_jsonpath']]);
  assert.equal((await api.get('/api/packages/@acme/drafted/draft')).headers.get('etag'), etag, 'nothing was saved');

  const good = structuredClone(manifest);
  good.auths.oauth.identity_claims = { account_id: "$['user']['id']", label: '$.user.teams[0].name' };
  const saved = await api.put('/api/packages/@acme/drafted/draft', { manifest: good }, { headers: { 'if-match': etag } });
  assert.equal(saved.status, 200, saved.text);
  assert.deepEqual(saved.body.manifest.auths.oauth.identity_claims, good.auths.oauth.identity_claims);
});

test("the login's JSON answer names the connection's account and label", async () => {
  await anIntegration(world, '@acme/portal', loginAuth({ account_id: '$.profile.login', label: "$['profile']['names'][0]" }));
  loginAnswer = JSON.stringify({ session: 'portal-session-5e1d', profile: { login: 'ada', names: ['Ada L.', 'A.'] } });
  const made = await api.post('/api/integrations/@acme/portal/auths/login/connect/fields', { credentials: { username: 'someone-else', password: 'pw-1234' } });
  assert.equal(made.status, 201, made.text);
  assert.equal(made.body.account_id, 'ada', 'the claim wins over the typed username');
  assert.equal(made.body.label, 'Ada L.');

  // the account the answer names may be the typed username (not a secret); the typed password never is
  loginAnswer = JSON.stringify({ session: 'portal-session-7a3f', profile: { login: 'barbara', names: ['pw-barbara-42'] } });
  const typed = await api.post('/api/integrations/@acme/portal/auths/login/connect/fields', { credentials: { username: 'barbara', password: 'pw-barbara-42' } });
  assert.equal(typed.status, 201, typed.text);
  assert.equal(typed.body.account_id, 'barbara');
  assert.equal(typed.body.label, 'barbara', 'the password is never the label');
  assert.ok(!typed.text.includes('pw-barbara-42'));

  // an answer that names nothing there: the previous rules apply (the typed username)
  loginAnswer = JSON.stringify({ session: 'portal-session-6f2e' });
  const plain = await api.post('/api/integrations/@acme/portal/auths/login/connect/fields', { credentials: { username: 'grace', password: 'pw-5678' } });
  assert.equal(plain.status, 201, plain.text);
  assert.equal(plain.body.account_id, 'grace');
  assert.equal(plain.body.label, 'grace');
});

test('hostile login answers: a claim naming a secret is not used, __proto__ is data, odd values are ignored', async () => {
  await anIntegration(world, '@acme/leaky', loginAuth({ account_id: '$.__proto__.id', label: '$.session' }));
  loginAnswer = '{"session": "leaky-session-secret-9a7b", "__proto__": {"id": "proto-data", "polluted": "yes"}}';
  const made = await api.post('/api/integrations/@acme/leaky/auths/login/connect/fields', { credentials: { username: 'lin', password: 'pw-9012' } });
  assert.equal(made.status, 201, made.text);
  assert.equal(made.body.account_id, 'proto-data', 'JSON.parse made __proto__ an own data member');
  assert.equal(made.body.label, 'proto-data', 'the session is never the label');
  assert.ok(!made.text.includes('leaky-session-secret-9a7b'));
  assert.equal(({} as Record<string, unknown>).polluted, undefined, 'nothing polluted');
  assert.ok(!JSON.stringify((await api.get('/api/connections')).body).includes('leaky-session-secret-9a7b'));

  await anIntegration(world, '@acme/odd', loginAuth({ account_id: '$.who', label: '$.label' }));
  loginAnswer = JSON.stringify({ session: 'odd-session-1c3d', who: { nested: true }, label: `  ${'L'.repeat(5000)}\u0000 ` });
  const odd = await api.post('/api/integrations/@acme/odd/auths/login/connect/fields', { credentials: { username: 'mo', password: 'pw-3456' } });
  assert.equal(odd.status, 201, odd.text);
  assert.equal(odd.body.account_id, 'mo', 'an object is no account id');
  assert.equal(odd.body.label, 'L'.repeat(200), 'a label is trimmed to 200 characters');
  let deep = '"bottom"';
  for (let i = 0; i < 5000; i++) deep = `{"a":${deep}}`;
  loginAnswer = `{"session": "deep-session-2d4e", "who": "deep-one", "label": ${deep}}`;
  const nested = await api.post('/api/integrations/@acme/odd/auths/login/connect/fields', { credentials: { username: 'jo', password: 'pw-7890' } });
  assert.equal(nested.status, 201, nested.text);
  assert.equal(nested.body.account_id, 'deep-one');
});

test("the OAuth token answer names the connection's account and label", async () => {
  await anIntegration(world, '@acme/calendar', oauthAuth({ account_id: '$.user.id', label: '$.user.email' }));
  const set = await api.put('/api/integrations/@acme/calendar/settings', { oauth_client: { auth_key: 'oauth', client_id: 'platform-client', client_secret: 'client-secret-1' } });
  assert.equal(set.status, 200, set.text);
  const link = await api.post('/api/integrations/@acme/calendar/auths/oauth/connect/session', {});
  const start = await fetch(world.onApp(link.body.connect_url), { redirect: 'manual' });
  const consent = await fetch(new URL(start.headers.get('location')!), { redirect: 'manual' });
  const callback = new URL(consent.headers.get('location')!);
  assert.equal((await fetch(`${world.app.url}${callback.pathname}${callback.search}`)).status, 200);
  const connection = (await api.get('/api/connections')).body.data.find((c: { integration_package_id: string }) => c.integration_package_id === '@acme/calendar');
  assert.equal(connection.account_id, 'u-77', 'not the id_token subject');
  assert.equal(connection.label, 'ada@calendar.example');
});
