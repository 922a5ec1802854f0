// Human approval of tool calls, on the whole platform (its engine, process sandboxes, a scripted
// model and a loopback MCP server as the upstream): a gated call waits, with the sandbox held,
// until a person decides; the upstream is not called before. Approved, the tool runs once and its
// answer reaches the model; rejected, the model receives the refusal with its reason and goes on;
// expired, the same after the request's own timeout. Time waiting does not count towards the
// run's timeout. The routes answer 404, 409 and bad input with problem documents.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { ABANDONED_MARGIN_SECONDS, reconcileAbandonedRuns } from '../../api/services/runs/reconciler.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { startWeatherUpstream, type WeatherUpstream } from '../support/approval-agent.ts';
import { aKey, anOrg, type BuiltOrg } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importPackage, waitForStatus } from '../support/runs.ts';
import { archive } from './integrations-harness.ts';

/** The upstream: an MCP server whose forecast tool counts its calls by city (started in before()). */
let upstream: WeatherUpstream;

let fake: FakeModel;
let platform: PlatformProcess;
let pool: pg.Pool;
let org: BuiltOrg;
let key: string;
let api: ReturnType<typeof client>;

const forecastOf = (city: string) => ({ tool: 'public_weather__forecast', arguments: { city } });

/** An agent of the scripted model whose forecast calls need approval. */
async function anAgent(name: string, approvals: Record<string, unknown>, script: unknown[], timeout?: number): Promise<void> {
  const own = (await aKey(pool, { ...org, userId: org.ownerId })).key;
  await importPackage(platform.url, own, archive({
    name, version: '1.0.0', type: 'agent', schema_version: '0.3', ...(timeout ? { timeout } : {}),
    dependencies: { integrations: { '@public/weather': '*' } },
    integrations_configuration: { '@public/weather': { tools: ['forecast'] } },
    runtime_tools: ['output'],
    output: { schema: { type: 'object', properties: { forecast: { type: 'string' } }, required: ['forecast'] } },
    approvals,
  }, { 'prompt.md': `Tell the forecast.\n\n\`\`\`fake-model-script\n${JSON.stringify(script)}\n\`\`\`\n` }));
}

