// The platform's own ports are never a model provider, even when the operator's allowlist names
// them: a credential aimed at the API itself or at its PostgreSQL is refused before anything is sent.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from '../../lib/free-port.ts';
import { aModelWorld, PROVIDER_KEY } from './models-harness.ts';

const apiPort = await freePort();
// the test databases' server (test/run.ts): the app's DATABASE_URL points at it
const dbPort = Number(new URL(process.env.TEST_PG_ADMIN_URL!).port || 5432);
// the operator (mistakenly) allows the platform's own ports next to the scripted model
const w = await aModelWorld({ port: apiPort, env: { EGRESS_ALLOW_INTERNAL_HOSTS: `127.0.0.1:${apiPort},localhost:${apiPort},127.0.0.1:${dbPort}` } });
after(() => w.close());
const inline = (base_url: string) => ({ provider: 'openai-compatible', base_url, api_key: PROVIDER_KEY });

test('a provider at the API\'s own port or the database\'s is refused although allowlisted', async () => {
  assert.equal(w.app.url, `http://127.0.0.1:${apiPort}`);
  for (const base_url of [`http://127.0.0.1:${apiPort}/api`, `http://localhost:${apiPort}/api`, `http://[::ffff:127.0.0.1]:${apiPort}/api`, `http://127.0.0.1:${dbPort}/v1`]) {
    const tested = await w.api.post('/api/model-provider-credentials/test', inline(base_url));
    assert.equal(tested.status, 400, base_url);
    assert.equal(tested.body.code, 'blocked_url', base_url);
    assert.match(tested.body.detail, /platform's own endpoints/);
    const saved = await w.api.post('/api/model-provider-credentials', { ...inline(base_url), name: 'Self' });
    assert.equal(saved.body.code, 'blocked_url', base_url);
  }
  assert.deepEqual((await w.api.get('/api/model-provider-credentials')).body.data, []);
});
