// The model an agent's configuration names must be one of the organization's own models.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestApp, type TestApp } from '../support/app.ts';
import { call } from '../support/http.ts';
import { aTenant, type Tenant } from '../support/tenant-world.ts';

let app: TestApp;
let a: Tenant;
let b: Tenant;
before(async () => {
  app = await startTestApp();
  a = await aTenant(app);
  b = await aTenant(app);
});
after(() => app.close());

const configPath = () => `/api/agents/@${a.packageScope}/${a.agentName}/config`;
const put = (body: unknown) => call(app.url, 'PUT', configPath(), { key: a.ownerKey1, body });
const stored = async () => (await call(app.url, 'GET', configPath(), { key: a.ownerKey1 })).body.model_id;

test("a model of another organization, or none at all, is refused with model_not_configured and nothing is stored", async () => {
  for (const modelId of [b.modelId, 'mdl_does_not_exist']) {
    const res = await put({ model_id: modelId });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.code, 'model_not_configured');
    assert.equal(res.body.errors?.[0]?.field, 'model_id');
    assert.ok(res.body.detail.includes(modelId));
  }
  assert.equal(await stored(), null);
});

test("the organization's own model is stored, and null returns to the default", async () => {
  const own = await put({ model_id: a.modelId });
  assert.equal(own.status, 200, own.text);
  assert.equal(await stored(), a.modelId);
  assert.equal((await put({ model_id: null })).status, 200);
  assert.equal(await stored(), null);
});
