// A member's chat runs one of their agents, end to end on a really started platform: the member
// signs in (bootstrap), opens a chat and asks it to run the agent; the scripted model calls the
// agent's tool, the platform launches a real run (engine, sandbox, sidecar) under the member's
// permissions, waits for it, and the turn's stream carries the run's output and the model's answer.
// A member whose role cannot run agents is offered no agent tool.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { writeZip } from '../../lib/zip/write-zip.ts';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { aMember, aSession } from '../support/builders.ts';
import { postTurn, streamedText } from '../support/chat-turn.ts';
import { client } from '../support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importPackage } from '../support/runs.ts';
import pg from 'pg';

let platform: PlatformProcess;
let fake: Awaited<ReturnType<typeof startFakeModel>>;

const zip = (files: Record<string, string>) => writeZip(Object.entries(files).map(([name, text]) => [name, Buffer.from(text)]));

const AGENT = zip({
  'manifest.json': JSON.stringify({
    name: '@acme/oracle', version: '1.0.0', type: 'agent', schema_version: '0.3', timeout: 120, description: 'Answers the question of life',
    input: { schema: { type: 'object', properties: { question: { type: 'string' } }, required: ['question'] } },
    output: { schema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false } },
    runtime_tools: ['output'],
  }),
  'prompt.md': `Answer the question.\n\n\`\`\`fake-model-script\n${JSON.stringify([{ tool: 'output', arguments: { answer: 'forty-two' } }])}\n\`\`\`\n`,
});

const CHAT_SCRIPT = [{ tool: 'agent_acme_oracle', arguments: { input: { question: 'life?' } } }];

before(async () => {
  fake = await startFakeModel();
  platform = await startPlatformProcess({ env: { SANDBOX_WARM_POOL: '1', EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host } });
});
after(async () => {
  await platform?.stop();
  await fake?.close();
});

test('a member asks the chat to run an agent and receives the streamed answer with the run output', async () => {
  const redeem = await client(platform.url).post('/api/auth/bootstrap/redeem', {
    token: 'process-bootstrap-token-0123456789', email: 'owner@example.test', password: 'a long enough passphrase', name: 'Owner',
  });
  assert.equal(redeem.status, 201, redeem.text);
  const cookie = redeem.headers.get('set-cookie')!.split(';')[0];
  const session = { cookie, 'x-org-id': redeem.body.org_id, 'x-space-id': redeem.body.space_id };
  const made = await client(platform.url, { headers: session }).post('/api/api-keys', { name: 'setup' });
  assert.equal(made.status, 201, made.text);
  const key = made.body.key as string;
  await aDefaultModel(platform.url, key, fake.url, 'fake-script');
  await importPackage(platform.url, key, AGENT, 'oracle.afps');

  const chat = client(platform.url, { headers: session });
  const opened = await chat.post('/api/chat/sessions', { title: 'oracle' });
  assert.equal(opened.status, 201, opened.text);
  const ask = `Please ask the oracle.\n\n\`\`\`fake-model-script\n${JSON.stringify(CHAT_SCRIPT)}\n\`\`\`\n`;
  const turn = await postTurn(platform.url, opened.body.id, ask, session);
  assert.equal(turn.status, 200, turn.text);

  const events = turn.frames.map((f) => f.event);
  assert.deepEqual(events.filter((e) => e !== 'token'), ['turn', 'tool_call', 'tool_result', 'done'], turn.text);
  const call = turn.frames.find((f) => f.event === 'tool_call')!.data;
  assert.equal(call.agent, '@acme/oracle');
  assert.deepEqual(call.input, { question: 'life?' });
  const result = turn.frames.find((f) => f.event === 'tool_result')!.data;
  assert.equal(result.status, 'success', `${JSON.stringify(result)}\n${platform.output().slice(-3000)}`);
  assert.deepEqual(result.output, { answer: 'forty-two' });
  assert.match(result.run_id, /^run_/);
  assert.equal(streamedText(turn.frames), 'done');
  assert.equal(turn.frames.at(-1)!.data.stop, 'answered');

  // the run is the member's own, launched as a member (not an API key)
  const run = await client(platform.url, { key }).get(`/api/runs/${result.run_id}`);
  assert.equal(run.body.triggered_by.kind, 'member');
  assert.equal(run.body.packageId, '@acme/oracle');
  // the model saw the run's output as the tool result
  const followUp = fake.requests.filter((r) => r.body.messages?.some((m: any) => m.role === 'tool' && m.tool_call_id === call.id)).at(-1);
  assert.ok(followUp, 'the run output went back to the model');
  assert.deepEqual(JSON.parse(followUp.body.messages.at(-1).content).output, { answer: 'forty-two' });

  const stored = await chat.get(`/api/chat/sessions/${opened.body.id}`);
  assert.deepEqual(stored.body.messages.map((m: any) => m.role), ['user', 'assistant', 'tool', 'assistant']);

  // a viewer holds no agents:run: the chat offers no agent tool, so the scripted call is not offered
  const pool = new pg.Pool({ connectionString: platform.db.url, max: 1 });
  try {
    const viewerId = await aMember(pool, redeem.body.org_id, 'member', { spaceId: redeem.body.space_id, roleKey: 'viewer' });
    const viewer = { cookie: (await aSession(pool, viewerId)).cookie, 'x-org-id': redeem.body.org_id, 'x-space-id': redeem.body.space_id };
    const theirs = await client(platform.url, { headers: viewer }).post('/api/chat/sessions', {});
    const refused = await postTurn(platform.url, theirs.body.id, ask, viewer);
    assert.equal(refused.status, 200, refused.text);
    assert.ok(!refused.frames.some((f) => f.event === 'tool_call'));
    assert.equal(streamedText(refused.frames), 'tool agent_acme_oracle is not offered');
    assert.equal(fake.requests.at(-1)!.body.tools, undefined);
  } finally {
    await pool.end();
  }
});
