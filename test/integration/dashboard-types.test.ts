// The dashboard is type-checked against the types the SDK generates from this instance's own
// OpenAPI document, so an API change that breaks the UI fails here; a document with a field the
// UI reads renamed shows that it would.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { generate } from '../../sdk/scripts/generate.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { call } from '../support/http.ts';
import { ROOT, runNode, TSC } from '../support/sdk-build.ts';

let app: TestApp;
let dir: string;
let document: string;

before(async () => {
  app = await startTestApp();
  dir = mkdtempSync(join(tmpdir(), 'dashboard-types-'));
  document = (await call(app.url, 'GET', '/api/openapi.json')).text;
});
after(async () => {
  rmSync(dir, { recursive: true, force: true });
  await app.close();
});

/** tsc over web/ with @api/schema generated from this document text. */
async function typeCheckWeb(name: string, documentText: string) {
  const generated = join(dir, name);
  await generate(documentText, generated);
  const config = join(dir, `${name}.tsconfig.json`);
  writeFileSync(config, JSON.stringify({
    extends: join(ROOT, 'web/tsconfig.json'),
    compilerOptions: { paths: { '@api/schema': [join(generated, 'schema.ts')] } },
    include: [join(ROOT, 'web/src')],
  }));
  return runNode(ROOT, [TSC, '-p', config]);
}

test('the dashboard type-checks against the live document', async () => {
  const { code, out } = await typeCheckWeb('live', document);
  assert.equal(code, 0, out);
});

test('a field the dashboard reads, renamed in the document, fails the type-check where it is read', async () => {
  const doc = JSON.parse(document);
  const run = doc.components.schemas.Run;
  run.properties.run_status = run.properties.status;
  delete run.properties.status;
  run.required = run.required.map((f: string) => (f === 'status' ? 'run_status' : f));
  const { code, out } = await typeCheckWeb('renamed', JSON.stringify(doc));
  assert.notEqual(code, 0);
  assert.match(out, /web\/src\/pages\/run[\w-]*\.tsx\(\d+,\d+\): error TS2339: Property 'status' does not exist/);
});
