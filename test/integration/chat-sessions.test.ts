// The chat module on the in-process API with the scripted model: a member's sessions (their own
// only, cursor-paged, API keys refused), a turn streamed as Server-Sent Events with the change
// signalled to the member's session streams, the usage check hook, the live-session cap, skills a
// space enforces, injected skill drafts, and the rate-limit rows of the chat routes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { writeZip } from '../../lib/zip/write-zip.ts';
import { addChatUsageCheck } from '../../api/modules/chat/index.ts';
import { appendMessages, type NewMessage } from '../../api/modules/chat/sessions.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, aSession, type BuiltOrg } from '../support/builders.ts';
import { postTurn, streamedText } from '../support/chat-turn.ts';
import { call, client } from '../support/http.ts';
import { importFixture, importPackage } from '../support/runs.ts';
import { listen } from '../support/sse.ts';

let fake: FakeModel;
let app: TestApp;
let org: BuiltOrg;
let key: string;
let owner: Record<string, string>;
let runner: Record<string, string>;
let hangModelId: string;

const BUDGET = 600;
const zip = (files: Record<string, string>) => writeZip(Object.entries(files).map(([name, text]) => [name, Buffer.from(text)]));
const skill = (name: string, body: string) => zip({
  'manifest.json': JSON.stringify({ name, version: '1.0.0', type: 'skill', schema_version: '0.3', description: 'a skill' }),
  'SKILL.md': `---\nname: ${name.split('/')[1]}\ndescription: a skill\n---\n${body}\n`,
});

function expectProblem(res: { status: number; body: any; text?: string }, status: number, code: string): void {
  assert.equal(res.status, status, res.text ?? JSON.stringify(res.body));
  assert.equal(res.body.code, code, res.text ?? JSON.stringify(res.body));
}

before(async () => {
  fake = await startFakeModel();
  app = await startTestApp({
    env: {
      EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host,
      CHAT_MAX_LIVE_SESSIONS: '1', CHAT_ENFORCED_SKILLS_MAX: '2', CHAT_ENFORCED_SKILLS_BUDGET_BYTES: String(BUDGET), CHAT_TURN_RATE_PER_MIN: '30',
    },
  });
  const pool = app.deps.database.pool;
  org = await anOrg(pool);
  ({ key } = await aKey(pool, { ...org, userId: org.ownerId }));
  const api = client(app.url, { key });
  const cred = await api.post('/api/model-provider-credentials', { provider: 'openai-compatible', name: 'fake', base_url: fake.url, api_key: 'sk-fake-provider-key' });
  assert.equal(cred.status, 201, cred.text);
  const text = await api.post('/api/models', { credential_id: cred.body.id, model: 'fake-text', name: 'fake-text', is_default: true });
  assert.equal(text.status, 201, text.text);
  const hang = await api.post('/api/models', { credential_id: cred.body.id, model: 'fake-hang', name: 'fake-hang' });
  assert.equal(hang.status, 201, hang.text);
  hangModelId = hang.body.id;
  const ctx = { 'x-org-id': org.orgId, 'x-space-id': org.spaceId };
  owner = { cookie: (await aSession(pool, org.ownerId)).cookie, ...ctx };
  const runnerId = await aMember(pool, org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'runner' });
  runner = { cookie: (await aSession(pool, runnerId)).cookie, ...ctx };
});
after(async () => {
  await app?.close();
  await fake?.close();
});

const as = (headers: Record<string, string>) => client(app.url, { headers });

