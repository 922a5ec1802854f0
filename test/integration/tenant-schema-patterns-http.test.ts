// Tenant schema patterns through the API: a catastrophic pattern cannot hold the API (a launch
// validating against it answers at once, and so does a request served meanwhile); patterns the
// linear-time engine cannot run are refused at import, draft save, inline validate and launch;
// a stored version that predates the check is refused at launch, never run on the native engine.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { aKey, anOrg } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { startAppProcess, type AppProcess } from './packages-app-process.ts';
import { agentFiles, upload, zip } from './packages-harness.ts';

const CATASTROPHIC = '^(a+)+$';
const EVIL_INPUT = `${'a'.repeat(40)}!`;
const BACKREFERENCE = '^(a)\\1$';

const inputSchema = (pattern: string) => ({
  schema: { type: 'object', properties: { code: { type: 'string', pattern } }, required: ['code'] },
});

// the API in a process of its own: a stalled main thread there shows as slow answers here
let platform: AppProcess;
let pool: pg.Pool;
let key: string;
let api: ReturnType<typeof client>;

async function importAgent(name: string, pattern: string) {
  return upload(platform.url, '/api/packages/import', zip(agentFiles(name, '1.0.0', { input: inputSchema(pattern) })), { key });
}

/** A request with a deadline, so a stalled API fails the test instead of hanging it; answers status and elapsed ms. */
async function timedFetch(path: string, init: RequestInit = {}): Promise<{ status: number; body: any; ms: number }> {
  const start = performance.now();
  const res = await fetch(platform.url + path, {
    ...init,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...(init.headers as Record<string, string> | undefined) },
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, ms: performance.now() - start };
}

before(async () => {
  platform = await startAppProcess();
  pool = new pg.Pool({ connectionString: platform.databaseUrl, max: 2 });
  const org = await anOrg(pool);
  ({ key } = await aKey(pool, { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId }));
  api = client(platform.url, { key });
});
after(async () => {
  await pool.end();
  await platform.close();
});

describe('a catastrophic pattern cannot stall the API', () => {
  test('a launch validating against it answers invalid_input at once, and a request served meanwhile is answered too', async () => {
    const imported = await importAgent('@acme/slow', CATASTROPHIC);
    assert.equal(imported.status, 201, imported.text);
    const [launch, health, list] = await Promise.all([
      timedFetch('/api/agents/@acme/slow/run', { method: 'POST', body: JSON.stringify({ input: { code: EVIL_INPUT } }) }),
      timedFetch('/health/live'),
      timedFetch('/api/packages'),
    ]);
    assert.equal(launch.status, 400);
    assert.equal(launch.body.code, 'invalid_input');
    assert.deepEqual(launch.body.errors.map((e: any) => e.field), ['input.code']);
    assert.ok(launch.ms < 2000, `the launch took ${launch.ms} ms`);
    assert.equal(health.status, 200);
    assert.ok(health.ms < 2000, `the request served meanwhile took ${health.ms} ms`);
    assert.equal(list.status, 200);
    assert.ok(list.ms < 2000, `the package list served meanwhile took ${list.ms} ms`);
  });

  test('inline validate with the same pattern and input answers invalid_input at once', async () => {
    const manifest = { name: '@inline/slow', version: '0.1.0', type: 'agent', schema_version: '0.3', input: inputSchema(CATASTROPHIC) };
    const res = await timedFetch('/api/runs/inline/validate', { method: 'POST', body: JSON.stringify({ manifest, prompt: 'hi', input: { code: EVIL_INPUT } }) });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'invalid_input');
    assert.ok(res.ms < 2000, `took ${res.ms} ms`);
  });
});

describe('patterns the linear-time engine cannot run are refused', () => {
  test('at import: invalid_manifest naming the schema path and the pattern', async () => {
    for (const [name, pattern, reason] of [['@acme/backref', BACKREFERENCE, /backreference/], ['@acme/lookahead', '^a(?=b)', /lookahead/]] as const) {
      const res = await importAgent(name, pattern);
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.code, 'invalid_manifest');
      assert.ok(res.body.detail.includes('/properties/code/pattern'), res.body.detail);
      assert.ok(res.body.detail.includes(JSON.stringify(pattern)), res.body.detail);
      assert.match(res.body.detail, reason);
      assert.equal(res.body.errors[0].field, 'input.schema');
    }
    assert.equal((await api.get('/api/packages/@acme/backref')).status, 404);
  });

  test('at draft save: invalid_draft_manifest', async () => {
    assert.equal((await importAgent('@acme/editable', '^[a-z]+$')).status, 201);
    const draft = await api.get('/api/packages/@acme/editable/draft');
    assert.equal(draft.status, 200, draft.text);
    const manifest = { ...draft.body.manifest, input: inputSchema('(?<!x)y') };
    const saved = await api.put('/api/packages/@acme/editable/draft', { manifest }, { headers: { 'if-match': draft.headers.get('etag')! } });
    assert.equal(saved.status, 400, saved.text);
    assert.equal(saved.body.code, 'invalid_draft_manifest');
    assert.match(saved.body.detail, /\/properties\/code\/pattern: pattern "\(\?<!x\)y" uses lookahead or lookbehind/);
  });

  test('at inline validate and inline launch: invalid_inline_manifest', async () => {
    const manifest = { name: '@inline/backref', version: '0.1.0', type: 'agent', schema_version: '0.3', input: inputSchema(BACKREFERENCE) };
    for (const path of ['/api/runs/inline/validate', '/api/runs/inline']) {
      const res = await api.post(path, { manifest, prompt: 'hi', input: { code: 'aa' } });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.code, 'invalid_inline_manifest');
      assert.equal(res.body.errors[0].field, 'manifest.input.schema');
      assert.ok(res.body.errors[0].message.includes(`/properties/code/pattern: pattern ${JSON.stringify(BACKREFERENCE)}`), res.body.errors[0].message);
    }
  });

  test('a stored version that predates the check is refused at launch with bundle_invalid', async () => {
    assert.equal((await importAgent('@acme/legacy', '^[a-z]+$')).status, 201);
    // as a version imported before patterns were checked would be stored
    const updated = await pool.query(
      `UPDATE package_versions SET manifest = jsonb_set(manifest, '{input,schema,properties,code,pattern}', to_jsonb($1::text))
        WHERE package_id = '@acme/legacy'`,
      [BACKREFERENCE],
    );
    assert.equal(updated.rowCount, 1);
    const res = await api.post('/api/agents/@acme/legacy/run', { input: { code: 'aa' } });
    assert.equal(res.status, 422, res.text);
    assert.equal(res.body.code, 'bundle_invalid');
    assert.match(res.body.detail, /input schema cannot be evaluated/);
    assert.ok(res.body.detail.includes(JSON.stringify(BACKREFERENCE)), res.body.detail);
  });
});
