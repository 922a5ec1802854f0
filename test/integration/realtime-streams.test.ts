// The three realtime streams as integrators read them (the `eventsource` client): every query
// parameter, the events and the five delivery rules, with API keys, sessions, end-users and role
// preview, over the PostgreSQL bus of one in-process API.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { publishConnectionUpdate } from '../../api/services/realtime/publish.ts';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import { aKey, aMember, aSession } from '../support/builders.ts';
import { call } from '../support/http.ts';
import { aRunWorld, type RunWorld } from '../support/runs.ts';
import { listen, type Frame, type Listener } from '../support/sse.ts';

let w: RunWorld;
let base: string;
const open: Listener[] = [];
const AGENT = '@fixtures/agent-echo';

before(async () => {
  w = await aRunWorld({ env: { REALTIME_PING_SECONDS: '0.5', TRUSTED_ORIGINS: 'https://app.example.test' } });
  base = w.app.url;
  // a space role that launches and reads its own runs, without runs:read-all
  await w.app.deps.database.pool.query(
    `INSERT INTO space_roles (id, org_id, key, name, permissions) VALUES ('role_launcher', $1, 'launcher', 'Launcher', '{runs:read,agents:run,agents:read}')`,
    [w.org.orgId],
  );
});
after(async () => {
  for (const l of open) l.close();
  await w.close();
});

function stream(path: string, headers: Record<string, string> = {}): Listener {
  const l = listen(`${base}${path}`, headers);
  open.push(l);
  return l;
}

const keyed = (key: string) => ({ authorization: `Bearer ${key}` });

