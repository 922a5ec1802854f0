// A really started platform for the run endings tests, on the process or the docker backend: the
// scripted model, the echo fixture, and a model for each way a run ends (fake: success, fake-text:
// no output, fake-bad-output: an output the schema refuses, fake-hang: never answers). The timeout
// ceiling is 4 s and the heartbeat 1 s.
import assert from 'node:assert/strict';
import pg from 'pg';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importFixture } from '../support/runs.ts';

export const ECHO = '/api/agents/@fixtures/agent-echo/run';

export interface EndingsWorld {
  platform: PlatformProcess;
  fake: FakeModel;
  api: ReturnType<typeof client>;
  /** model ids by the scripted model's name */
  models: Record<string, string>;
  /** launches and waits (up to 40 s) for the run to end */
  runToEnd(path: string, body: unknown): Promise<any>;
  /** waits for the run to be running */
  running(runId: string): Promise<void>;
  close(): Promise<void>;
}

export async function anEndingsWorld(env: Record<string, string>): Promise<EndingsWorld> {
  const fake = await startFakeModel();
  const platform = await startPlatformProcess({
    env: { EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host, RUN_HEARTBEAT_SECONDS: '1', PLATFORM_RUN_LIMITS: '{"timeout_ceiling_seconds": 4}', ...env },
  }).catch(async (err) => {
    await fake.close();
    throw err;
  });
  const pool = new pg.Pool({ connectionString: platform.db.url, max: 1 });
  const org = await anOrg(pool);
  const { key } = await aKey(pool, { ...org, userId: org.ownerId });
  await pool.end();
  const api = client(platform.url, { key });
  await importFixture(platform.url, key, 'agent-echo');
  const models: Record<string, string> = { fake: await aDefaultModel(platform.url, key, fake.url, 'fake') };
  const credential = (await api.get('/api/model-provider-credentials')).body.data[0].id;
  for (const m of ['fake-text', 'fake-bad-output', 'fake-hang']) {
    const res = await api.post('/api/models', { credential_id: credential, model: m, name: m });
    assert.equal(res.status, 201, res.text);
    models[m] = res.body.id;
  }
  return {
    platform, fake, api, models,
    async runToEnd(path, body) {
      const launched = await api.post(path, body);
      assert.equal(launched.status, 201, launched.text);
      const done = await api.get(`/api/runs/${launched.body.id}?wait=40`);
      assert.ok(!['pending', 'running'].includes(done.body.status), `still ${done.body.status}`);
      return done.body;
    },
    async running(runId) {
      for (let i = 0; i < 300 && (await api.get(`/api/runs/${runId}`)).body.status !== 'running'; i++) await new Promise((r) => setTimeout(r, 100));
    },
    async close() {
      await platform.stop();
      await fake.close();
    },
  };
}
