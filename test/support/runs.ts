// Arranging what a run needs, through the API as an integrator would: a model provider (the
// scripted fake model), a default model, and an imported agent placed in the key's space.
import assert from 'node:assert/strict';
import { buildFixtureArchive } from '../fixtures/build-packages.ts';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { startTestApp, type TestApp, type TestAppOptions } from './app.ts';
import { aKey, anOrg, type BuiltOrg } from './builders.ts';
import { call, client } from './http.ts';

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

export interface RunWorld {
  fake: FakeModel;
  app: TestApp;
  org: BuiltOrg;
  /** the owner's API key in the organization's default space */
  key: string;
  api: ReturnType<typeof client>;
  close(): Promise<void>;
}

/**
 * The in-process API with the scripted model as the organization's default model (allowed by
 * EGRESS_ALLOW_INTERNAL_HOSTS) and, unless `fixture` is null, a fixture agent imported.
 */
export async function aRunWorld(opts: { env?: Record<string, string>; app?: Omit<TestAppOptions, 'env'>; fixture?: string | null } = {}): Promise<RunWorld> {
  const fake = await startFakeModel();
  const app = await startTestApp({ ...opts.app, env: { EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host, ...opts.env } });
  const org = await anOrg(app.deps.database.pool);
  const { key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId });
  if (opts.fixture !== null) await importFixture(app.url, key, opts.fixture ?? 'agent-echo');
  await aDefaultModel(app.url, key, fake.url);
  return {
    fake, app, org, key,
    api: client(app.url, { key }),
    async close() {
      await app.close();
      await fake.close();
    },
  };
}

/** Ends a run of agent-echo as its sandbox would: started, its output, completed, each signed. */
export async function endEchoRun(app: TestApp, runId: string, output: unknown = { echo: 'hello' }): Promise<void> {
  const { rows } = await app.deps.database.pool.query('SELECT event_secret FROM runs WHERE id = $1', [runId]);
  const secret = app.deps.secrets.open(rows[0].event_secret);
  const events = [{ type: 'started', data: {} }, { type: 'output', data: { output } }, { type: 'completed', data: {} }];
  for (const [i, event] of events.entries()) {
    const raw = JSON.stringify({ sequence: i + 1, at: new Date().toISOString(), ...event });
    const res = await call(app.url, 'POST', `/internal/runs/${runId}/events`, { rawBody: raw, headers: { 'content-type': 'application/json', ...signedRunEventHeaders(secret, raw) } });
    assert.equal(res.status, 204, res.text);
  }
}

/** Polls GET /api/runs/{id} until its status passes `wanted` (answers the run), or fails after `ms`. */
export async function waitForStatus(api: ReturnType<typeof client>, runId: string, wanted: (s: string) => boolean, ms: number): Promise<any> {
  const deadline = Date.now() + ms;
  for (;;) {
    const res = await api.get(`/api/runs/${runId}`).catch(() => null);
    if (res?.status === 200 && wanted(res.body.status)) return res.body;
    if (Date.now() > deadline) throw new Error(`run ${runId} did not reach the wanted status (last: ${res?.body?.status})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