async function launch(key: string, headers: Record<string, string> = {}, input: Record<string, unknown> = { message: 'hi' }): Promise<string> {
  const res = await call(base, 'POST', `/api/agents/${AGENT}/run`, { key, headers, body: { input } });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

/** The run's sidecar: signed events with increasing sequence numbers. */
async function sidecarOf(runId: string) {
  const { rows } = await w.app.deps.database.pool.query('SELECT event_secret FROM runs WHERE id = $1', [runId]);
  const secret = w.app.deps.secrets.open(rows[0].event_secret);
  let sequence = 0;
  return async (type: string, data: Record<string, unknown> = {}) => {
    const raw = JSON.stringify({ sequence: ++sequence, at: new Date().toISOString(), type, data });
    const res = await call(base, 'POST', `/internal/runs/${runId}/events`, { rawBody: raw, headers: { 'content-type': 'application/json', ...signedRunEventHeaders(secret, raw) } });
    assert.equal(res.status, 204, res.text);
  };
}

async function runToTheEnd(runId: string) {
  const send = await sidecarOf(runId);
  await send('started');
  await send('log', { level: 'info', message: 'thinking', data: { step: 1 } });
  await send('log', { level: 'debug', message: 'internals', data: { secret: false } });
  await send('metric', { model: 'fake', prompt_tokens: 10, completion_tokens: 5, cost_usd: 0.25 });
  await send('metric', { model: 'fake', prompt_tokens: 1, completion_tokens: 2, cost_usd: 0.5 });
  await send('output', { output: { echo: 'hi' } });
  await send('completed');
}

const statusesOf = (frames: Frame[], runId: string) => frames.filter((f) => f.event === 'run_update' && f.data.id === runId).map((f) => f.data.status);
const ended = (runId: string) => (frames: Frame[]) => statusesOf(frames, runId).includes('success');

describe('events and frames', () => {
  test('a space stream (key in ?token) sees a run from pending to success, its logs and running totals, in order', async () => {
    const full = stream(`/api/realtime/runs?token=${w.key}&verbose=true`);
    const { key: readerKey } = await aKey(w.app.deps.database.pool, { ...w.org, userId: w.org.ownerId, scopes: ['runs:read', 'runs:read-all'] });
    const brief = stream(`/api/realtime/runs`, keyed(readerKey));
    await full.count('ping', 1);
    await brief.count('ping', 1);
    assert.equal(full.frames[0].event, 'ping', 'a ping on connect');

    const runId = await launch(w.key);
    await runToTheEnd(runId);
    await full.until(ended(runId), 'the run to end');
    await brief.until(ended(runId), 'the run to end');
    await full.count('run_metric', 2);
    await brief.count('run_metric', 2);

    for (const l of [full, brief]) assert.deepEqual(statusesOf(l.frames, runId), ['pending', 'running', 'success']);
    // verbose: the whole run; otherwise status and timing only
    const done = full.of('run_update').at(-1)!.data;
    assert.deepEqual(done.result, { output: { echo: 'hi' } });
    assert.deepEqual(done.input, { message: 'hi' });
    const briefDone = brief.of('run_update').at(-1)!.data;
    assert.deepEqual(Object.keys(briefDone).sort(), ['createdAt', 'duration_ms', 'finished_at', 'id', 'object', 'packageId', 'spaceId', 'started_at', 'status']);
    assert.equal(briefDone.packageId, AGENT);
    assert.ok(briefDone.finished_at && briefDone.started_at);

    // run_log: data only with verbose; debug entries only with runs:delete (the owner's key holds it)
    await full.count('run_log', 2);
    assert.deepEqual(full.of('run_log').map((f) => [f.data.level, f.data.message, f.data.data]), [['info', 'thinking', { step: 1 }], ['debug', 'internals', { secret: false }]]);
    assert.deepEqual(brief.of('run_log').map((f) => [f.data.level, f.data.message, 'data' in f.data]), [['info', 'thinking', false]]);
    assert.equal(brief.of('run_log')[0].data.runId, runId);
    assert.equal(brief.of('run_log')[0].data.sequence, 2);

    assert.deepEqual(brief.of('run_metric').map((f) => f.data), [
      { runId, cost: { usd: 0.25, prompt_tokens: 10, completion_tokens: 5 } },
      { runId, cost: { usd: 0.75, prompt_tokens: 11, completion_tokens: 7 } },
    ]);

    // rule 4: ids are <subscriber>:<n>, one subscriber per connection, n counting from 1
    for (const l of [full, brief]) {
      const ids = l.frames.map((f) => f.id);
      const subscriber = ids[0].split(':')[0];
      assert.match(ids[0], /^[A-Za-z0-9]+:1$/);
      assert.deepEqual(ids, ids.map((_, i) => `${subscriber}:${i + 1}`));
    }
    assert.notEqual(full.frames[0].id.split(':')[0], brief.frames[0].id.split(':')[0]);
  });

  test('a single-run stream opens with a snapshot, then a ping, and skips what the snapshot already shows', async () => {
    const runId = await launch(w.key);
    const send = await sidecarOf(runId);
    await send('started');
    const one = stream(`/api/realtime/runs/${runId}`, keyed(w.key));
    await one.count('ping', 1);
    assert.deepEqual(one.frames.slice(0, 2).map((f) => f.event), ['run_update', 'ping']);
    assert.equal(one.frames[0].data.status, 'running');
    await send('output', { output: { echo: 'x' } });
    await send('completed');
    await one.until(ended(runId), 'the run to end');
    assert.deepEqual(statusesOf(one.frames, runId), ['running', 'success']);
  });

  test('a single-run stream carries a running run\'s approval coming and going (same status, another awaiting), and no repeat of either', async () => {
    const runId = await launch(w.key);
    const send = await sidecarOf(runId);
    await send('started');
    const one = stream(`/api/realtime/runs/${runId}`, keyed(w.key));
    await one.count('ping', 1);
    const pool = w.app.deps.database.pool;
    const announce = () => pool.query('SELECT announce_run_status(r) FROM runs r WHERE r.id = $1', [runId]);
    const awaitingOf = (frames: Frame[]) => frames.filter((f) => f.event === 'run_update' && f.data.id === runId).map((f) => f.data.awaiting?.approval_id ?? null);
    await pool.query(`UPDATE runs SET awaiting = jsonb_build_object('kind', 'approval', 'approval_id', 'apr_streamtest1', 'since', wire_time(now()), 'parked', false) WHERE id = $1`, [runId]);
    await announce();
    await announce();
    await one.until((f) => awaitingOf(f).includes('apr_streamtest1'), 'the approval request');
    await pool.query('UPDATE runs SET awaiting = NULL WHERE id = $1', [runId]);
    await announce();
    await send('output', { output: { echo: 'x' } });
    await send('completed');
    await one.until(ended(runId), 'the run to end');
    assert.deepEqual(statusesOf(one.frames, runId), ['running', 'running', 'running', 'success']);
    assert.deepEqual(awaitingOf(one.frames), [null, 'apr_streamtest1', null, null]);
  });

  test('an agent stream carries only that agent (package id as one encoded segment); an unknown agent or run is 404', async () => {
    const agentStream = stream(`/api/realtime/agents/${encodeURIComponent(AGENT)}/runs`, keyed(w.key));
    await agentStream.count('ping', 1);
    const runId = await launch(w.key);
    // a run of another agent of the space, written directly: it must not show
    await w.app.deps.database.pool.query(
      `UPDATE runs SET status = 'cancelled', finished_at = now() WHERE id = $1`, [runId],
    );
    await agentStream.until((f) => statusesOf(f, runId).includes('cancelled'), 'the cancel');
    const other = await launch(w.key);
    await w.app.deps.database.pool.query(`UPDATE runs SET agent_id = '@fixtures/other' WHERE id = $1`, [other]);
    await w.app.deps.database.pool.query(`UPDATE runs SET status = 'cancelled', finished_at = now() WHERE id = $1`, [other]);
    const marker = await launch(w.key);
    await agentStream.until((f) => statusesOf(f, marker).includes('pending'), 'the marker run');
    assert.deepEqual(statusesOf(agentStream.frames, other), ['pending'], 'only its launch, while it was still the agent\'s');

    for (const path of [`/api/realtime/agents/${encodeURIComponent('@fixtures/nope')}/runs`, '/api/realtime/agents/not-a-package/runs']) {
      const res = await call(base, 'GET', path, { key: w.key });
      assert.equal(res.status, 404, path);
      assert.equal(res.body.code, 'agent_not_found');
    }
    const missing = await call(base, 'GET', '/api/realtime/runs/run_missing', { key: w.key });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.code, 'not_found');
  });

  test('channels: a comma list of names, unknown names ignored, none left means everything', async () => {
    const logsOnly = stream(`/api/realtime/runs?channels=run_log,no_such_event`, keyed(w.key));
    const everything = stream(`/api/realtime/runs?channels=no_such_event`, keyed(w.key));
    await logsOnly.count('ping', 1);
    await everything.count('ping', 1);
    const runId = await launch(w.key);
    await runToTheEnd(runId);
    await everything.until(ended(runId), 'the run to end');
    await everything.count('run_metric', 2);
    await logsOnly.count('run_log', 2);
    assert.deepEqual([...new Set(logsOnly.frames.map((f) => f.event))].sort(), ['ping', 'run_log']);
    assert.deepEqual(statusesOf(everything.frames, runId), ['pending', 'running', 'success']);
  });

  test('a ping follows every REALTIME_PING_SECONDS without another event', async () => {
    const quiet = stream('/api/realtime/runs?channels=connection_update', keyed(w.key));
    await quiet.count('ping', 3);
  });

  test('connection_update reaches only the streams of the connection\'s owner', async () => {
    const pool = w.app.deps.database.pool;
    const memberId = await aMember(pool, w.org.orgId, 'member', { spaceId: w.org.spaceId, roleKey: 'runner' });
    const { key: memberKey } = await aKey(pool, { ...w.org, userId: memberId });
    const owner = stream('/api/realtime/runs?channels=connection_update', keyed(w.key));
    const member = stream('/api/realtime/runs?channels=connection_update', keyed(memberKey));
    await owner.count('ping', 1);
    await member.count('ping', 1);
    const connection = { id: 'conn_1', object: 'connection', integrationId: 'int_1', status: 'connected' };
    await publishConnectionUpdate(w.app.deps, { orgId: w.org.orgId, spaceId: w.org.spaceId, userId: memberId, endUserId: null, connection });
    await publishConnectionUpdate(w.app.deps, { orgId: w.org.orgId, spaceId: w.org.spaceId, userId: w.org.ownerId, endUserId: null, connection: { ...connection, id: 'conn_2' } });
    await member.count('connection_update', 1);
    await owner.count('connection_update', 1);
    assert.deepEqual(member.of('connection_update').map((f) => f.data), [connection]);
    assert.deepEqual(owner.of('connection_update').map((f) => f.data.id), ['conn_2']);
  });

  test('payloads too large for a NOTIFY travel by reference: a large log entry and a large run arrive whole', async () => {
    const big = 'x'.repeat(20_000);
    const verbose = stream('/api/realtime/runs?verbose=true', keyed(w.key));
    await verbose.count('ping', 1);
    const runId = await launch(w.key, {}, { message: big });
    const send = await sidecarOf(runId);
    await send('log', { level: 'info', message: 'big', data: { blob: big } });
    await send('log', { level: 'info', message: 'small after big' });
    await verbose.count('run_log', 2);
    assert.deepEqual(verbose.of('run_log').map((f) => f.data.message), ['big', 'small after big'], 'in order');
    assert.equal(verbose.of('run_log')[0].data.data.blob, big);
    await verbose.until((f) => statusesOf(f, runId).includes('pending'), 'the large run');
    assert.equal(verbose.of('run_update').find((f) => f.data.id === runId)!.data.input.message, big);
    const { rows } = await w.app.deps.database.pool.query('SELECT count(*)::int AS n FROM realtime_payloads');
    assert.ok(rows[0].n >= 1, 'the log entry went by reference');
  });
});

