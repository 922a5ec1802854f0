// The spec's rule for request parameters (Errors): a single bad query parameter or header is 400
// with `param` naming it and no errors[] (code invalid_request, or the catalog's own code for that
// header). Checked over the instance's own document: every query parameter of every operation whose
// schema a value can break, and every request header the document declares (each with a case here;
// a new header without one fails the last test).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg, aSession, type BuiltOrg } from '../support/builders.ts';
import { call, type CallOptions, type WireResponse } from '../support/http.ts';

let app: TestApp;
let org: BuiltOrg;
let key: string;
let cookie: string;
let document: { paths: Record<string, Record<string, Operation>> };

interface Parameter { name: string; in: string; required?: boolean; schema?: Schema }
interface Schema { type?: string | string[]; enum?: unknown[]; pattern?: string; format?: string; minLength?: number; maxLength?: number; anyOf?: Schema[] }
interface Operation { parameters?: Parameter[]; security?: unknown[] }

before(async () => {
  app = await startTestApp();
  org = await anOrg(app.deps.database.pool);
  ({ key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId }));
  ({ cookie } = await aSession(app.deps.database.pool, org.ownerId));
  document = (await call(app.url, 'GET', '/api/openapi.json')).body;
});
after(async () => app?.close());

/** The problem is about that one parameter: 400, param names it, no errors[]. */
function assertParamFault(res: WireResponse, param: string, codes: string[], what: string): void {
  assert.equal(res.status, 400, `${what}: ${res.status} ${res.text.slice(0, 300)}`);
  assert.equal(res.headers.get('content-type')?.split(';')[0], 'application/problem+json', what);
  assert.ok(codes.includes(res.body.code), `${what}: code ${res.body.code}, expected ${codes.join(' or ')}`);
  assert.equal(res.body.param, param, `${what}: param`);
  assert.equal(res.body.errors, undefined, `${what}: a parameter fault carries no errors[]`);
  assert.match(res.headers.get('request-id') ?? '', /^req_/, what);
}

/** A value the schema refuses, or undefined when any string would do. */
function breaking(schema: Schema | undefined): string | undefined {
  if (!schema) return undefined;
  const s = schema.anyOf?.find((x) => x.type !== 'null') ?? schema;
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  if (s.enum) return 'fz-made-up';
  if (type === 'integer' || type === 'number') return 'x1';
  if (type === 'boolean') return 'fz';
  if (s.pattern && !new RegExp(s.pattern, 'u').test('~fz~')) return '~fz~';
  if (s.format === 'date-time') return 'not-a-date';
  if (s.maxLength !== undefined) return 'a'.repeat(s.maxLength + 1);
  return undefined;
}

/** Path parameters filled with values their schemas accept, so the query is what is judged. */
const PATH_VALUES: Record<string, string> = { scope: '@fixtures', name: 'agent-echo', version: '1.0.0', packageId: '@fixtures%2Fagent-echo' };
function fillPath(path: string): string {
  return path.replace(/\{([^}]+)\}/g, (_m, p: string) => {
    if (p === 'orgId') return org.orgId;
    if (p === 'spaceId') return org.spaceId;
    return PATH_VALUES[p] ?? 'x';
  });
}

test('every query parameter a value can break: 400 invalid_request with param, no errors[]', async () => {
  let checked = 0;
  const faults: string[] = [];
  for (const [path, ops] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      // the OpenID provider's endpoints answer by RFC 6749 (an error redirected to the client, or an
      // OAuth JSON error or page): their bodies are checked by oidc-openapi.test.ts
      if ((op as { tags?: string[] }).tags?.includes('OpenID provider')) continue;
      for (const p of op.parameters ?? []) {
        if (p.in !== 'query') continue;
        const value = breaking(p.schema);
        if (value === undefined) continue;
        const url = `${fillPath(path)}?${new URLSearchParams({ [p.name]: value })}`;
        const opts: CallOptions = { cookie, org: org.orgId, space: org.spaceId };
        if (method !== 'get' && method !== 'delete') opts.body = {};
        const res = await call(app.url, method.toUpperCase(), url, opts);
        checked += 1;
        try {
          assertParamFault(res, p.name, ['invalid_request'], `${method.toUpperCase()} ${url}`);
        } catch (err) {
          faults.push((err as Error).message.split('\n')[0]);
        }
      }
    }
  }
  assert.deepEqual(faults, []);
  // the document declares query parameters on lists, streams and sign-in: an empty pass proves nothing
  assert.ok(checked >= 20, `only ${checked} query parameters checked`);
});

