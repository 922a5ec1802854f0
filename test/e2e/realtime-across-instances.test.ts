// Two platform processes on one database: A executes a run (its engine, sandbox and the scripted
// model), B serves the API only. A client of each (the `eventsource` npm client) receives every
// run_update of the run, in order; the single-run stream opened on B starts with its snapshot.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { call } from '../support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importFixture } from '../support/runs.ts';
import { listen, type Frame, type Listener } from '../support/sse.ts';

// replicas share the instance key, or one cannot open what the other sealed
const SHARED = { ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64') };

let db: TestDatabase;
let executor: PlatformProcess;
let apiOnly: PlatformProcess;
let fake: Awaited<ReturnType<typeof startFakeModel>>;
const open: Listener[] = [];

before(async () => {
  fake = await startFakeModel();
  db = await freshDatabase();
  const allow = { EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host };
  [executor, apiOnly] = await Promise.all([
    startPlatformProcess({ db, env: { ...SHARED, ...allow, SANDBOX_WARM_POOL: '1' } }),
    startPlatformProcess({ db, env: { ...SHARED, ...allow, ROLE: 'api', RESTATE_INGRESS_URL: 'http://127.0.0.1:9', RESTATE_ADMIN_URL: 'http://127.0.0.1:9' }, waitFor: 'serving' }),
  ]);
});
after(async () => {
  for (const l of open) l.close();
  await Promise.all([executor?.stop(), apiOnly?.stop()]);
  await db?.drop();
  await fake?.close();
});

const updatesOf = (frames: Frame[], runId: string) => frames.filter((f) => f.event === 'run_update' && f.data.id === runId).map((f) => f.data.status);

test('a client of each instance receives every run_update of a run the other executes, in order, snapshot first', { timeout: 180_000 }, async () => {
  const pool = new pg.Pool({ connectionString: db.url, max: 1 });
  const org = await anOrg(pool);
  const { key } = await aKey(pool, { ...org, userId: org.ownerId });
  await pool.end();
  await importFixture(executor.url, key, 'agent-echo');
  await aDefaultModel(executor.url, key, fake.url);

  const onExecutor = listen(`${executor.url}/api/realtime/runs?token=${key}`);
  const onApi = listen(`${apiOnly.url}/api/realtime/runs?token=${key}`);
  open.push(onExecutor, onApi);
  await onExecutor.count('ping', 1);
  await onApi.count('ping', 1);

  const launched = await call(executor.url, 'POST', '/api/agents/@fixtures/agent-echo/run', { key, body: { input: { message: 'across' } } });
  assert.equal(launched.status, 201, launched.text);
  const runId = launched.body.id;
  const single = listen(`${apiOnly.url}/api/realtime/runs/${runId}?token=${key}`);
  open.push(single);

  const finished = (frames: Frame[]) => updatesOf(frames, runId).some((s) => !['pending', 'running'].includes(s));
  for (const l of [onExecutor, onApi, single]) await l.until(finished, 'the run to end', 150_000);

  for (const l of [onExecutor, onApi]) assert.deepEqual(updatesOf(l.frames, runId), ['pending', 'running', 'success']);
  assert.equal(single.frames[0].event, 'run_update', 'the single-run stream opens with its snapshot');
  const seen = updatesOf(single.frames, runId);
  assert.equal(seen.at(-1), 'success');
  const order = ['pending', 'running', 'success'];
  assert.deepEqual(seen, order.slice(order.indexOf(seen[0])), 'from the snapshot on, each status once, in order');
});