describe('who sees what (rule 1) and how callers authenticate', () => {
  test("without runs:read-all a member's session sees only their own runs; the context comes from orgId and spaceId", async () => {
    const pool = w.app.deps.database.pool;
    const memberId = await aMember(pool, w.org.orgId, 'member', { spaceId: w.org.spaceId, roleKey: 'launcher' });
    const { key: memberKey } = await aKey(pool, { ...w.org, userId: memberId });
    const { cookie } = await aSession(pool, memberId);
    const mine = stream(`/api/realtime/runs?orgId=${w.org.orgId}&spaceId=${w.org.spaceId}`, { cookie });
    await mine.count('ping', 1);
    const ownersRun = await launch(w.key);
    const membersRun = await launch(memberKey);
    await mine.until((f) => statusesOf(f, membersRun).includes('pending'), "the member's run");
    const marker = await launch(memberKey);
    await mine.until((f) => statusesOf(f, marker).includes('pending'), 'a later run');
    assert.deepEqual(statusesOf(mine.frames, ownersRun), [], "the owner's run is not shown");
    const single = await call(base, 'GET', `/api/realtime/runs/${ownersRun}?orgId=${w.org.orgId}&spaceId=${w.org.spaceId}`, { cookie });
    assert.equal(single.status, 404, "the owner's run is out of reach");

    const noSpace = await call(base, 'GET', `/api/realtime/runs?orgId=${w.org.orgId}`, { cookie });
    assert.equal(noSpace.status, 400);
    assert.equal(noSpace.body.param, 'spaceId');
  });

  test("an end-user (a key with Service-User) sees only that end-user's runs", async () => {
    const pool = w.app.deps.database.pool;
    const euA = `eu_rt_a_${Date.now()}`;
    const euB = `eu_rt_b_${Date.now()}`;
    for (const [id, ext] of [[euA, 'a'], [euB, 'b']]) {
      await pool.query(`INSERT INTO end_users (id, org_id, space_id, external_id, name) VALUES ($1, $2, $3, $4, 'Customer')`, [id, w.org.orgId, w.org.spaceId, `rt-${ext}-${id}`]);
    }
    const asA = stream('/api/realtime/runs', { ...keyed(w.key), 'service-user': euA });
    await asA.count('ping', 1);
    const runOfB = await launch(w.key, { 'service-user': euB });
    const ownersRun = await launch(w.key);
    const runOfA = await launch(w.key, { 'service-user': euA });
    await asA.until((f) => statusesOf(f, runOfA).includes('pending'), "A's run");
    const ids = new Set(asA.of('run_update').map((f) => f.data.id));
    assert.deepEqual([...ids], [runOfA], `neither B's run ${runOfB} nor the owner's ${ownersRun}`);
  });

  test('role preview: view_as on the query previews a role; X-View-As on these routes is 400 invalid_view_as', async () => {
    const pool = w.app.deps.database.pool;
    const { cookie } = await aSession(pool, w.org.ownerId);
    const memberId = await aMember(pool, w.org.orgId, 'member', { spaceId: w.org.spaceId, roleKey: 'runner' });
    const { key: memberKey } = await aKey(pool, { ...w.org, userId: memberId });
    const ctx = `orgId=${w.org.orgId}&spaceId=${w.org.spaceId}`;
    const previewed = stream(`/api/realtime/runs?${ctx}&view_as=member:viewer`, { cookie });
    const actual = stream(`/api/realtime/runs?${ctx}`, { cookie });
    await previewed.count('ping', 1);
    await actual.count('ping', 1);
    const membersRun = await launch(memberKey);
    const ownersRun = await launch(w.key);
    await previewed.until((f) => statusesOf(f, ownersRun).includes('pending'), "the owner's own run");
    await actual.until((f) => statusesOf(f, ownersRun).includes('pending'), "the owner's own run");
    assert.deepEqual(statusesOf(previewed.frames, membersRun), [], 'a viewer does not hold runs:read-all');
    assert.deepEqual(statusesOf(actual.frames, membersRun), ['pending'], 'the owner does');

    const header = await call(base, 'GET', `/api/realtime/runs?${ctx}`, { cookie, headers: { 'x-view-as': 'member:viewer' } });
    assert.equal(header.status, 400);
    assert.equal(header.body.code, 'invalid_view_as');
    const bad = await call(base, 'GET', `/api/realtime/runs?${ctx}&view_as=emperor`, { cookie });
    assert.equal(bad.body.code, 'invalid_view_as');
    assert.equal(bad.body.param, 'view_as');
    const withKey = await call(base, 'GET', '/api/realtime/runs?view_as=member', { key: w.key });
    assert.equal(withKey.status, 400);
    assert.equal(withKey.body.code, 'view_as_unsupported');
    const viewAsElsewhere = await call(base, 'GET', '/api/runs?view_as=emperor', { cookie, org: w.org.orgId, space: w.org.spaceId });
    assert.equal(viewAsElsewhere.status, 200, 'other routes do not read view_as');
  });

  test('token takes API keys only, and only on these routes', async () => {
    const jwt = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1In0.c2ln';
    const oidc = await call(base, 'GET', `/api/realtime/runs?token=${jwt}`);
    assert.equal(oidc.status, 401);
    const elsewhere = await call(base, 'GET', `/api/runs?token=${w.key}`);
    assert.equal(elsewhere.status, 401, 'GET /api/runs reads only the Authorization header');
    const none = await call(base, 'GET', '/api/realtime/runs');
    assert.equal(none.status, 401);
    const { key: noRuns } = await aKey(w.app.deps.database.pool, { ...w.org, userId: w.org.ownerId, scopes: ['spaces:read'] });
    const forbidden = await call(base, 'GET', `/api/realtime/runs?token=${noRuns}`);
    assert.equal(forbidden.status, 403);
  });
});