test('a member opens, pages, reads and deletes their chat sessions; nobody else sees them and API keys are refused', async () => {
  const me = as(runner);
  const ids: string[] = [];
  for (const title of ['one', 'two', 'three']) {
    const made = await me.post('/api/chat/sessions', { title });
    assert.equal(made.status, 201, made.text);
    assert.match(made.body.id, /^chat_/);
    assert.equal(made.headers.get('location'), `/api/chat/sessions/${made.body.id}`);
    assert.equal(made.body.object, 'chat_session');
    ids.push(made.body.id);
  }
  const all = await me.get('/api/chat/sessions');
  assert.equal(all.status, 200);
  assert.deepEqual(all.body.data.map((s: any) => s.id), ids);
  assert.equal(all.body.object, 'list');
  assert.equal(all.body.hasMore, false);

  const first = await me.get('/api/chat/sessions?limit=2');
  assert.deepEqual(first.body.data.map((s: any) => s.id), ids.slice(0, 2));
  assert.equal(first.body.hasMore, true);
  assert.match(first.headers.get('link') ?? '', new RegExp(`startingAfter=${ids[1]}.*rel="next"`));
  const second = await me.get(`/api/chat/sessions?limit=2&startingAfter=${ids[1]}`);
  assert.deepEqual(second.body.data.map((s: any) => s.id), [ids[2]]);
  assert.equal(second.body.hasMore, false);

  // the owner of the organization does not see a member's sessions either
  assert.deepEqual((await as(owner).get('/api/chat/sessions')).body.data, []);
  expectProblem(await as(owner).get(`/api/chat/sessions/${ids[0]}`), 404, 'not_found');
  expectProblem(await as(owner).delete(`/api/chat/sessions/${ids[0]}`), 404, 'not_found');
  expectProblem(await client(app.url, { key }).get('/api/chat/sessions'), 403, 'forbidden');
  expectProblem(await client(app.url, { key }).post('/api/chat/sessions', {}), 403, 'forbidden');
  expectProblem(await call(app.url, 'GET', '/api/chat/sessions', { headers: { cookie: runner.cookie, 'x-org-id': org.orgId } }), 400, 'invalid_request');

  const read = await me.get(`/api/chat/sessions/${ids[0]}`);
  assert.equal(read.status, 200);
  assert.deepEqual(read.body.messages, []);
  assert.equal((await me.delete(`/api/chat/sessions/${ids[0]}`)).status, 204);
  expectProblem(await me.get(`/api/chat/sessions/${ids[0]}`), 404, 'not_found');
  expectProblem(await me.post('/api/chat/sessions', { title: 'x', extra: 1 }), 400, 'validation_failed');
});

test("a turn streams the model's answer, keeps both messages and signals chat_session_update to the owner's session streams only", async () => {
  const qs = `orgId=${org.orgId}&spaceId=${org.spaceId}&channels=chat_session_update`;
  const sessionStream = listen(`${app.url}/api/realtime/runs?${qs}`, { cookie: owner.cookie });
  const keyStream = listen(`${app.url}/api/realtime/runs?token=${key}&channels=chat_session_update`);
  const runnerStream = listen(`${app.url}/api/realtime/runs?${qs}`, { cookie: runner.cookie });
  try {
    await sessionStream.count('ping', 1);
    await keyStream.count('ping', 1);
    await runnerStream.count('ping', 1);
    const made = await as(owner).post('/api/chat/sessions', { title: 'hello' });
    const turn = await postTurn(app.url, made.body.id, 'Say something.', owner);
    assert.equal(turn.status, 200, turn.text);
    assert.equal(turn.frames[0].event, 'turn');
    assert.equal(turn.frames.filter((f) => f.event === 'token').length, 2, 'the answer arrives in pieces');
    assert.equal(streamedText(turn.frames), 'Here is my answer in plain text.');
    const done = turn.frames.at(-1)!;
    assert.equal(done.event, 'done');
    assert.deepEqual(done.data, { content: 'Here is my answer in plain text.', stop: 'answered', message_count: 2 });
    assert.ok(!turn.text.includes('sk-fake-provider-key'));

    const sent = fake.requests.at(-1)!;
    assert.equal(sent.authorization, 'Bearer sk-fake-provider-key');
    assert.equal(sent.body.stream, true);
    assert.deepEqual(sent.body.messages.slice(1), [{ role: 'user', content: 'Say something.' }]);

    const read = await as(owner).get(`/api/chat/sessions/${made.body.id}`);
    assert.deepEqual(read.body.messages.map((m: any) => [m.role, m.content]), [['user', 'Say something.'], ['assistant', 'Here is my answer in plain text.']]);
    assert.match(read.body.messages[0].id, /^cmsg_/);

    // a second turn carries the conversation so far
    await postTurn(app.url, made.body.id, 'And again.', owner);
    assert.deepEqual(fake.requests.at(-1)!.body.messages.slice(1).map((m: any) => m.content), ['Say something.', 'Here is my answer in plain text.', 'And again.']);

    const frames = await sessionStream.until((f) => f.filter((x) => x.data?.change === 'turn_finished').length >= 2, 'two turn_finished signals');
    const changes = frames.filter((f) => f.event === 'chat_session_update').map((f) => f.data.change);
    assert.deepEqual(changes, ['created', 'turn_started', 'turn_finished', 'turn_started', 'turn_finished']);
    assert.equal(frames.at(-1)!.data.id, made.body.id);
    assert.equal(frames.at(-1)!.data.message_count, 4);
    assert.equal(keyStream.of('chat_session_update').length, 0, 'an API key stream has no session');
    assert.equal(runnerStream.of('chat_session_update').length, 0, "another member's stream hears nothing");
  } finally {
    sessionStream.close();
    keyStream.close();
    runnerStream.close();
  }
});

