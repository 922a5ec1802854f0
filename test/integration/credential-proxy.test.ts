// The credential proxy for remote runners (/api/credential-proxy/proxy): the integration's
// credential injected per delivery.http, only toward targets authorized_uris binds safely, through
// the egress guard; the upstream's own answer with Proxy-Status; its refusals and tenant reach.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { aKey, anOrg, aSpace, aMember } from '../support/builders.ts';
import { call, type CallOptions } from '../support/http.ts';
import { anIntegration, anIntegrationWorld, apiKeyAuth, type IntegrationWorld } from './integrations-harness.ts';

let world: IntegrationWorld;
let upstream: http.Server;
let base: string;
const received: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }> = [];

before(async () => {
  upstream = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      if (req.url === '/expired') return void res.writeHead(401).end('token expired');
      if (req.url?.startsWith('/echo')) {
        // an upstream that shows the caller what it received, in the forms it is commonly seen in
        const key = String(req.headers['x-api-key']);
        const echoed = JSON.stringify({
          note: 'kept as is', received: req.headers, bearer: `Bearer ${key}`, basic: `Basic ${Buffer.from(`${key}:`).toString('base64')}`,
          percent: encodeURIComponent(`key=${key}`), b64: Buffer.from(key).toString('base64'),
        });
        const head = { 'content-type': 'application/json', 'x-seen-key': key, 'www-authenticate': `Bearer realm="${key}"` };
        if (req.url === '/echo-gzip') return void res.writeHead(200, { ...head, 'content-encoding': 'gzip' }).end(zlib.gzipSync(echoed));
        return void res.writeHead(200, head).end(echoed);
      }
      res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json', 'x-upstream': 'yes' }).end(JSON.stringify({ ok: true, path: req.url }));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  world = await anIntegrationWorld([new URL(base).host], { CREDENTIAL_PROXY_LIMITS: '{"max_request_bytes": 1000}' });
  await anIntegration(world, '@acme/crm', apiKeyAuth(base));
  await anIntegration(world, '@acme/anyhost', {
    source: { kind: 'none' },
    auths: { key: {
      type: 'custom',
      credentials: { schema: { type: 'object', properties: { host: { type: 'string' }, api_key: { type: 'string' } } } },
      authorized_uris: [`http://{$credential.host}:${new URL(base).port}/*`],
      delivery: { http: { in: 'header', name: 'X-Api-Key', value: '{$credential.api_key}' } },
    } },
  });
  const connect = (id: string, credentials: Record<string, string>) => world.api.post(`/api/integrations/${id}/auths/key/connect/fields`, { credentials });
  assert.equal((await connect('@acme/crm', { api_key: 'sk-proxy-secret' })).status, 201);
  assert.equal((await connect('@acme/anyhost', { host: '127.0.0.1', api_key: 'sk-anyhost' })).status, 201);
});
after(async () => {
  await world.close();
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
});

function proxy(method: string, target: string, o: { key?: string; integration?: string; session?: string; connection?: string; body?: string } = {}) {
  const headers: Record<string, string> = {
    'x-integration-id': o.integration ?? '@acme/crm', 'x-target': target, 'x-session-id': o.session ?? randomUUID(),
  };
  if (o.connection) headers['x-connection-id'] = o.connection;
  const opts: CallOptions = { key: o.key ?? world.key, headers };
  if (o.body !== undefined) {
    opts.rawBody = o.body;
    headers['content-type'] = 'application/json';
  }
  return call(world.app.url, method, '/api/credential-proxy/proxy', opts);
}

test('the upstream receives the injected credential, not the platform key; its own answer comes back with Proxy-Status', async () => {
  const res = await proxy('GET', `${base}/contacts?page=2`);
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.body, { ok: true, path: '/contacts?page=2' });
  assert.equal(res.headers.get('proxy-status'), 'agent-platform-credential-proxy; received-status=200');
  assert.equal(res.headers.get('x-upstream'), 'yes');
  const seen = received.at(-1)!;
  assert.equal(seen.headers['x-api-key'], 'sk-proxy-secret');
  assert.equal(seen.headers.authorization, undefined, 'the platform credential is not forwarded');
  assert.equal(seen.headers['x-integration-id'], undefined);

  const posted = await proxy('POST', `${base}/contacts`, { body: '{"name":"Ada"}' });
  assert.equal(posted.status, 201);
  assert.equal(posted.headers.get('proxy-status'), 'agent-platform-credential-proxy; received-status=201');
  assert.equal(received.at(-1)!.body, '{"name":"Ada"}');
});

