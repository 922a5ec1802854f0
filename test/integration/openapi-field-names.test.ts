// One naming rule for the wire: every property name of every request and response schema in the
// OpenAPI document the app serves, and every query parameter, is snake_case, except the
// identifiers the spec itself spells in camelCase (listed below, each with where the spec says so).
// A new camelCase field fails here; the walker is proven on a synthetic document first.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { call } from '../support/http.ts';

/**
 * The camelCase names the spec keeps (/work/shared/spec/agent-platform-api.md). Nothing else may
 * join this list without a line of the spec to cite.
 */
const SPEC_EXCEPTIONS: Record<string, string> = {
  // "### List envelope": "a few identifiers keep camelCase (id, userId, createdAt, spaceId, packageId, payloadMode, expiresAt)"
  userId: 'List envelope',
  createdAt: 'List envelope',
  spaceId: 'List envelope',
  packageId: 'List envelope',
  payloadMode: 'List envelope',
  expiresAt: 'List envelope',
  // "### List envelope": "object is the string list; data is an array; hasMore is boolean"
  hasMore: 'List envelope',
  // "### Webhook record": "| createdAt, updatedAt | ISO 8601 date-time |" (and the skill package record's fields)
  updatedAt: 'Webhook record',
  // "### API key": "Create response fields: id, key (full key, returned once only), keyPrefix, scopes"
  keyPrefix: 'API key',
  // "### Skill package record": "id, orgId, name, ..."; "### Realtime": "orgId and spaceId (with a session cookie)"
  orgId: 'Skill package record; Realtime',
  // "### End-user": "Create body fields: externalId (string, unique within the space ...)"
  externalId: 'End-user',
  // "### OIDC access tokens": "controlled per client by allowSignup (closed by default)"
  allowSignup: 'OIDC access tokens',
  // "### End-users and webhooks": "GET /api/end-users | cursor-paged (startingAfter, endingBefore)"
  startingAfter: 'End-users and webhooks (query)',
  endingBefore: 'End-users and webhooks (query)',
};

const SNAKE = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/;

type Json = Record<string, any>;

/**
 * Every property name (and query parameter) of the document's operations that is neither
 * snake_case nor a spec exception, each with where it was found. Schemas reached through $ref are
 * walked once, named by their component.
 */
export function nonSnakeNames(doc: Json, exceptions: Record<string, string> = SPEC_EXCEPTIONS): string[] {
  const found = new Set<string>();
  const seen = new Set<unknown>();
  const resolve = (ref: string): unknown => ref.replace(/^#\//, '').split('/').reduce<any>((o, k) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
  const judge = (name: string, where: string) => {
    if (!SNAKE.test(name) && !Object.hasOwn(exceptions, name)) found.add(`${name} (${where})`);
  };
  const walk = (schema: unknown, where: string): void => {
    if (!schema || typeof schema !== 'object' || seen.has(schema)) return;
    seen.add(schema);
    if (Array.isArray(schema)) {
      for (const s of schema) walk(s, where);
      return;
    }
    const s = schema as Json;
    if (typeof s.$ref === 'string') walk(resolve(s.$ref), s.$ref.split('/').pop()!);
    if (s.properties && typeof s.properties === 'object') {
      for (const [name, sub] of Object.entries(s.properties)) {
        judge(name, where);
        walk(sub, where);
      }
    }
    for (const key of ['items', 'additionalProperties', 'not', 'allOf', 'anyOf', 'oneOf', 'prefixItems']) walk(s[key], where);
  };
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<Json>(item)) {
      if (!op || typeof op !== 'object' || !('responses' in op)) continue;
      const where = `${method.toUpperCase()} ${path}`;
      for (const p of [...(item.parameters ?? []), ...(op.parameters ?? [])]) {
        const param = typeof p.$ref === 'string' ? (resolve(p.$ref) as Json) : p;
        if (param?.in === 'query') judge(param.name, `${where} query`);
      }
      for (const media of Object.values<Json>(op.requestBody?.content ?? {})) walk(media.schema, `${where} request`);
      for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
        const r = typeof response.$ref === 'string' ? (resolve(response.$ref) as Json) : response;
        for (const media of Object.values<Json>(r?.content ?? {})) walk(media.schema, `${where} ${status}`);
      }
    }
  }
  return [...found].sort();
}

describe('the walker', () => {
  const synthetic = (extra: Json): Json => ({
    openapi: '3.1.0',
    paths: {
      '/api/things': {
        post: {
          parameters: [{ in: 'query', name: 'startingAfter' }, { in: 'header', name: 'X-Org-Id' }, { $ref: '#/components/parameters/Page' }],
          requestBody: { content: { 'application/json': { schema: { type: 'object', properties: { display_name: { type: 'string' }, ...extra.request } } } } },
          responses: { 201: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } } },
        },
      },
    },
    components: {
      parameters: { Page: { in: 'query', name: extra.query ?? 'limit' } },
      schemas: {
        Thing: {
          type: 'object',
          properties: {
            id: { type: 'string' }, createdAt: { type: 'string' },
            parts: { type: 'array', items: { anyOf: [{ type: 'object', properties: { part_no: { type: 'integer' }, ...extra.nested } }, { type: 'null' }] } },
          },
        },
      },
    },
  });

  test('a document of snake_case names and spec exceptions passes', () => {
    assert.deepEqual(nonSnakeNames(synthetic({})), []);
  });

  test('a new camelCase field fails, wherever it hides: request, nested response item, query parameter', () => {
    assert.deepEqual(nonSnakeNames(synthetic({ request: { ownerUserId: { type: 'string' } } })), ['ownerUserId (POST /api/things request)']);
    assert.deepEqual(nonSnakeNames(synthetic({ nested: { mimeType: { type: 'string' } } })), ['mimeType (Thing)']);
    assert.deepEqual(nonSnakeNames(synthetic({ query: 'pageSize' })), ['pageSize (POST /api/things query)']);
  });

  test('an exception counts only while it is listed', () => {
    assert.deepEqual(nonSnakeNames(synthetic({}), {}), ['createdAt (Thing)', 'startingAfter (POST /api/things query)']);
  });
});

describe('the served OpenAPI document', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app?.close());

  test('every request and response field and query parameter is snake_case or a camelCase identifier the spec lists', async () => {
    const res = await call(app.url, 'GET', '/api/openapi.json');
    assert.equal(res.status, 200);
    const doc = JSON.parse(res.text);
    assert.ok(Object.keys(doc.paths).length > 50, 'the whole document was walked');
    assert.deepEqual(nonSnakeNames(doc), []);
  });

  test('every listed exception is still used by the document (the list holds no stale entry)', async () => {
    const doc = JSON.parse((await call(app.url, 'GET', '/api/openapi.json')).text);
    const used = new Set(nonSnakeNames(doc, {}).map((s) => s.split(' ')[0]));
    assert.deepEqual(Object.keys(SPEC_EXCEPTIONS).filter((name) => !used.has(name)), []);
  });
});