test('a module usage check refuses a turn with its own code and status, without instance or request_id', async () => {
  const made = await as(owner).post('/api/chat/sessions', {});
  const seen: any[] = [];
  const remove = addChatUsageCheck(app.deps, (q) => {
    seen.push(q);
    return { code: 'credits_exhausted', status: 402, detail: 'The organization has no chat credits left.' };
  });
  try {
    const refused = await postTurn(app.url, made.body.id, 'hi', owner);
    assert.equal(refused.status, 402);
    assert.match(refused.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.deepEqual(refused.problem, {
      type: 'https://errors.agent-platform.dev/usage-not-allowed', title: 'Refused by a module usage check', status: 402,
      detail: 'The organization has no chat credits left.', code: 'credits_exhausted',
    });
    assert.match(refused.headers.get('request-id') ?? '', /^req_/);
    assert.deepEqual(seen[0], { orgId: org.orgId, spaceId: org.spaceId, userId: org.ownerId, sessionId: made.body.id });
  } finally {
    remove();
  }
  const removeOther = addChatUsageCheck(app.deps, () => ({ code: 'chat_disabled' }));
  try {
    const refused = await postTurn(app.url, made.body.id, 'hi', owner);
    assert.equal(refused.status, 403);
    assert.equal(refused.problem.code, 'chat_disabled');
    assert.equal(refused.problem.instance, undefined);
    assert.equal(refused.problem.request_id, undefined);
  } finally {
    removeOther();
  }
  assert.equal((await postTurn(app.url, made.body.id, 'hi', owner)).status, 200);
  assert.equal((await as(owner).get(`/api/chat/sessions/${made.body.id}`)).body.message_count, 2, 'refused turns stored nothing');
});

test('at its cap of live sessions the engine answers 429 chat_capacity; a second turn of a live session is 409', async () => {
  const hung = await as(owner).post('/api/chat/sessions', { model_id: hangModelId });
  const other = await as(owner).post('/api/chat/sessions', {});
  const before = fake.requests.length;
  const stop = new AbortController();
  const holding = postTurn(app.url, hung.body.id, 'wait forever', owner, stop.signal).catch((err) => err);
  const started = Date.now();
  while (!fake.requests.slice(before).some((r) => r.model === 'fake-hang')) {
    assert.ok(Date.now() - started < 10_000, 'the hanging turn reached the model');
    await new Promise((r) => setTimeout(r, 20));
  }
  const full = await postTurn(app.url, other.body.id, 'hi', owner);
  assert.equal(full.status, 429);
  assert.equal(full.problem.code, 'chat_capacity');
  assert.equal(full.headers.get('retry-after'), '5');
  const again = await postTurn(app.url, hung.body.id, 'hi', owner);
  assert.equal(again.status, 409);
  assert.equal(again.problem.code, 'chat_turn_in_progress');

  stop.abort();
  await holding;
  // the stopped turn frees its place
  for (;;) {
    const res = await postTurn(app.url, other.body.id, 'hi', owner);
    if (res.status === 200) break;
    assert.equal(res.problem.code, 'chat_capacity');
    assert.ok(Date.now() - started < 10_000, 'the stopped turn released its place');
    await new Promise((r) => setTimeout(r, 100));
  }
});

test('a space admin enforces skills in every chat of the space, within the limit and the content budget', async () => {
  const api = client(app.url, { key });
  await importPackage(app.url, key, skill('@acme/tone', 'Always answer politely.'), 'tone.afps');
  await importPackage(app.url, key, skill('@acme/format', 'Use short sentences.'), 'format.afps');
  await importPackage(app.url, key, skill('@acme/huge', 'x'.repeat(BUDGET)), 'huge.afps');
  const echo = (await importFixture(app.url, key, 'agent-echo')).packageId;
  await app.deps.database.pool.query(
    `INSERT INTO packages (org_id, id, type, home_space_id, draft_integrity, draft_detached) VALUES ($1, '@acme/unpublished', 'skill', $2, 'sha256-none', true)`,
    [org.orgId, org.spaceId],
  );
  const admin = as(owner);
  expectProblem(await as(runner).put('/api/chat/enforced-skills', { skills: ['@acme/tone'] }), 403, 'forbidden');
  expectProblem(await admin.put('/api/chat/enforced-skills', { skills: ['@acme/tone', '@acme/format', '@acme/huge'] }), 409, 'enforced_skills_limit');
  expectProblem(await admin.put('/api/chat/enforced-skills', { skills: ['@acme/tone', echo] }), 400, 'chat_enforced_not_skill');
  expectProblem(await admin.put('/api/chat/enforced-skills', { skills: ['@acme/unpublished'] }), 409, 'no_published_version');
  expectProblem(await admin.put('/api/chat/enforced-skills', { skills: ['@acme/tone', '@acme/huge'] }), 409, 'enforced_skills_budget');
  expectProblem(await admin.put('/api/chat/enforced-skills', { skills: ['@acme/nowhere'] }), 404, 'not_found');
  assert.deepEqual((await admin.get('/api/chat/enforced-skills')).body.data, [], 'refusals changed nothing');

  const set = await admin.put('/api/chat/enforced-skills', { skills: ['@acme/tone', '@acme/format'] });
  assert.equal(set.status, 200, set.text);
  assert.deepEqual(set.body.data.map((s: any) => s.packageId), ['@acme/tone', '@acme/format']);
  assert.deepEqual((await as(runner).get('/api/chat/enforced-skills')).body.data.map((s: any) => s.packageId), ['@acme/tone', '@acme/format']);

  const made = await as(runner).post('/api/chat/sessions', {});
  const turn = await postTurn(app.url, made.body.id, 'hello', runner);
  assert.equal(turn.status, 200, turn.text);
  const system = fake.requests.at(-1)!.body.messages[0];
  assert.equal(system.role, 'system');
  assert.ok(system.content.includes('Always answer politely.') && system.content.includes('Use short sentences.'), system.content);
  assert.ok(system.content.indexOf('Always answer politely.') < system.content.indexOf('Use short sentences.'));

  // an enforced skill that can no longer be loaded stops every chat of the space
  const removed = await api.delete('/api/packages/@acme/format');
  assert.equal(removed.status, 204, removed.text);
  const refused = await postTurn(app.url, made.body.id, 'hello', runner);
  assert.equal(refused.status, 503);
  assert.equal(refused.problem.code, 'enforced_skills_unavailable');
  assert.equal((await admin.put('/api/chat/enforced-skills', { skills: [] })).status, 200);
  assert.equal((await postTurn(app.url, made.body.id, 'hello', runner)).status, 200);
});

test("a session injects a skill's draft; once the draft changes its turns answer 409 injected_draft_changed", async () => {
  await importPackage(app.url, key, skill('@acme/drafty', 'Draft rule one.'), 'drafty.afps');
  const api = client(app.url, { key });
  const edit = await api.put('/api/packages/@acme/drafty/draft/files', { path: 'SKILL.md', content: '---\nname: drafty\ndescription: a skill\n---\nDraft rule two.\n' });
  assert.equal(edit.status, 200, edit.text);
  const echo = (await client(app.url, { key }).get('/api/packages?type=agent')).body.data[0].id;
  expectProblem(await as(owner).post('/api/chat/sessions', { draft_skills: [echo] }), 400, 'validation_failed');
  // a role that cannot read skills cannot read a draft into a chat either
  const role = await call(app.url, 'POST', `/api/orgs/${org.orgId}/roles`, { cookie: owner.cookie, body: { key: 'talker', name: 'Talker', permissions: ['spaces:read'] } });
  assert.equal(role.status, 201, role.text);
  const pool = app.deps.database.pool;
  const talker = { cookie: (await aSession(pool, await aMember(pool, org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'talker' }))).cookie, 'x-org-id': org.orgId, 'x-space-id': org.spaceId };
  expectProblem(await as(talker).post('/api/chat/sessions', { draft_skills: ['@acme/drafty'] }), 403, 'forbidden');
  assert.equal((await as(talker).post('/api/chat/sessions', {})).status, 201);

  const made = await as(owner).post('/api/chat/sessions', { draft_skills: ['@acme/drafty'] });
  assert.equal(made.status, 201, made.text);
  assert.deepEqual(made.body.injected_drafts, ['@acme/drafty']);
  const turn = await postTurn(app.url, made.body.id, 'hello', owner);
  assert.equal(turn.status, 200, turn.text);
  assert.ok(fake.requests.at(-1)!.body.messages[0].content.includes('Draft rule two.'));

  const again = await api.put('/api/packages/@acme/drafty/draft/files', { path: 'SKILL.md', content: '---\nname: drafty\ndescription: a skill\n---\nDraft rule three.\n' });
  assert.equal(again.status, 200, again.text);
  const refused = await postTurn(app.url, made.body.id, 'hello', owner);
  assert.equal(refused.status, 409);
  assert.equal(refused.problem.code, 'injected_draft_changed');
});