test('an echoing upstream cannot show the credential: headers and body are scrubbed, raw, Bearer, Basic, percent and base64 forms, compressed or not', async () => {
  const secret = 'sk-proxy-secret';
  const forms = [secret, Buffer.from(secret).toString('base64').replace(/=+$/, ''), Buffer.from(`${secret}:`).toString('base64').replace(/=+$/, ''), encodeURIComponent(secret)];
  for (const path of ['/echo', '/echo-gzip']) {
    const res = await proxy('GET', `${base}${path}`, { body: undefined });
    assert.equal(res.status, 200, res.text);
    assert.equal(received.at(-1)!.headers['x-api-key'], secret, 'the upstream did receive it');
    assert.equal(received.at(-1)!.headers['accept-encoding'], 'identity');
    const shown = res.text + JSON.stringify([...res.headers]);
    for (const f of forms) assert.ok(!shown.includes(f), `${path}: ${f} shown in ${shown}`);
    assert.equal(res.headers.get('content-encoding'), null);
    assert.equal(res.body.note, 'kept as is');
    assert.equal(res.body.received['x-api-key'], '[redacted]');
    assert.equal(res.body.bearer, 'Bearer [redacted]');
    assert.match(res.body.basic, /^Basic \[redacted\]=*$/);
    assert.equal(res.headers.get('x-seen-key'), '[redacted]');
    assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="[redacted]"');
  }
});

test('targets: outside authorized_uris is 403 unauthorized_target; a host only a credential names is 403 credential_exfiltration_refused', async () => {
  const count = received.length;
  const outside = await proxy('GET', 'http://127.0.0.1:9/contacts');
  assert.equal(outside.status, 403);
  assert.equal(outside.body.code, 'unauthorized_target');
  const exfil = await proxy('GET', `${base}/contacts`, { integration: '@acme/anyhost' });
  assert.equal(exfil.status, 403);
  assert.equal(exfil.body.code, 'credential_exfiltration_refused');
  assert.equal(received.length, count, 'nothing was sent');
});

test('an upstream refusing the credential is 502 credential_unusable; a body over max_request_bytes is 413', async () => {
  const res = await proxy('GET', `${base}/expired`);
  assert.equal(res.status, 502);
  assert.equal(res.body.code, 'credential_unusable');
  assert.equal(res.headers.get('proxy-status'), 'agent-platform-credential-proxy; received-status=401');
  const big = await proxy('POST', `${base}/contacts`, { body: JSON.stringify({ x: 'y'.repeat(2000) }) });
  assert.equal(big.status, 413);
  assert.equal(big.body.code, 'payload_too_large');
});

test('headers: X-Session-Id must be a UUID and stays with its caller; credential-proxy:call is required', async () => {
  const bad = await proxy('GET', `${base}/x`, { session: 'not-a-uuid' });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.param, 'X-Session-Id');
  const pool = world.app.deps.database.pool;
  const session = randomUUID();
  assert.equal((await proxy('GET', `${base}/x`, { session })).status, 200);
  const { key: other } = await aKey(pool, { ...world.org, userId: world.org.ownerId });
  const stolen = await proxy('GET', `${base}/x`, { session, key: other });
  assert.equal(stolen.status, 403);
  const { key: noScope } = await aKey(pool, { ...world.org, userId: world.org.ownerId, scopes: ['integrations:read'] });
  const refused = await proxy('GET', `${base}/x`, { key: noScope });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.code, 'forbidden');
});

test('no usable connection for another organization or space: 404 credential_not_found', async () => {
  const pool = world.app.deps.database.pool;
  const otherOrg = await anOrg(pool);
  const { key: foreign } = await aKey(pool, { ...otherOrg, userId: otherOrg.ownerId });
  const a = await proxy('GET', `${base}/x`, { key: foreign });
  assert.equal(a.status, 404);
  assert.equal(a.body.code, 'credential_not_found');
  const s2 = await aSpace(pool, world.org.orgId, { name: 'Other' });
  const member = await aMember(pool, world.org.orgId, 'member', { spaceId: s2, roleKey: 'space_admin' });
  const { key: otherSpace } = await aKey(pool, { orgId: world.org.orgId, spaceId: s2, userId: member });
  const b = await proxy('GET', `${base}/x`, { key: otherSpace });
  assert.equal(b.status, 404);
  assert.equal(b.body.code, 'credential_not_found');
});

test('an enforced organization default: another X-Connection-Id is 400 connection_not_in_org_default', async () => {
  const second = await world.api.post('/api/integrations/@acme/crm/auths/key/connect/fields', { credentials: { api_key: 'sk-second' } });
  const first = (await world.api.get('/api/connections?integration_package_id=@acme/crm')).body.data.find((c: any) => c.id !== second.body.id);
  const set = await world.api.put('/api/integrations/@acme/crm/settings', { default_connection_id: first.id, enforce_default: true });
  assert.equal(set.status, 200, set.text);
  const res = await proxy('GET', `${base}/x`, { connection: second.body.id });
  assert.equal(res.status, 400);
  assert.equal(res.body.code, 'connection_not_in_org_default');
  const ok = await proxy('GET', `${base}/x`, { connection: first.id });
  assert.equal(ok.status, 200);
  assert.equal(received.at(-1)!.headers['x-api-key'], 'sk-proxy-secret');
});
