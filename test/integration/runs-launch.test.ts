// Launching runs: input checks, locked fields, model readiness, reruns, idempotency, and the
// organization's admission limits. No engine here: runs stay pending, which is all these need.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, aMember, anOrg, type BuiltOrg } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { aDefaultModel, importFixture } from '../support/runs.ts';

/** the scripted model, named host:port as the egress guard wants it */
const allowModel = () => ({ EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host });
let fake: Awaited<ReturnType<typeof startFakeModel>>;
let app: TestApp;
let org: BuiltOrg;
let key: string;
let api: ReturnType<typeof client>;
const ECHO = '/api/agents/@fixtures/agent-echo/run';

before(async () => {
  fake = await startFakeModel();
  app = await startTestApp({ env: allowModel() });
  org = await anOrg(app.deps.database.pool);
  ({ key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId }));
  api = client(app.url, { key });
  await importFixture(app.url, key, 'agent-echo');
  await importFixture(app.url, key, 'skill-summarize');
  await importFixture(app.url, key, 'integration-sample');
  await importFixture(app.url, key, 'agent-plain');
  // agent-plain uses integration-sample: a run needs a connection to it (integrations-connections.test.ts)
  const connected = await api.post('/api/integrations/@fixtures/integration-sample/auths/api_key/connect/fields', { credentials: { api_key: 'sk-sample' } });
  assert.equal(connected.status, 201, connected.text);
  await aDefaultModel(app.url, key, fake.url);
});
after(async () => {
  await app.close();
  await fake.close();
});

