// A newcomer's first run on a really started platform: redeem, sign in, add the fake model as a
// provider and default model, import a sample agent with input and output schemas, launch,
// long-poll to success, read the logs back, and find the run's invocation in Restate.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { queryInvocations } from '../../restate/admin.ts';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { client } from '../support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importFixture } from '../support/runs.ts';

let platform: PlatformProcess;
let fake: Awaited<ReturnType<typeof startFakeModel>>;

before(async () => {
  fake = await startFakeModel();
  platform = await startPlatformProcess({ env: { SANDBOX_WARM_POOL: '1', EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host } });
});
after(async () => {
  await platform?.stop();
  await fake?.close();
});

test('from bootstrap to a successful run whose output matches the schema', async () => {
  const anon = client(platform.url);
  const redeem = await anon.post('/api/auth/bootstrap/redeem', {
    token: 'process-bootstrap-token-0123456789', email: 'owner@example.test', password: 'a long enough passphrase', name: 'Owner',
  });
  assert.equal(redeem.status, 201, redeem.text);
  const { org_id: orgId, space_id: spaceId } = redeem.body;

  const signIn = await anon.post('/api/auth/sign-in/email', { email: 'owner@example.test', password: 'a long enough passphrase' });
  assert.equal(signIn.status, 200, signIn.text);
  const cookie = signIn.headers.get('set-cookie')!.split(';')[0];
  const session = client(platform.url, { cookie, org: orgId, space: spaceId });
  const orgs = await session.get('/api/orgs');
  assert.equal(orgs.status, 200);

  const keyRes = await session.post('/api/api-keys', { name: 'journey' });
  assert.equal(keyRes.status, 201, keyRes.text);
  const key = keyRes.body.key as string;
  const api = client(platform.url, { key });

  await aDefaultModel(platform.url, key, fake.url);
  await importFixture(platform.url, key, 'agent-echo');

  const launched = await api.post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'hello from the journey' } });
  assert.equal(launched.status, 201, launched.text);
  assert.equal(launched.body.status, 'pending');

  const done = await api.get(`/api/runs/${launched.body.id}?wait=30`);
  assert.equal(done.status, 200);
  assert.equal(done.body.status, 'success', `run ended ${done.body.status}: ${JSON.stringify(done.body.error)}\n${platform.output().slice(-3000)}`);
  // The output satisfies the agent's output schema: exactly { echo: string }.
  assert.deepEqual(Object.keys(done.body.result.output), ['echo']);
  assert.equal(typeof done.body.result.output.echo, 'string');
  assert.ok(done.body.cost.prompt_tokens > 0, 'model usage is recorded');

  const logs = await api.get(`/api/runs/${launched.body.id}/logs`);
  assert.equal(logs.status, 200);
  assert.ok(logs.body.data.length >= 1, 'the agent logged through its log tool');

  const rows = await queryInvocations<{ id: string; status: string }>(
    platform.restateAdminUrl(),
    `SELECT id, status FROM sys_invocation WHERE target_service_name = 'run' AND target_service_key = '${launched.body.id}'`,
  );
  assert.equal(rows.length >= 1, true, 'the run workflow invocation is visible in Restate');

  // The fake model received the provider key from the sidecar, never from the agent.
  assert.ok(fake.requests.some((r) => r.authorization === 'Bearer sk-fake-provider-key'));
});