test('realtime streams refuse a made-up verbose value (verbose=fz) before anything is streamed', async () => {
  for (const path of ['/api/realtime/runs', '/api/realtime/runs/run_x', '/api/realtime/agents/@fixtures%2Fagent-echo/runs']) {
    // a stream opened instead would never end: the answer's head is read within a bound
    const res = await fetch(`${app.url}${path}?verbose=fz&token=${key}`, { signal: AbortSignal.timeout(10_000) });
    const text = res.headers.get('content-type')?.startsWith('text/event-stream') ? (await res.body?.cancel(), '') : await res.text();
    assertParamFault({ status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : {} }, 'verbose', ['invalid_request'], path);
  }
});

test('query parameters a handler checks itself follow the same rule: the OAuth callback without state', async () => {
  const res = await call(app.url, 'GET', '/api/integrations/connect/callback?code=abc');
  assertParamFault(res, 'state', ['invalid_request'], 'callback without state');
});

/** A request to the credential proxy with these headers over the defaults; null drops one. */
function proxyCall(over: Record<string, string | null>): Promise<WireResponse> {
  const base: Record<string, string> = { 'X-Integration-Id': '@acme/crm', 'X-Target': 'https://api.example.test/x', 'X-Session-Id': randomUUID() };
  for (const [k, v] of Object.entries(over)) {
    if (v === null) delete base[k];
    else base[k] = v;
  }
  return call(app.url, 'GET', '/api/credential-proxy/proxy', { key, headers: base });
}

/** One case per request header the document declares: how a bad value is sent, and what answers it. */
const HEADER_CASES: Record<string, { codes: string[]; send: () => Promise<WireResponse> } | { exempt: string }> = {
  'X-Session-Id': { codes: ['invalid_request'], send: () => proxyCall({ 'X-Session-Id': 'not-a-uuid' }) },
  'X-Target': { codes: ['invalid_request'], send: () => proxyCall({ 'X-Target': null }) },
  'X-Integration-Id': { codes: ['invalid_request'], send: () => proxyCall({ 'X-Integration-Id': null }) },
  'X-Connection-Id': { codes: ['invalid_request'], send: () => proxyCall({ 'X-Connection-Id': 'not-a-uuid' }) },
  'X-Run-Id': { codes: ['usage_context_required'], send: () => call(app.url, 'POST', '/api/llm-proxy/chat/completions', { key, headers: { 'X-Run-Id': 'not a run' }, body: { model: 'x', messages: [] } }) },
  'Service-Version': { codes: ['invalid_api_version'], send: () => call(app.url, 'GET', '/api/runs', { key, headers: { 'Service-Version': 'yesterday' } }) },
  'Idempotency-Key': { codes: ['invalid_idempotency_key'], send: () => call(app.url, 'POST', '/api/end-users', { key, headers: { 'Idempotency-Key': 'k'.repeat(256) }, body: { externalId: 'e', name: 'E' } }) },
  'Service-User': { codes: ['invalid_end_user_id'], send: () => call(app.url, 'GET', '/api/runs', { key, headers: { 'Service-User': 'not an end-user id' } }) },
  'X-View-As': { codes: ['invalid_view_as'], send: () => call(app.url, 'GET', '/api/runs', { cookie, org: org.orgId, space: org.spaceId, headers: { 'X-View-As': 'emperor' } }) },
  'MCP-Protocol-Version': { codes: ['invalid_request'], send: () => call(app.url, 'POST', `/api/mcp/o/${org.orgId}`, { key, headers: { 'MCP-Protocol-Version': '1999-01-01', accept: 'application/json, text/event-stream' }, body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } }) },
  'X-Space-Id': { codes: ['invalid_request'], send: () => call(app.url, 'GET', '/api/runs', { cookie, org: org.orgId }) },
  'X-Org-Id': { exempt: 'an organization that is not the caller\'s is 403 forbidden or 404 (spec: Context headers), not a malformed request' },
  'If-Match': { exempt: 'a stale or foreign ETag is 412 precondition_failed with the current ETag (schedules.test.ts, packages-drafts.test.ts); missing where required is 428' },
  'If-None-Match': { exempt: 'a validator that does not match is answered with the content, never an error' },
  Range: { exempt: 'a range in another unit or several ranges are answered whole (RFC 9110 14.2); an unsatisfiable one is 416' },
};

test('every request header the document declares has a case here; each bad header names itself in param, without errors[]', async () => {
  const declared = new Set<string>();
  for (const ops of Object.values(document.paths)) {
    for (const op of Object.values(ops)) for (const p of op.parameters ?? []) if (p.in === 'header') declared.add(p.name);
  }
  const missing = [...declared].filter((h) => !(h in HEADER_CASES));
  assert.deepEqual(missing, [], 'declared request headers without a case in HEADER_CASES');
  const faults: string[] = [];
  for (const [name, c] of Object.entries(HEADER_CASES)) {
    if ('exempt' in c) continue;
    try {
      assertParamFault(await c.send(), name, c.codes, name);
    } catch (err) {
      faults.push((err as Error).message.split('\n')[0]);
    }
  }
  assert.deepEqual(faults, []);
});