describe('a launch answers at once with the pending run', () => {
  test('201 with id, status, agent and version, who triggered it and the input', async () => {
    const res = await api.post(ECHO, { input: { message: 'hello' } });
    assert.equal(res.status, 201, res.text);
    const run = res.body;
    assert.match(run.id, /^run_/);
    assert.equal(run.object, 'run');
    assert.equal(run.status, 'pending');
    assert.equal(run.packageId, '@fixtures/agent-echo');
    assert.equal(run.agent_version, '1.0.0');
    assert.equal(run.triggered_by.kind, 'api_key');
    assert.equal(run.triggered_by.userId, org.ownerId);
    assert.deepEqual(run.input, { message: 'hello' });
    assert.equal(run.result, null);
    const read = await api.get(`/api/runs/${run.id}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.id, run.id);
  });

  test('one serialisation of a run: the launch, GET /api/runs/{id}, the lists and a long poll write the same compact bytes', async () => {
    const launched = await api.post(ECHO, { input: { message: 'héllo "quoted" \\ back / slash\n : , { [' } });
    assert.equal(launched.status, 201, launched.text);
    const id = launched.body.id;
    const read = await api.get(`/api/runs/${id}`);
    assert.equal(read.text, launched.text, 'GET /api/runs/{id} writes the launch answer byte for byte');
    assert.equal(read.text, JSON.stringify(JSON.parse(read.text)), 'compact JSON, no whitespace between tokens');
    const lists = [
      await api.get('/api/runs?limit=100'),
      await api.get('/api/agents/@fixtures/agent-echo/runs?limit=100'),
    ];
    for (const list of lists) {
      assert.equal(list.status, 200, list.text);
      assert.ok(list.text.includes(launched.text), `the list holds the same bytes: ${list.text.slice(0, 200)}`);
      assert.equal(list.text, JSON.stringify(JSON.parse(list.text)), 'the list is compact JSON');
    }
    const polled = await api.get(`/api/runs/${id}?wait=0`);
    assert.equal(polled.text, launched.text);

    // whatever the row holds (nested input, a numeric cost), reads stay compact and equal to a re-serialisation
    await app.deps.database.pool.query(
      `UPDATE runs SET input = $2, cost_usd = 0.00125, prompt_tokens = 12, completion_tokens = 3 WHERE id = $1`,
      [id, { message: 'x', extra: { list: [1, 2.5, -0.125, null, true], 'key with spaces': { deep: 'x : y, z' } } }],
    );
    for (const path of [`/api/runs/${id}`, '/api/runs?limit=100']) {
      const res = await api.get(path);
      assert.equal(res.text, JSON.stringify(JSON.parse(res.text)), `${path}: compact JSON`);
    }
    assert.ok((await api.get(`/api/runs/${id}`)).text.includes('"cost":{"usd":0.00125,"prompt_tokens":12,"completion_tokens":3}'));
  });

  test('the same Idempotency-Key replays the same run', async () => {
    const headers = { 'idempotency-key': 'launch-once-1' };
    const a = await api.post(ECHO, { input: { message: 'once' } }, { headers });
    const b = await api.post(ECHO, { input: { message: 'once' } }, { headers });
    assert.equal(a.status, 201);
    assert.equal(b.status, 201);
    assert.equal(b.headers.get('idempotent-replayed'), 'true');
    assert.equal(a.body.id, b.body.id);
    const c = await api.post(ECHO, { input: { message: 'other' } }, { headers });
    assert.equal(c.status, 422);
    assert.equal(c.body.code, 'idempotency_conflict');
  });
});

describe('input and agent checks', () => {
  test('input failing the input schema answers 400 invalid_input with one entry per error', async () => {
    const missing = await api.post(ECHO, { input: {} });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.code, 'invalid_input');
    assert.deepEqual(missing.body.errors.map((e: any) => [e.field, e.code]), [['input.message', 'required']]);
    const extra = await api.post(ECHO, { input: { message: '', extra: 1 } });
    assert.equal(extra.status, 400);
    const codes = extra.body.errors.map((e: any) => `${e.field}:${e.code}`).sort();
    assert.deepEqual(codes, ['input.extra:unknown_field', 'input.message:out_of_range']);
  });

  test('an unknown body field is a validation error, not ignored', async () => {
    const res = await api.post(ECHO, { input: { message: 'x' }, color: 'red' });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'validation_failed');
  });

  test('an agent that is not reachable answers 404 agent_not_found', async () => {
    const res = await api.post('/api/agents/@fixtures/nope/run', { input: {} });
    assert.equal(res.status, 404);
    assert.equal(res.body.code, 'agent_not_found');
  });

  test('locked fields: sending one is 400 locked_input_field; omitted, the locked value is used', async () => {
    const cfg = await api.put('/api/agents/@fixtures/agent-plain/config', { locked_input: { topic: 'fixed' } });
    assert.equal(cfg.status, 200, cfg.text);
    const refused = await api.post('/api/agents/@fixtures/agent-plain/run', { input: { topic: 'mine' } });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.code, 'locked_input_field');
    assert.equal(refused.body.errors[0].field, 'input.topic');
    const ok = await api.post('/api/agents/@fixtures/agent-plain/run', { input: {} });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.input.topic, 'fixed');
  });

  test('a required field cannot be locked without a value', async () => {
    const res = await api.put('/api/agents/@fixtures/agent-echo/config', { locked_input: { message: '' } });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'locked_required_field_empty');
  });

  test('rerun_from reuses the input of a run of the same agent; another agent is 409 rerun_agent_mismatch', async () => {
    const first = await api.post(ECHO, { input: { message: 'again' } });
    const rerun = await api.post(ECHO, { rerun_from: first.body.id });
    assert.equal(rerun.status, 201, rerun.text);
    assert.equal(rerun.body.rerun_of, first.body.id);
    assert.deepEqual(rerun.body.input, { message: 'again' });
    const mismatch = await api.post('/api/agents/@fixtures/agent-plain/run', { rerun_from: first.body.id });
    assert.equal(mismatch.status, 409);
    assert.equal(mismatch.body.code, 'rerun_agent_mismatch');
  });

  test('an organization without a model answers 400 model_not_configured', async () => {
    const other = await anOrg(app.deps.database.pool);
    const { key: otherKey } = await aKey(app.deps.database.pool, { ...other, userId: other.ownerId });
    await importFixture(app.url, otherKey, 'agent-echo');
    const res = await client(app.url, { key: otherKey }).post(ECHO, { input: { message: 'x' } });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'model_not_configured');
  });
});

describe('visibility of runs', () => {
  test('runs:read sees only the caller\'s own runs; runs:read-all sees every run of the space', async () => {
    const member = await aMember(app.deps.database.pool, org.orgId, 'member', { spaceId: org.spaceId, roleKey: 'editor' });
    const { key: memberKey } = await aKey(app.deps.database.pool, { ...org, userId: member, scopes: ['agents:run', 'runs:read'] });
    const mine = await client(app.url, { key: memberKey }).post(ECHO, { input: { message: 'member run' } });
    assert.equal(mine.status, 201, mine.text);
    const memberList = await client(app.url, { key: memberKey }).get('/api/runs');
    assert.deepEqual(memberList.body.data.map((r: any) => r.id), [mine.body.id]);
    const ownerList = await api.get('/api/runs?limit=100');
    assert.ok(ownerList.body.data.length > 1);
    assert.ok(ownerList.body.data.some((r: any) => r.id === mine.body.id));
    const someoneElses = ownerList.body.data.find((r: any) => r.id !== mine.body.id);
    const hidden = await client(app.url, { key: memberKey }).get(`/api/runs/${someoneElses.id}`);
    assert.equal(hidden.status, 404);
  });

  test('an agent\'s runs are offset-paged with Link headers', async () => {
    const page = await api.get('/api/agents/@fixtures/agent-echo/runs?limit=2');
    assert.equal(page.status, 200);
    assert.equal(page.body.data.length, 2);
    assert.equal(page.body.hasMore, true);
    assert.match(page.headers.get('link')!, /rel="next"/);
    assert.ok(page.body.total >= 3);
    const all = await api.get('/api/agents/@fixtures/agent-echo/runs?limit=100');
    assert.equal(all.body.total, all.body.data.length, 'the total counts every run of the filter, not the page');
    const second = await api.get('/api/agents/@fixtures/agent-echo/runs?limit=2&offset=2');
    assert.equal(second.body.total, all.body.total);
    assert.deepEqual(second.body.data.map((r: any) => r.id), all.body.data.slice(2, 4).map((r: any) => r.id));
    const past = await api.get(`/api/agents/@fixtures/agent-echo/runs?limit=2&offset=${all.body.total + 10}`);
    assert.equal(past.status, 200);
    assert.deepEqual(past.body.data, []);
    assert.equal(past.body.total, all.body.total, 'a page past the end still knows the total');
    const tail = await api.get(`/api/agents/@fixtures/agent-echo/runs?limit=2&offset=${all.body.total - 1}`);
    assert.equal(tail.body.data.length, 1);
    assert.equal(tail.body.hasMore, false);
    assert.equal(tail.body.total, all.body.total, 'the last, short page knows the total');
    assert.match(page.headers.get('link')!, new RegExp(`offset=${Math.floor((all.body.total - 1) / 2) * 2}>; rel="last"`));
  });
});

describe('control', () => {
  test('cancel a pending run; cancelling again is 409 not_cancellable; only finished runs can be deleted', async () => {
    const run = (await api.post(ECHO, { input: { message: 'to cancel' } })).body;
    const inProgress = await api.delete(`/api/runs/${run.id}`);
    assert.equal(inProgress.status, 409);
    assert.equal(inProgress.body.code, 'run_in_progress');
    const cancelled = await api.post(`/api/runs/${run.id}/cancel`, {});
    assert.equal(cancelled.status, 200, cancelled.text);
    assert.equal(cancelled.body.status, 'cancelled');
    assert.equal(cancelled.body.error.code, 'run_cancelled');
    const again = await api.post(`/api/runs/${run.id}/cancel`, {});
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'not_cancellable');
    assert.equal((await api.delete(`/api/runs/${run.id}`)).status, 204);
    assert.equal((await api.get(`/api/runs/${run.id}`)).status, 404);
  });

  test('a long poll returns as soon as the run ends', async () => {
    const run = (await api.post(ECHO, { input: { message: 'waited' } })).body;
    const started = Date.now();
    const waiting = api.get(`/api/runs/${run.id}?wait=20`);
    await new Promise((r) => setTimeout(r, 300));
    await api.post(`/api/runs/${run.id}/cancel`, {});
    const res = await waiting;
    assert.equal(res.body.status, 'cancelled');
    assert.ok(Date.now() - started < 5000, 'the wait ended with the run');
  });

  test('a long poll on a run that stays pending returns when the wait elapses', async () => {
    const run = (await api.post(ECHO, { input: { message: 'still pending' } })).body;
    const started = Date.now();
    const res = await api.get(`/api/runs/${run.id}?wait=1`);
    assert.equal(res.body.status, 'pending');
    assert.ok(Date.now() - started >= 900);
  });
});

describe('admission limits of the organization', () => {
  test('over max_concurrent_per_org a launch answers 429 org_run_concurrency_exceeded', async () => {
    const limited = await startTestApp({ env: { ...allowModel(), PLATFORM_RUN_LIMITS: '{"max_concurrent_per_org": 2}' } });
    try {
      const o = await anOrg(limited.deps.database.pool);
      const { key: k } = await aKey(limited.deps.database.pool, { ...o, userId: o.ownerId });
      await importFixture(limited.url, k, 'agent-echo');
      await aDefaultModel(limited.url, k, fake.url);
      const c = client(limited.url, { key: k });
      const results = await Promise.all([1, 2, 3, 4].map((i) => c.post(ECHO, { input: { message: `m${i}` } })));
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [201, 201, 429, 429]);
      const refused = results.find((r) => r.status === 429)!;
      assert.equal(refused.body.code, 'org_run_concurrency_exceeded');
    } finally {
      await limited.close();
    }
  });

  test('over per_org_global_rate_per_min a launch answers 429 org_run_rate_limited with retry_after', async () => {
    const limited = await startTestApp({ env: { ...allowModel(), PLATFORM_RUN_LIMITS: '{"per_org_global_rate_per_min": 3}' } });
    try {
      const o = await anOrg(limited.deps.database.pool);
      const { key: k } = await aKey(limited.deps.database.pool, { ...o, userId: o.ownerId });
      await importFixture(limited.url, k, 'agent-echo');
      await aDefaultModel(limited.url, k, fake.url);
      const c = client(limited.url, { key: k });
      for (let i = 0; i < 3; i++) assert.equal((await c.post(ECHO, { input: { message: `r${i}` } })).status, 201);
      const refused = await c.post(ECHO, { input: { message: 'r4' } });
      assert.equal(refused.status, 429);
      assert.equal(refused.body.code, 'org_run_rate_limited');
      assert.ok(refused.body.retry_after >= 1 && refused.body.retry_after <= 60);
      assert.equal(refused.headers.get('retry-after'), String(refused.body.retry_after));
    } finally {
      await limited.close();
    }
  });
});
