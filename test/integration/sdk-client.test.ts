// The SDK under sdk/: built from the live document's generated types, its README's first run
// type-checks with no cast and runs green; against the API it surfaces problems as
// PlatformError, retries a 429 and a 503 after Retry-After under one Idempotency-Key, waits for a
// run's ending and walks three pages of runs by their Link headers.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createCoreClient, createHelpers, platformFetch, PlatformError } from '../../sdk/src/core.ts';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { aDefaultModel, endEchoRun, importFixture } from '../support/runs.ts';
import { buildSdk, programUsingSdk, readmeFirstRun, ROOT, runNode, SDK, typeCheckProgram } from '../support/sdk-build.ts';

let fake: Awaited<ReturnType<typeof startFakeModel>>;
let app: TestApp;
let key: string;
let keyId: string;
let dir: string;

before(async () => {
  fake = await startFakeModel();
  app = await startTestApp({ env: { EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host } });
  const org = await anOrg(app.deps.database.pool);
  ({ key, keyId } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId }));
  await importFixture(app.url, key, 'agent-echo');
  await aDefaultModel(app.url, key, fake.url);
  dir = mkdtempSync(join(tmpdir(), 'sdk-'));
});
after(async () => {
  rmSync(dir, { recursive: true, force: true });
  await app.close();
  await fake.close();
});

const endRun = (runId: string) => endEchoRun(app, runId);