describe('delivery', () => {
  test('rule 2: Last-Event-ID is not honoured; a reconnect starts at the live tail as a new subscriber', async () => {
    const first = stream('/api/realtime/runs', keyed(w.key));
    await first.count('ping', 1);
    const runId = await launch(w.key);
    await first.until((f) => statusesOf(f, runId).includes('pending'), 'the run');
    const last = first.frames.at(-1)!.id;
    const again = stream('/api/realtime/runs', { ...keyed(w.key), 'last-event-id': last });
    await again.count('ping', 1);
    assert.equal(again.frames[0].event, 'ping', 'nothing replayed before the live tail');
    assert.match(again.frames[0].id, /:1$/);
    assert.notEqual(again.frames[0].id.split(':')[0], last.split(':')[0]);
  });

  test("permissions are re-checked when they change: a revoked key's stream ends and reconnecting is refused", async () => {
    const pool = w.app.deps.database.pool;
    const { cookie } = await aSession(pool, w.org.ownerId);
    const made = await call(base, 'POST', '/api/api-keys', { cookie, org: w.org.orgId, space: w.org.spaceId, body: { name: 'stream', scopes: ['runs:read'] } });
    assert.equal(made.status, 201, made.text);
    const keyStream = stream(`/api/realtime/runs?token=${made.body.key}`);
    const other = stream('/api/realtime/runs', keyed(w.key));
    await keyStream.count('ping', 1);
    await other.count('ping', 1);
    assert.equal((await call(base, 'DELETE', `/api/api-keys/${made.body.id}`, { cookie, org: w.org.orgId, space: w.org.spaceId })).status, 204);
    await keyStream.until(() => keyStream.refusedWith !== null, 'the stream to end and its reconnection to be refused');
    assert.equal(keyStream.refusedWith, 401);
    // the other stream is untouched
    const runId = await launch(w.key);
    await other.until((f) => statusesOf(f, runId).includes('pending'), 'the run on the other stream');
    assert.equal(other.refusedWith, null);
  });

  test('a member demoted below runs:read-all stops seeing runs that are not theirs', async () => {
    const pool = w.app.deps.database.pool;
    const memberId = await aMember(pool, w.org.orgId, 'member', { spaceId: w.org.spaceId, roleKey: 'space_admin' });
    const { cookie } = await aSession(pool, memberId);
    const s = stream(`/api/realtime/runs?orgId=${w.org.orgId}&spaceId=${w.org.spaceId}`, { cookie });
    await s.count('ping', 1);
    const before = await launch(w.key);
    await s.until((f) => statusesOf(f, before).includes('pending'), "the owner's run while space_admin");
    const owner = (await aSession(pool, w.org.ownerId)).cookie;
    const changed = await call(base, 'PATCH', `/api/spaces/${w.org.spaceId}/members/${memberId}`, { cookie: owner, org: w.org.orgId, space: w.org.spaceId, body: { role_key: 'launcher' } });
    assert.ok(changed.status < 300, changed.text);
    const pings = s.of('ping').length;
    // once a ping that follows the change arrived, the re-check (20 ms after the change) has run
    await s.count('ping', pings + 2);
    const afterRun = await launch(w.key);
    const mine = await launch((await aKey(pool, { ...w.org, userId: memberId })).key);
    await s.until((f) => statusesOf(f, mine).includes('pending'), 'their own run');
    assert.deepEqual(statusesOf(s.frames, afterRun), [], "the owner's later run is not shown");
  });
});
