// Run reads are served from a process-local cache until a change to what the wire shows is heard
// (NOTIFY run_wire_changed from a trigger): a change committed anywhere shows on the next reads,
// a launch on this instance shows at once, and while the listener is down every read goes to the
// database. A change made with triggers off (session_replication_role = replica) is never
// announced, which is how these tests see that a read came from the cache.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { aKey, anOrg, type BuiltOrg } from '../support/builders.ts';
import { call, client } from '../support/http.ts';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import { aDefaultModel, importFixture } from '../support/runs.ts';

const ECHO = '/api/agents/@fixtures/agent-echo/run';
let fake: Awaited<ReturnType<typeof startFakeModel>>;
let app: TestApp;
let org: BuiltOrg;
let api: ReturnType<typeof client>;
let elsewhere: pg.Client;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An UPDATE from another connection, as another replica or the workflow would make it. */
async function changeElsewhere(sql: string, params: unknown[], opts: { announced: boolean }): Promise<void> {
  await elsewhere.query('BEGIN');
  if (!opts.announced) await elsewhere.query('SET LOCAL session_replication_role = replica');
  await elsewhere.query(sql, params);
  await elsewhere.query('COMMIT');
}

/**
 * Runs `fn` with the announcing trigger off: only this instance's own invalidation can then make
 * a read after a change show it.
 */
async function withoutAnnouncements(fn: () => Promise<void>): Promise<void> {
  await elsewhere.query('ALTER TABLE runs DISABLE TRIGGER runs_wire_changed');
  try {
    await fn();
  } finally {
    await elsewhere.query('ALTER TABLE runs ENABLE TRIGGER runs_wire_changed');
  }
}

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 3000): Promise<T> {
  const deadline = Date.now() + ms;
  let v = await read();
  while (!ok(v) && Date.now() < deadline) {
    await sleep(20);
    v = await read();
  }
  return v;
}

async function launch(message: string): Promise<string> {
  const res = await api.post(ECHO, { input: { message } });
  assert.equal(res.status, 201, res.text);
  return res.body.id;
}

/** A launch whose own announcement has been heard, so a read after it stays cached. */
async function launchSettled(message: string): Promise<string> {
  const heard = new Promise<void>((resolve) => {
    const off = app.deps.runFeed!.onWireChange((spaceId) => {
      if (spaceId !== org.spaceId) return;
      off();
      resolve();
    });
  });
  const id = await launch(message);
  await heard;
  // an announcement of an earlier change may have come first: give the launch's its turn
  await sleep(100);
  return id;
}

before(async () => {
  fake = await startFakeModel();
  app = await startTestApp({ env: { EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host } });
  org = await anOrg(app.deps.database.pool);
  const { key } = await aKey(app.deps.database.pool, { ...org, userId: org.ownerId });
  api = client(app.url, { key });
  await importFixture(app.url, key, 'agent-echo');
  await aDefaultModel(app.url, key, fake.url);
  elsewhere = new pg.Client({ connectionString: app.deps.config.DATABASE_URL });
  await elsewhere.connect();
});
after(async () => {
  await elsewhere.end();
  await app.close();
  await fake.close();
});

