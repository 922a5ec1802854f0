// Arranging what a run needs, through the API as an integrator would: a model provider (the
// scripted fake model), a default model, and an imported agent placed in the key's space.
import assert from 'node:assert/strict';
import { buildFixtureArchive } from '../fixtures/build-packages.ts';
import { call } from './http.ts';

export async function importPackage(base: string, key: string, archive: Buffer, filename = 'package.afps'): Promise<{ packageId: string; version: string }> {
  const form = new FormData();
  form.append('file', new Blob([archive]), filename);
  const res = await fetch(`${base}/api/packages/import`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const body = (await res.json()) as { packageId: string; version: string; code?: string; detail?: string };
  assert.ok(res.status === 201 || res.status === 200, `import failed: ${res.status} ${body.code} ${body.detail}`);
  return body;
}

export async function importFixture(base: string, key: string, name: string): Promise<{ packageId: string; version: string }> {
  return importPackage(base, key, buildFixtureArchive(name), `${name}.afps`);
}

/** A credential on the fake model server and a default model on it; returns the model id. */
export async function aDefaultModel(base: string, key: string, fakeModelUrl: string, model = 'fake'): Promise<string> {
  const cred = await call(base, 'POST', '/api/model-provider-credentials', {
    key, body: { provider: 'openai-compatible', name: `fake ${model}`, base_url: fakeModelUrl, api_key: 'sk-fake-provider-key' },
  });
  assert.equal(cred.status, 201, `credential: ${cred.text}`);
  const m = await call(base, 'POST', '/api/models', { key, body: { credential_id: cred.body.id, model, name: model, is_default: true } });
  assert.equal(m.status, 201, `model: ${m.text}`);
  return m.body.id;
}
