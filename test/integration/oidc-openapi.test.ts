// The OpenID provider in the API reference and on the wire: the OpenAPI document lists every
// operation the provider serves, every pattern of the document is a plain ECMA-262 pattern that
// matches its own examples, discovery advertises nothing that answers 404, and a method an
// endpoint does not serve gets an RFC 6749 body (405, Allow), never a plain-text 404.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { call } from '../support/http.ts';

let app: TestApp;
let doc: any;

before(async () => {
  app = await startTestApp();
  doc = (await call(app.url, 'GET', '/api/openapi.json')).body;
});
after(() => app.close());

test('the document lists the OpenID provider operations', () => {
  const expected = [
    'get /.well-known/openid-configuration', 'get /.well-known/oauth-authorization-server', 'get /api/auth/jwks',
    'get /api/auth/oauth2/authorize', 'post /api/auth/oauth2/par',
    'post /api/auth/oauth2/token', 'get /api/auth/oauth2/userinfo', 'post /api/auth/oauth2/userinfo',
    'post /api/auth/oauth2/introspect', 'post /api/auth/oauth2/revoke', 'post /api/auth/oauth2/register',
    'post /api/auth/device/code', 'get /api/auth/device', 'post /api/auth/device', 'get /api/auth/device/{uid}',
    'get /api/auth/oauth2/interaction/{uid}', 'post /api/auth/oauth2/interaction/{uid}',
  ];
  const missing = expected.filter((e) => {
    const [method, path] = e.split(' ');
    return !doc.paths[path]?.[method];
  });
  assert.deepEqual(missing, []);
  const token = doc.paths['/api/auth/oauth2/token'].post;
  assert.ok(token.requestBody.content['application/x-www-form-urlencoded'], 'the token request is a form');
  assert.equal(token.responses['200'].content['application/json'].schema.$ref, '#/components/schemas/OAuthTokenResponse');
  assert.equal(token.responses['400'].content['application/json'].schema.$ref, '#/components/schemas/OAuthError');
  assert.deepEqual(doc.paths['/api/auth/oauth2/userinfo'].get.security, [{ bearer: [] }]);
});

/** Every schema object of the document with a pattern, wherever it sits. */
function patterned(node: unknown, at: string, out: Array<{ at: string; schema: any }>): void {
  if (Array.isArray(node)) node.forEach((n, i) => patterned(n, `${at}/${i}`, out));
  else if (node && typeof node === 'object') {
    const o = node as Record<string, unknown>;
    if (typeof o.pattern === 'string') out.push({ at, schema: o });
    for (const [k, v] of Object.entries(o)) patterned(v, `${at}/${k}`, out);
  }
}

test('every pattern of the document compiles as ECMA-262 without flags (and with u) and matches its own examples', () => {
  const found: Array<{ at: string; schema: any }> = [];
  patterned(doc, '#', found);
  assert.ok(found.length >= 5, `${found.length} patterns`);
  const wrong: string[] = [];
  let examples = 0;
  for (const { at, schema } of found) {
    let plain: RegExp;
    try {
      plain = new RegExp(schema.pattern);
      new RegExp(schema.pattern, 'u');
    } catch (err) {
      wrong.push(`${at}: ${(err as Error).message}`);
      continue;
    }
    for (const ex of [...(schema.examples ?? []), ...(schema.example !== undefined ? [schema.example] : [])]) {
      examples++;
      if (!plain.test(String(ex))) wrong.push(`${at}: ${schema.pattern} does not match its example ${ex}`);
    }
  }
  assert.deepEqual(wrong, []);
  assert.ok(examples >= 3, `${examples} examples checked`);
  // the upload's media type, as a client validating against the document checks it
  const upload = doc.paths['/api/uploads'].post.requestBody.content['application/json'].schema;
  const mime = new RegExp(upload.properties.mime_type.pattern);
  for (const ok of ['text/plain', 'image/png', 'Text/Plain', 'application/vnd.api+json']) assert.ok(mime.test(ok), ok);
  for (const bad of ['text', 'text/', '/plain', 'text/plain; charset=utf-8']) assert.ok(!mime.test(bad), bad);
});

test('an upload whose media type has capitals is accepted, as the document says', async () => {
  const { aKey, anOrg } = await import('../support/builders.ts');
  const pool = app.deps.database.pool;
  const org = await anOrg(pool);
  const { key } = await aKey(pool, { ...org, userId: org.ownerId });
  const res = await call(app.url, 'POST', '/api/uploads', { key, org: org.orgId, space: org.spaceId, body: { name: 'a.txt', size: 3, mime_type: 'Text/Plain' } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
});

test('discovery advertises no endpoint that answers 404, to GET or to POST', async () => {
  for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
    const d = (await call(app.url, 'GET', path)).body;
    const endpoints = Object.entries<string>(d).filter(([k, v]) => (k.endsWith('_endpoint') || k === 'jwks_uri') && typeof v === 'string');
    assert.ok(endpoints.length >= 9, JSON.stringify(endpoints));
    assert.equal(d.pushed_authorization_request_endpoint, `${app.url}/api/auth/oauth2/par`);
    assert.equal(d.dpop_signing_alg_values_supported, undefined, 'no DPoP: the API checks no proof');
    for (const [name, url] of endpoints) {
      assert.ok(url.startsWith(`${app.url}/`), `${name} is on this issuer: ${url}`);
      // each with the method it serves, and with the other one (answered 405, never 404)
      for (const method of ['GET', 'POST']) {
        const res = await fetch(url, { method, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: method === 'POST' ? '' : undefined });
        await res.arrayBuffer();
        assert.notEqual(res.status, 404, `${method} ${name} ${url}`);
        assert.ok(res.status < 500, `${method} ${name} ${url}: ${res.status}`);
      }
    }
  }
});

test('GET on introspect, revoke, token, PAR and device code: 405 with Allow and an RFC 6749 body', async () => {
  for (const path of ['/api/auth/oauth2/introspect', '/api/auth/oauth2/revoke', '/api/auth/oauth2/token', '/api/auth/oauth2/par', '/api/auth/device/code']) {
    const res = await fetch(`${app.url}${path}`);
    assert.equal(res.status, 405, path);
    assert.match(res.headers.get('allow')!, /^POST\b/, path);
    assert.match(res.headers.get('content-type')!, /^application\/json/, path);
    const body = (await res.json()) as { error: string; error_description: string };
    assert.equal(body.error, 'invalid_request', path);
    assert.equal(typeof body.error_description, 'string', path);
  }
  // a path the provider does not serve is the platform's problem document
  const other = await fetch(`${app.url}/api/auth/oauth2/nothing-here`);
  assert.equal(other.status, 404);
  assert.match(other.headers.get('content-type')!, /^application\/problem\+json/);
});
