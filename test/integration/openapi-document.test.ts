// The credential-free resources: the OpenAPI 3.1 document (strong ETag, 304 on If-None-Match,
// valid, generated from the loaded modules), the interactive reference served from this
// instance only, /llms.txt and the health routes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { compileErrors, validate } from '@readme/openapi-parser';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { allRoutes } from '../../api/routes/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { call } from '../support/http.ts';

let app: TestApp;

before(async () => {
  app = await startTestApp();
});
after(() => app.close());

describe('GET /api/openapi.json', () => {
  test('answers 200 JSON with a strong ETag, no credential needed', async () => {
    const res = await call(app.url, 'GET', '/api/openapi.json');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^application\/json/);
    assert.match(res.headers.get('etag')!, /^"[^"]+"$/, 'a strong validator has no W/ prefix');
    assert.equal(res.body.openapi, '3.1.0');
  });

  test('If-None-Match with the ETag, among others, or * answers 304 with the ETag and no body', async () => {
    const etag = (await call(app.url, 'GET', '/api/openapi.json')).headers.get('etag')!;
    for (const inm of [etag, `"stale", ${etag}`, '*', `W/${etag}`]) {
      const res = await call(app.url, 'GET', '/api/openapi.json', { headers: { 'if-none-match': inm } });
      assert.equal(res.status, 304, inm);
      assert.equal(res.headers.get('etag'), etag);
      assert.equal(res.text, '');
    }
  });

  test('a stale If-None-Match gets the full document', async () => {
    const res = await call(app.url, 'GET', '/api/openapi.json', { headers: { 'if-none-match': '"not-the-current-one"' } });
    assert.equal(res.status, 200);
    assert.equal(res.body.openapi, '3.1.0');
  });

  test('the document passes OpenAPI validation', async () => {
    const res = await call(app.url, 'GET', '/api/openapi.json');
    const result = await validate(res.body);
    assert.ok(result.valid, result.valid ? '' : compileErrors(result));
  });

  test("an independent linter finds no error: Redocly's recommended rules plus RFC 9457 bodies on every 4xx", async () => {
    const res = await call(app.url, 'GET', '/api/openapi.json');
    const config = await createConfig({ extends: ['recommended'], rules: { 'operation-4xx-problem-details-rfc7807': 'error' } });
    const problems = await lintFromString({ source: res.text, absoluteRef: '/openapi.json', config });
    // Warnings accepted: the project declares no license, so there is no SPDX id or URL to give; and
    // dist-tags/{tag} (PUT, DELETE) beside {version}/download (GET) share a shape but never a method,
    // and a version is semver, never the word dist-tags.
    const accepted = (p: (typeof problems)[number]) =>
      p.ruleId === 'info-license-strict' ||
      (p.ruleId === 'no-ambiguous-paths' && p.message.includes('/dist-tags/{tag}') && p.message.includes('/{version}/download'));
    // The OAuth endpoints answer OAuth's own error bodies (RFC 6749, RFC 7591), as the spec says, and
    // the provider's browser pages (sign-in, consent, device code entry) answer HTML.
    const doc = JSON.parse(res.text);
    const at = (pointer: string) => pointer.slice(2).split('/').reduce((o: any, k) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    const oauthBody = (p: (typeof problems)[number]) => {
      if (p.ruleId !== 'operation-4xx-problem-details-rfc7807') return false;
      const content = at(p.location[0]?.pointer ?? '')?.content ?? {};
      return content['application/json']?.schema?.$ref === '#/components/schemas/OAuthError' || Object.keys(content).join() === 'text/html';
    };
    const left = problems.filter((p) => !oauthBody(p) && (p.severity === 'error' || !accepted(p)));
    assert.deepEqual(left.map((p) => `${p.severity} ${p.ruleId} ${p.location[0]?.pointer}: ${p.message}`), []);
  });

  test('every declared error response is a problem document', async () => {
    const doc = (await call(app.url, 'GET', '/api/openapi.json')).body;
    const missing: string[] = [];
    for (const [path, ops] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        for (const [status, response] of Object.entries<any>(op.responses ?? {})) {
          // readiness answers its own JSON status document while starting or draining
          if (path === '/health/ready' && status === '503') continue;
          // the OAuth endpoints answer RFC 6749 / RFC 7591 error bodies, not problem documents (spec)
          if (response.content?.['application/json']?.schema?.$ref === '#/components/schemas/OAuthError') continue;
          // the provider's browser pages answer HTML
          if (op.tags?.includes('OpenID provider') && Object.keys(response.content ?? {}).join() === 'text/html') continue;
          if (Number(status) >= 400 && !response.content?.['application/problem+json']) missing.push(`${method} ${path} ${status}`);
        }
      }
    }
    assert.deepEqual(missing, []);
    const createEndUser = doc.paths['/api/end-users'].post.responses;
    assert.ok(createEndUser['413'] && createEndUser['503'] && createEndUser['500'], 'the body limit, the gates and internal errors');
    assert.ok(!doc.paths['/api/end-users'].get.responses['413'], 'no body, no 413');
    assert.ok(!doc.paths['/health/live'].get.responses['503'], 'public routes stand before the gates');
  });

  test('the session scheme names the real cookie, the server is relative without PUBLIC_URL, and a license is stated', async () => {
    const doc = (await call(app.url, 'GET', '/api/openapi.json')).body;
    assert.deepEqual(doc.components.securitySchemes.session, { type: 'apiKey', in: 'cookie', name: 'agent_platform.session_token', description: doc.components.securitySchemes.session.description });
    assert.deepEqual(doc.servers, [{ url: '/' }]);
    assert.equal(typeof doc.info.license.name, 'string');
  });

  test("it includes the loaded modules' routes, the problem schema and the Idempotency-Key parameter where honored", async () => {
    const doc = (await call(app.url, 'GET', '/api/openapi.json')).body;
    assert.ok(doc.paths['/api/models']?.get, 'core-providers: GET /api/models');
    assert.ok(doc.paths['/api/end-users']?.post, 'POST /api/end-users');
    assert.ok(doc.components.schemas.Problem, 'the Problem schema');
    const createEndUser = doc.paths['/api/end-users'].post;
    assert.ok(createEndUser.parameters.some((p: any) => p.in === 'header' && p.name === 'Idempotency-Key'));
    assert.equal(createEndUser.responses['429'].content['application/problem+json'].schema.$ref, '#/components/schemas/Problem');
    assert.ok(createEndUser.parameters.some((p: any) => p.in === 'header' && p.name === 'Service-User'), 'keys act for an end-user');
    assert.ok(createEndUser.parameters.some((p: any) => p.in === 'header' && p.name === 'X-View-As'), 'role preview');
    assert.ok(!doc.paths['/api/api-keys'].post.parameters.some((p: any) => p.name === 'Service-User'), 'no key calls a session-only route');
    const listEndUsers = doc.paths['/api/end-users'].get;
    assert.ok(!listEndUsers.parameters.some((p: any) => p.name === 'Idempotency-Key'));
  });
});