test('the chat routes carry their rate-limit rows; turns are limited per member by CHAT_TURN_RATE_PER_MIN', async () => {
  const pool = app.deps.database.pool;
  const other = { cookie: (await aSession(pool, await aMember(pool, org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'runner' }))).cookie, 'x-org-id': org.orgId, 'x-space-id': org.spaceId };
  const me = as(other);
  assert.equal((await me.post('/api/chat/sessions', {})).headers.get('ratelimit-policy'), '60;w=60');
  assert.equal((await me.get('/api/chat/sessions')).headers.get('ratelimit-policy'), '300;w=60');
  assert.equal((await me.get('/api/chat/enforced-skills')).headers.get('ratelimit-policy'), '300;w=60');
  // a turn of a session that does not exist still spends a point (the limit comes first)
  for (let i = 0; i < 30; i++) {
    const res = await postTurn(app.url, 'chat_missing', 'hi', other);
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('ratelimit-policy'), '30;w=60');
  }
  const limited = await postTurn(app.url, 'chat_missing', 'hi', other);
  assert.equal(limited.status, 429);
  assert.equal(limited.problem.code, 'rate_limited');
  assert.ok(Number(limited.headers.get('retry-after')) > 0);
  // buckets are per caller: the owner still may talk
  const mine = await as(owner).post('/api/chat/sessions', {});
  assert.equal((await postTurn(app.url, mine.body.id, 'hi', owner)).status, 200);
});

test('a session reads its messages back in the order they were appended, however many share a millisecond', async () => {
  const made = await as(owner).post('/api/chat/sessions', { title: 'order' });
  assert.equal(made.status, 201, made.text);
  const scope = { pool: app.deps.database.pool, db: app.deps.database.db, orgId: org.orgId, spaceId: org.spaceId, actor: { userId: org.ownerId } };
  // one turn's worth, many times over: a call, its answer, the reply; all inside one transaction
  const turn = (i: number): NewMessage[] => [
    { role: 'assistant', content: '', toolCalls: [{ id: `call_${i}`, type: 'function' as const, function: { name: 'x', arguments: '{}' } }] },
    { role: 'tool', content: `answer ${i}`, toolCallId: `call_${i}` },
    { role: 'assistant', content: `reply ${i}` },
  ];
  const appended = Array.from({ length: 20 }, (_, i) => turn(i)).flat();
  await appendMessages(scope, made.body.id, appended);
  const read = await as(owner).get(`/api/chat/sessions/${made.body.id}`);
  assert.equal(read.status, 200, read.text);
  assert.deepEqual(read.body.messages.map((m: any) => m.content || m.tool_calls?.[0]?.id), appended.map((m) => m.content || m.toolCalls?.[0]?.id));
});