describe('the package', () => {
  let sdkPath: string;

  test('is versioned with the platform, ESM with its types', () => {
    const pkg = JSON.parse(readFileSync(join(SDK, 'package.json'), 'utf8'));
    assert.equal(pkg.version, JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);
    assert.equal(pkg.type, 'module');
    assert.equal(pkg.exports['.'].types, './dist/index.d.ts');
  });

  test('builds from the types generated from the live document', async () => {
    const built = await buildSdk(dir, (await call(app.url, 'GET', '/api/openapi.json')).text);
    assert.equal(built.code, 0, built.out);
    sdkPath = built.path;
    assert.match(readFileSync(join(sdkPath, 'src/generated/operations.ts'), 'utf8'), /"POST \/api\/agents\/\{scope\}\/\{name\}\/run"/);
    assert.ok(readFileSync(join(sdkPath, 'dist/index.d.ts'), 'utf8').includes('createPlatformClient'));
  });

  test("the README's first run has no cast, type-checks under --strict, and runs green", async () => {
    const source = readmeFirstRun(readFileSync(join(SDK, 'README.md'), 'utf8'));
    assert.ok(source.trim().split('\n').length <= 22, 'about twenty lines');
    assert.doesNotMatch(source, /\bas\s+(never|any|unknown)\b|@ts-(ignore|expect-error|nocheck)/);
    const program = programUsingSdk(dir, sdkPath, source);
    const checked = await typeCheckProgram(program);
    assert.equal(checked.code, 0, checked.out);

    let ending: Promise<void> | undefined;
    const ran = await runNode(program, ['--import', 'tsx', 'first-run.ts'], { BASE_URL: app.url, API_KEY: key }, (line) => {
      const launched = /^launched (run_\S+)/.exec(line);
      if (launched) ending = endRun(launched[1]);
    });
    await ending;
    assert.equal(ran.code, 0, ran.out);
    assert.match(ran.out, /^ended success \{"output":\{"echo":"hello"\}\}$/m);
    assert.match(ran.out, /^listed run_\S+ success$/m);
  });

  test('the types are the operations\' own: a wrong body, path or item field does not compile', async () => {
    const program = join(dir, 'app');
    writeFileSync(join(program, 'first-run.ts'), [
      "import { createPlatformClient } from '@agent-platform/sdk';",
      "const api = createPlatformClient({ baseUrl: 'http://127.0.0.1:1' });",
      "await api.POST('/api/agents/{scope}/{name}/run', { params: { path: { scope: '@a', name: 'b' } }, body: { input: 'not an object' } });",
      "await api.GET('/api/no-such-route');",
      "for await (const r of api.paginate('/api/runs')) console.log(r.no_such_field);",
    ].join('\n'));
    const checked = await typeCheckProgram(program);
    assert.notEqual(checked.code, 0);
    assert.match(checked.out, /first-run\.ts\(3,/);
    assert.match(checked.out, /first-run\.ts\(4,/);
    assert.match(checked.out, /first-run\.ts\(5,.*no_such_field/);
  });
});

describe('against the API', () => {
  const seen: Array<{ method: string; url: string; status: number; key: string | null }> = [];
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const res = await fetch(request);
    seen.push({ method: request.method, url: request.url, status: res.status, key: request.headers.get('idempotency-key') });
    return res;
  };
  const options = () => ({ baseUrl: app.url, apiKey: key, fetch: recording, idempotentOperations: ['POST /api/end-users', 'POST /api/agents/{scope}/{name}/run'] });

  test('a problem is thrown as a PlatformError with status, code, request_id and errors', async () => {
    const send = platformFetch(options());
    const err = await send(`${app.url}/api/end-users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ externalId: 'x', name: 5, nope: true }) }).then(() => null, (e: unknown) => e);
    assert.ok(err instanceof PlatformError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.code, 'validation_failed');
    assert.match(err.request_id ?? '', /^req_/);
    assert.deepEqual(err.errors.map((e) => e.field).sort(), ['name', 'nope']);
    const missing = await send(`${app.url}/api/runs/run_missing`).then(() => null, (e: unknown) => e);
    assert.ok(missing instanceof PlatformError && missing.status === 404, String(missing));
  });

  test('a 429 is retried after Retry-After, under the same Idempotency-Key', async () => {
    // the route's real bucket, filled to its limit for a window that ends in about a second
    const bucket = `rl:POST:/api/end-users:apikey:${keyId}`;
    await app.deps.cache.delete(bucket);
    for (let i = 0; i < 60; i++) await app.deps.cache.increment(bucket, 1200);
    const api = createCoreClient<Record<string, any>>(options());
    seen.length = 0;
    const started = Date.now();
    const res = await api.POST('/api/end-users', { body: { externalId: 'retried', name: 'Retried' } });
    assert.equal(res.response.status, 201);
    assert.deepEqual(seen.map((s) => s.status), [429, 201]);
    assert.ok(Date.now() - started >= 900, 'waited for Retry-After');
    assert.ok(seen[0].key && seen[0].key === seen[1].key, 'one key for both attempts');
  });

  test('a 503 while the server starts is retried after Retry-After', async () => {
    const api = createCoreClient<Record<string, any>>(options());
    app.deps.lifecycle.ready = false;
    setTimeout(() => (app.deps.lifecycle.ready = true), 300);
    seen.length = 0;
    const res = await api.GET('/api/end-users', {});
    assert.equal(res.response.status, 200);
    assert.deepEqual(seen.map((s) => s.status), [503, 200]);
  });

  test('waitForRun answers once the run has ended', async () => {
    const api = createCoreClient<Record<string, any>>(options());
    const launched = await api.POST('/api/agents/{scope}/{name}/run', { params: { path: { scope: '@fixtures', name: 'agent-echo' } }, body: { input: { message: 'hi' } } });
    const id = launched.data.id;
    const ending = new Promise((r) => setTimeout(r, 300)).then(() => endRun(id));
    const ended = await api.waitForRun(id, { timeoutMs: 20_000 });
    await ending;
    assert.equal(ended.status, 'success');
  });

  test('paginate walks three pages of runs by their Link headers', async () => {
    const api = createCoreClient<Record<string, any>>(options());
    for (let i = 0; i < 5; i++) await api.POST('/api/agents/{scope}/{name}/run', { params: { path: { scope: '@fixtures', name: 'agent-echo' } }, body: { input: { message: `page ${i}` } } });
    const total = (await call(app.url, 'GET', '/api/runs', { key })).body.total;
    assert.ok(total >= 5, String(total));
    seen.length = 0;
    const ids: string[] = [];
    // a page size that makes exactly three pages of five runs or more
    for await (const r of createHelpers(options(), platformFetch(options())).paginate('/api/runs', { limit: Math.ceil(total / 3) })) ids.push(String(r.id));
    assert.equal(ids.length, total);
    assert.equal(new Set(ids).size, total);
    assert.equal(seen.length, 3, seen.map((s) => s.url).join(' '));
  });
});