test('a custom cookie prefix and PUBLIC_URL show in the document', async () => {
  const other = await startTestApp({ env: { SESSION_COOKIE_PREFIX: 'acme', PUBLIC_URL: 'http://127.0.0.1:9/base' } });
  try {
    const doc = (await call(other.url, 'GET', '/api/openapi.json')).body;
    assert.equal(doc.components.securitySchemes.session.name, 'acme.session_token');
    assert.deepEqual(doc.servers, [{ url: 'http://127.0.0.1:9/base' }]);
  } finally {
    await other.close();
  }
});

describe('GET /api/docs', () => {
  test('serves HTML whose every asset comes from this instance, and each asset loads', async () => {
    const res = await call(app.url, 'GET', '/api/docs');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/html/);
    assert.doesNotMatch(res.text, /https?:\/\/|(src|href)="\/\//, 'no CDN or absolute URL in the page');
    const assets = [...res.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    assert.ok(assets.length >= 3, `assets: ${assets.join(', ')}`);
    for (const asset of assets) {
      assert.match(asset, /^\/api\/docs\//, asset);
      const loaded = await fetch(app.url + asset);
      assert.equal(loaded.status, 200, asset);
      assert.ok((await loaded.arrayBuffer()).byteLength > 0, asset);
    }
    assert.ok(assets.some((a) => a.startsWith('/api/docs/assets/')), 'the bundled UI is served under /api/docs/assets');
  });
});

test('GET /llms.txt says how to authenticate, the errors by family, paging, idempotency, limits and the main bodies', async () => {
  const res = await call(app.url, 'GET', '/llms.txt');
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type')!, /^text\/plain/);
  assert.match(res.text, /^# /);
  for (const section of ['## Authentication', '## Errors', '## Pagination', '## Idempotency', '## Rate limits', '## Main request bodies']) assert.ok(res.text.includes(section), section);
  assert.match(res.text, /`POST \/api\/api-keys` with the session cookie and `X-Org-Id`, `X-Space-Id`/);
  assert.match(res.text, /cannot create, list or revoke keys/);
  const { errorCatalog } = await import('../../lib/error-catalog.ts');
  const undocumented = Object.keys(errorCatalog).filter((code) => !new RegExp(`[ ,]${code}(,|\n)`).test(res.text));
  assert.deepEqual(undocumented, []);
  assert.match(res.text, /^- 429: .*\brate_limited\b/m);
  assert.match(res.text, /`POST \/api\/agents\/\{scope\}\/\{name\}\/run`[^\n]*\n {2}body: \{input\?: \{\[key\]: any\}/);
  assert.match(res.text, /`POST \/api\/packages\/import`[^\n]*\n {2}body \(multipart\/form-data\): \{file: string\(binary\)\}/);
  assert.match(res.text, /`GET \/api\/models`/);
  assert.match(res.text, /POST \/api\/agents\/\{scope\}\/\{name\}\/run 20;/);
  assert.match(res.text, /POST \/api\/runs\/inline \d+;/, 'configured limits are given their value');
  assert.doesNotMatch(res.text, /\/internal\//);
});

test('GET /llms-full.txt gives every public operation with its schemas in compact form', async () => {
  const res = await call(app.url, 'GET', '/llms-full.txt');
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type')!, /^text\/plain/);
  const doc = (await call(app.url, 'GET', '/api/openapi.json')).body;
  const missing = Object.entries<any>(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `\`${m.toUpperCase()} ${path}\``)).filter((op) => !res.text.includes(op));
  // the reference page's script is no operation a model would call
  assert.deepEqual(missing, ['`GET /api/docs/reference.js`']);
  assert.match(res.text, /`GET \/api\/runs\/\{id\}`[^\n]*\n {2}query: wait\?: "true" \| number\(≥0\)\n {2}200: \{id: string, object: "run", status: "pending"\|/);
  assert.doesNotMatch(res.text, /\/internal\/|: any \| null/);
});

test('health: live and ready answer 200 ok without a credential', async () => {
  for (const path of ['/health/live', '/health/ready']) {
    const res = await call(app.url, 'GET', path);
    assert.equal(res.status, 200, path);
    assert.deepEqual(res.body, { status: 'ok' });
  }
});

describe('the document says what the server does', () => {
  const operations = (doc: any) => Object.entries<any>(doc.paths).flatMap(([path, ops]) => Object.entries<any>(ops).map(([method, op]) => ({ path, method, op })));

  test('session-only operations declare only the cookie scheme; runner-only routes are left out', async () => {
    const doc = (await call(app.url, 'GET', '/api/openapi.json')).body;
    const sessionOnly = operations(doc).filter(({ op }) => JSON.stringify(op.security) === JSON.stringify([{ session: [] }])).map(({ method, path }) => `${method} ${path}`);
    assert.deepEqual(sessionOnly.sort(), [
      'delete /api/api-keys/{id}', 'get /api/api-keys', 'get /api/api-keys/available-scopes', 'get /api/auth/link/social', 'get /api/auth/session',
      'post /api/api-keys', 'post /api/auth/change-password', 'post /api/auth/set-password', 'post /api/orgs',
      // joining a space acts for the person (a key is pinned to its own space)
      'post /api/spaces/{spaceId}/join',
      // chat module
      'delete /api/chat/sessions/{id}', 'get /api/chat/enforced-skills', 'get /api/chat/sessions', 'get /api/chat/sessions/{id}',
      'post /api/chat/sessions', 'post /api/chat/sessions/{id}/messages', 'put /api/chat/enforced-skills',
    ].sort());
    assert.deepEqual(doc.paths['/api/auth/sign-in/email'].post.security, []);
    assert.deepEqual(doc.paths['/api/end-users'].get.security, [{ bearer: [] }, { session: [] }]);
    assert.deepEqual(Object.keys(doc.paths).filter((p) => p.startsWith('/internal/')), []);
  });

  test('response headers by family: Request-Id everywhere, RateLimit on limited routes, Retry-After on 429 and 503, Link on lists, Location on creations', async () => {
    const doc = (await call(app.url, 'GET', '/api/openapi.json')).body;
    const missing: string[] = [];
    for (const { path, method, op } of operations(doc)) {
      for (const [status, response] of Object.entries<any>(op.responses)) {
        const has = (h: string) => Boolean(response.headers?.[h]);
        if (!has('Request-Id')) missing.push(`${method} ${path} ${status} Request-Id`);
        if (op['x-rate-limit-per-minute'] && !has('RateLimit')) missing.push(`${method} ${path} ${status} RateLimit`);
        if ((status === '429' || status === '503') && !has('Retry-After')) missing.push(`${method} ${path} ${status} Retry-After`);
        if (status === '201' && !path.startsWith('/api/auth/') && !has('Location')) missing.push(`${method} ${path} 201 Location`);
      }
    }
    assert.deepEqual(missing, []);
    for (const list of ['/api/runs', '/api/end-users', '/api/packages']) assert.ok(doc.paths[list].get.responses['200'].headers.Link, list);
    assert.ok(doc.paths['/api/end-users'].post.responses['201'].headers['Idempotent-Replayed']);
    assert.ok(doc.paths['/api/packages/{scope}/{name}/draft'].get.responses['200'].headers.ETag);
    assert.deepEqual(Object.keys(doc.components.headers).sort(), ['ETag', 'Idempotent-Replayed', 'Link', 'Location', 'Proxy-Status', 'RateLimit', 'RateLimit-Policy', 'Request-Id', 'Retry-After', 'Service-Version', 'WWW-Authenticate']);
  });

  test('uploads declare their bodies: the archive field and the JSON form of the import', async () => {
    const doc = (await call(app.url, 'GET', '/api/openapi.json')).body;
    const content = doc.paths['/api/packages/import'].post.requestBody.content;
    assert.equal(content['multipart/form-data'].schema.properties.file.format, 'binary');
    assert.ok(content['application/json'].schema.properties.manifest);
    assert.ok(doc.paths['/api/packages/import-bundle'].post.requestBody.content['multipart/form-data']);
    // a handler that reads its own body must say what it reads
    const undeclared = allRoutes().filter((r) => r.rawBody && r.stage !== 'internal' && !doc.paths[r.path][r.method].requestBody);
    assert.deepEqual(undeclared.map((r) => `${r.method} ${r.path}`), []);
  });

  test('numeric query parameters are integers with their default and maximum, never null', async () => {
    const doc = (await call(app.url, 'GET', '/api/openapi.json')).body;
    const param = (path: string, name: string) => doc.paths[path].get.parameters.find((p: any) => p.in === 'query' && p.name === name).schema;
    assert.deepEqual({ ...param('/api/runs', 'limit'), description: undefined }, { type: 'integer', minimum: 1, maximum: 100, default: 20, description: undefined });
    assert.equal(param('/api/agents/{scope}/{name}/runs', 'limit').default, 50);
    assert.equal(param('/api/runs/{id}/logs', 'limit').maximum, 1000);
    assert.equal(param('/api/runs/{id}/logs', 'since').type, 'integer');
    assert.equal(param('/api/runs', 'offset').type, 'integer');
    assert.deepEqual(param('/api/runs/{id}', 'wait').anyOf.map((s: any) => s.type), ['string', 'number']);
  });
});