describe('run reads follow every change', () => {
  test('a read is served from the cache until a change is announced, then shows it', async () => {
    const id = await launchSettled('cached');
    assert.equal((await api.get(`/api/runs/${id}`)).body.timeout_seconds !== 7, true);
    await changeElsewhere('UPDATE runs SET timeout_seconds = 7 WHERE id = $1', [id], { announced: false });
    await sleep(200);
    assert.notEqual((await api.get(`/api/runs/${id}`)).body.timeout_seconds, 7, 'an unannounced change is not seen: the read was cached');

    await changeElsewhere(`UPDATE runs SET status = 'failed', error = '{"code":"x","message":"y"}', finished_at = now() WHERE id = $1`, [id], { announced: true });
    const read = await until(() => api.get(`/api/runs/${id}`), (r) => r.body.status === 'failed');
    assert.equal(read.body.status, 'failed');
    assert.equal(read.body.timeout_seconds, 7, 'the announced change brought the whole row back');
    const list = await until(() => api.get('/api/runs?limit=100'), (r) => r.body.data.find((x: { id: string }) => x.id === id)?.status === 'failed');
    assert.equal(list.body.data.find((x: { id: string }) => x.id === id).status, 'failed');
  });

  test('a launch, a cancel and a delete on this instance show on the very next list read', async () => {
    const first = await launchSettled('before');
    await withoutAnnouncements(async () => {
      await api.get('/api/runs?limit=100');
      const second = await launch('after');
      const ids = (await api.get('/api/runs?limit=100')).body.data.map((r: { id: string }) => r.id);
      assert.ok(ids.includes(first) && ids.includes(second), 'the new run is listed at once');

      await api.get(`/api/runs/${second}`);
      assert.equal((await api.post(`/api/runs/${second}/cancel`, {})).status, 200);
      const afterCancel = (await api.get('/api/runs?limit=100')).body.data.find((r: { id: string }) => r.id === second);
      assert.equal(afterCancel.status, 'cancelled');
      assert.equal((await api.get(`/api/runs/${second}`)).body.status, 'cancelled');

      assert.equal((await api.delete(`/api/runs/${second}`)).status, 204);
      assert.equal((await api.get(`/api/runs/${second}`)).status, 404);
      assert.ok(!(await api.get('/api/runs?limit=100')).body.data.some((r: { id: string }) => r.id === second));
    });
  });

  test("a runner's event recorded on this instance shows on the very next read", async () => {
    const id = await launchSettled('event');
    await withoutAnnouncements(async () => {
      assert.equal((await api.get(`/api/runs/${id}`)).body.status, 'pending');
      const { rows } = await elsewhere.query<{ event_secret: string }>('SELECT event_secret FROM runs WHERE id = $1', [id]);
      const raw = JSON.stringify({ sequence: 1, type: 'started', at: new Date().toISOString(), data: {} });
      const posted = await call(app.url, 'POST', `/internal/runs/${id}/events`, {
        rawBody: raw, headers: { 'content-type': 'application/json', ...signedRunEventHeaders(app.deps.secrets.open(rows[0].event_secret), raw) },
      });
      assert.equal(posted.status, 204, posted.text);
      assert.equal((await api.get(`/api/runs/${id}`)).body.status, 'running');
    });
  });

  test('a change outside the wire (liveness) announces nothing; usage does', async () => {
    const id = await launchSettled('usage');
    const before = (await api.get(`/api/runs/${id}`)).body;
    await changeElsewhere('UPDATE runs SET timeout_seconds = 9 WHERE id = $1', [id], { announced: false });
    await changeElsewhere('UPDATE runs SET last_event_at = now(), last_sequence = 3 WHERE id = $1', [id], { announced: true });
    await sleep(200);
    assert.equal((await api.get(`/api/runs/${id}`)).body.timeout_seconds, before.timeout_seconds, 'still the cached read');
    await changeElsewhere('UPDATE runs SET completion_tokens = 42 WHERE id = $1', [id], { announced: true });
    const read = await until(() => api.get(`/api/runs/${id}`), (r) => r.body.cost.completion_tokens === 42);
    assert.equal(read.body.cost.completion_tokens, 42);
    assert.equal(read.body.timeout_seconds, 9);
  });

  test('while the listener is down every read goes to the database, and after it is back the cache starts anew', async () => {
    const id = await launch('listener');
    await api.get(`/api/runs/${id}`);
    const { rows } = await elsewhere.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN run_status%'`,
    );
    assert.equal(rows.length, 1, 'one listening connection');
    await elsewhere.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
    await until(async () => app.deps.runFeed!.listening, (l) => !l, 2000);

    await changeElsewhere('UPDATE runs SET timeout_seconds = 11 WHERE id = $1', [id], { announced: false });
    assert.equal((await api.get(`/api/runs/${id}`)).body.timeout_seconds, 11, 'not served from the cache');

    await until(async () => app.deps.runFeed!.listening, (l) => l, 5000);
    assert.equal(app.deps.runFeed!.listening, true, 'the listener reconnects');
    await changeElsewhere('UPDATE runs SET timeout_seconds = 12 WHERE id = $1', [id], { announced: false });
    assert.equal((await api.get(`/api/runs/${id}`)).body.timeout_seconds, 12, 'nothing cached before the reconnection is served');
  });
});