/** The run's approval requests once `count` of them exist and the last is pending (the run awaits it). */
async function awaitingRequest(runId: string, count: number): Promise<any[]> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const list = await api.get(`/api/runs/${runId}/approvals`);
    assert.equal(list.status, 200, list.text);
    if (list.body.data.length >= count && list.body.data[count - 1].status === 'pending') return list.body.data;
    const run = (await api.get(`/api/runs/${runId}`)).body;
    assert.ok(run.status === 'pending' || run.status === 'running', `the run ended before its approval request: ${JSON.stringify(run)}`);
    if (Date.now() > deadline) throw new Error(`no pending approval request ${count} of ${runId}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The tool results the scripted model received, over every request it was sent. */
function toolResultsSeen(): string[] {
  return fake.requests.flatMap((r) => ((r.body as any)?.messages ?? []) as any[])
    .filter((m) => m?.role === 'tool')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
}

before(async () => {
  upstream = await startWeatherUpstream();
  const upstreamUrl = upstream.url;
  fake = await startFakeModel();
  platform = await startPlatformProcess({
    env: { RUN_HEARTBEAT_SECONDS: '1', SANDBOX_WARM_POOL: '0', EGRESS_ALLOW_INTERNAL_HOSTS: [new URL(fake.url).host, new URL(upstreamUrl).host].join(',') },
  });
  pool = new pg.Pool({ connectionString: platform.db.url, max: 2 });
  org = await anOrg(pool);
  key = (await aKey(pool, { ...org, userId: org.ownerId })).key;
  api = client(platform.url, { key });
  await aDefaultModel(platform.url, key, fake.url, 'fake-script');
  await importPackage(platform.url, key, archive({
    name: '@public/weather', version: '1.0.0', type: 'integration', schema_version: '0.3',
    source: { kind: 'remote', url: `${upstreamUrl}/mcp`, transport: 'streamable-http' }, default_tools: ['forecast'],
  }));
  // deliveries of the approval events are written with the change (delivery itself is the webhooks' own story)
  const hook = await api.post('/api/webhooks', { level: 'space', spaceId: org.spaceId, url: 'https://hooks.example.com/approvals', events: ['run.approval_requested', 'run.approval_decided'] });
  assert.equal(hook.status, 201, hook.text);
});

after(async () => {
  await pool?.end();
  await platform?.stop();
  await fake?.close();
  await upstream?.close();
});

describe('approval of tool calls', () => {
  test('an approved call runs once after the decision, a rejected one is refused to the model with its reason; waiting does not count towards the timeout', async () => {
    // a 10 s timeout that the first wait alone outlasts: only time not spent waiting counts
    await anAgent('@acme/forecaster', { tools: ['public_weather__forecast'] },
      [forecastOf('Oslo'), forecastOf('Bergen'), { tool: 'output', arguments: { forecast: '{{result:0}} | {{result:1}}' } }], 10);
    const launch = await api.post('/api/agents/@acme/forecaster/run', { input: {} });
    assert.equal(launch.status, 201, launch.text);
    assert.equal(launch.body.timeout_seconds, 10);
    const runId = launch.body.id;

    const [first] = await awaitingRequest(runId, 1);
    assert.deepEqual({ ...first, requested_at: typeof first.requested_at }, {
      id: first.id, object: 'approval', run_id: runId, tool: 'public_weather__forecast', arguments: { city: 'Oslo' }, status: 'pending',
      requested_at: 'string', decided_at: null, decided_by: null, reason: null,
    });
    assert.match(first.id, /^apr_/);
    const waiting = (await api.get(`/api/runs/${runId}`)).body;
    assert.equal(waiting.status, 'running');
    assert.deepEqual(waiting.awaiting, { kind: 'approval', approval_id: first.id, since: first.requested_at, parked: false });
    // the event sink outlives the longest wait (a day, the default timeout_seconds)
    const { rows: [sink] } = await pool.query(`SELECT sink_expires_at > now() + interval '1 day' AS outlives FROM runs WHERE id = $1`, [runId]);
    assert.equal(sink.outlives, true);
    const told = await api.get('/api/notifications');
    assert.ok(told.body.data.some((n: any) => n.kind === 'approval_requested' && n.subject.approval_id === first.id), told.text);

    // longer than the run's whole timeout: the run still waits, and the upstream has not been called
    await new Promise((r) => setTimeout(r, 11_000));
    assert.deepEqual(upstream.calls, []);
    assert.equal((await api.get(`/api/runs/${runId}`)).body.status, 'running');

    const approved = await api.post(`/api/runs/${runId}/approvals/${first.id}`, { decision: 'approve' }, { headers: { 'idempotency-key': 'approve-oslo' } });
    assert.equal(approved.status, 200, approved.text);
    assert.equal(approved.body.status, 'approved');
    assert.deepEqual(approved.body.decided_by, { userId: org.ownerId, api_key_id: approved.body.decided_by.api_key_id, end_user_id: null });
    assert.match(approved.body.decided_by.api_key_id, /^key_/);
    // the same request again is answered from the first
    const replay = await api.post(`/api/runs/${runId}/approvals/${first.id}`, { decision: 'approve' }, { headers: { 'idempotency-key': 'approve-oslo' } });
    assert.deepEqual([replay.status, replay.body], [200, approved.body]);

    const [, second] = await awaitingRequest(runId, 2);
    assert.deepEqual(upstream.calls, ['Oslo']);
    assert.deepEqual(second.arguments, { city: 'Bergen' });
    // a new decision on the first: it is decided
    const again = await api.post(`/api/runs/${runId}/approvals/${first.id}`, { decision: 'reject' });
    assert.equal(again.status, 409, again.text);
    assert.equal(again.body.code, 'approval_already_decided');
    assert.match(again.headers.get('content-type') ?? '', /application\/problem\+json/);

    const rejected = await api.post(`/api/runs/${runId}/approvals/${second.id}`, { decision: 'reject', reason: 'not Bergen today' });
    assert.equal(rejected.status, 200, rejected.text);
    assert.deepEqual([rejected.body.status, rejected.body.reason], ['rejected', 'not Bergen today']);

    const run = await waitForStatus(api, runId, (s) => s !== 'pending' && s !== 'running', 60_000);
    assert.equal(run.status, 'success', JSON.stringify(run));
    assert.equal(run.awaiting, undefined);
    assert.match(run.result.output.forecast, /^Sunny in Oslo \| .*rejected.*not Bergen today/);
    assert.deepEqual(upstream.calls, ['Oslo']);
    // what the model was told of the rejected call
    assert.ok(toolResultsSeen().some((t) => t.includes('rejected') && t.includes('not Bergen today')), JSON.stringify(toolResultsSeen()));

    const list = (await api.get(`/api/runs/${runId}/approvals`)).body;
    assert.deepEqual(list.data.map((a: any) => [a.id, a.status]), [[first.id, 'approved'], [second.id, 'rejected']]);
    const { rows } = await pool.query(`SELECT event, approval_id, payload->'data'->'approval'->>'status' AS status FROM webhook_deliveries WHERE run_id = $1 ORDER BY id`, [runId]);
    assert.deepEqual(rows.map((r) => [r.event, r.approval_id, r.status]), [
      ['run.approval_requested', first.id, 'pending'], ['run.approval_decided', first.id, 'approved'],
      ['run.approval_requested', second.id, 'pending'], ['run.approval_decided', second.id, 'rejected'],
    ]);

    // the run has ended: nothing more is decided
    const late = await api.post(`/api/runs/${runId}/approvals/${second.id}`, { decision: 'approve' });
    assert.deepEqual([late.status, late.body.code], [409, 'run_not_running']);
  });

  test('a request no one decides expires after its timeout_seconds; the model is told and the run goes on', async () => {
    await anAgent('@acme/unattended', { tools: ['public_weather__forecast'], timeout_seconds: 2 },
      [forecastOf('Tromso'), { tool: 'output', arguments: { forecast: '{{result:0}}' } }]);
    const launch = await api.post('/api/agents/@acme/unattended/run', { input: {} });
    assert.equal(launch.status, 201, launch.text);
    const run = await waitForStatus(api, launch.body.id, (s) => s !== 'pending' && s !== 'running', 60_000);
    assert.equal(run.status, 'success', JSON.stringify(run));
    assert.match(run.result.output.forecast, /not approved in time.*No decision was made within 2 seconds/);
    assert.ok(!upstream.calls.includes('Tromso'));
    const [request] = (await api.get(`/api/runs/${launch.body.id}/approvals`)).body.data;
    assert.deepEqual([request.status, request.decided_by, request.reason], ['expired', null, 'No decision was made within 2 seconds.']);
  });

  test("an end-user decides on their own run's requests; another end-user does not reach them", async () => {
    await anAgent('@acme/concierge', { tools: ['public_weather__forecast'] }, [forecastOf('Lima'), { tool: 'output', arguments: { forecast: '{{result:0}}' } }]);
    const [ada, bob] = await Promise.all(['ada', 'bob'].map(async (externalId) => {
      const made = await api.post('/api/end-users', { externalId, name: externalId });
      assert.equal(made.status, 201, made.text);
      return made.body.id as string;
    }));
    const as = (endUser: string) => ({ headers: { 'Service-User': endUser } });
    const launch = await api.post('/api/agents/@acme/concierge/run', { input: {} }, as(ada));
    assert.equal(launch.status, 201, launch.text);
    const runId = launch.body.id;
    const deadline = Date.now() + 60_000;
    let request: any;
    while (!request) {
      request = (await api.get(`/api/runs/${runId}/approvals`, as(ada))).body.data?.find((a: any) => a.status === 'pending');
      if (Date.now() > deadline) throw new Error(`no pending approval request of ${runId}`);
      if (!request) await new Promise((r) => setTimeout(r, 100));
    }
    const foreign = [await api.get(`/api/runs/${runId}/approvals`, as(bob)), await api.post(`/api/runs/${runId}/approvals/${request.id}`, { decision: 'approve' }, as(bob))];
    assert.deepEqual(foreign.map((r) => [r.status, r.body.code]), [[404, 'not_found'], [404, 'not_found']]);
    const approved = await api.post(`/api/runs/${runId}/approvals/${request.id}`, { decision: 'approve' }, as(ada));
    assert.equal(approved.status, 200, approved.text);
    assert.deepEqual({ ...approved.body.decided_by, api_key_id: typeof approved.body.decided_by.api_key_id }, { userId: null, api_key_id: 'string', end_user_id: ada });
    const run = await waitForStatus(api, runId, (s) => s !== 'pending' && s !== 'running', 60_000);
    assert.equal(run.status, 'success', JSON.stringify(run));
    assert.equal(run.result.output.forecast, 'Sunny in Lima');
  });

  test('the routes answer problem documents: unknown run or request, bad decisions', async () => {
    const missing = await api.get('/api/runs/run_0000000000000000000000/approvals');
    assert.deepEqual([missing.status, missing.body.code], [404, 'not_found']);
    const { rows } = await pool.query(`SELECT id FROM runs WHERE org_id = $1 LIMIT 1`, [org.orgId]);
    const runId = rows[0].id;
    const noRequest = await api.post(`/api/runs/${runId}/approvals/apr_unknown`, { decision: 'approve' });
    assert.deepEqual([noRequest.status, noRequest.body.code], [404, 'not_found']);
    for (const body of [{ decision: 'maybe' }, { decision: 'reject', reason: 'a\u0000b' }, { decision: 'reject', reason: 'x'.repeat(2001) }, { decision: 'approve', extra: 1 }, {}]) {
      const res = await api.post(`/api/runs/${runId}/approvals/apr_unknown`, body);
      assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${res.text}`);
      assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
    }
  });

  test("the reconciler's far deadline moves by the time a run waited for approvals", async () => {
    const { rows: [ended] } = await pool.query(`SELECT id, timeout_seconds FROM runs WHERE org_id = $1 ORDER BY created_at LIMIT 1`, [org.orgId]);
    const runId = `${ended.id.slice(0, -4)}wait`;
    const pastDeadline = ended.timeout_seconds + 1 + ABANDONED_MARGIN_SECONDS + 600;
    await pool.query(
      `INSERT INTO runs SELECT (jsonb_populate_record(NULL::runs, to_jsonb(r) || jsonb_build_object('id', $2::text, 'status', 'running',
         'created_at', now() - make_interval(secs => $3::int), 'finished_at', NULL, 'output', NULL, 'error', NULL))).* FROM runs r WHERE r.id = $1`,
      [ended.id, runId, pastDeadline],
    );
    // an hour of waiting for a decision: the run is within its deadline still
    await pool.query(
      `INSERT INTO run_approvals (id, org_id, space_id, run_id, sequence, tool, arguments, status, timeout_seconds, requested_at, decided_at)
       SELECT 'apr_' || $1, org_id, space_id, id, 1, 'public_weather__forecast', '{}', 'approved', 86400, created_at + interval '1 second', created_at + interval '1 hour'
         FROM runs WHERE id = $1`,
      [runId],
    );
    assert.ok(!(await reconcileAbandonedRuns(pool, 1)).includes(runId));
    // a second of waiting moves it by a second only: the run is abandoned
    await pool.query(`UPDATE run_approvals SET decided_at = requested_at + interval '1 second' WHERE run_id = $1`, [runId]);
    assert.ok((await reconcileAbandonedRuns(pool, 1)).includes(runId));
  });
});
