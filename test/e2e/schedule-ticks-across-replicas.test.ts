// A schedule `* * * * *` in Asia/Kolkata on two platform processes that share one database and one
// Restate server (the first one's embedded engine; both register their workflow endpoints). The
// process whose endpoint the engine calls is SIGKILLed after the first tick and started again, as
// a process manager would: the three ticks still make exactly three runs, one per minute. Real
// minutes: this takes three to four minutes.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { client } from '../support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importFixture } from '../support/runs.ts';

let db: TestDatabase;
let a: PlatformProcess;
let b: PlatformProcess;
let pool: pg.Pool;
let fake: Awaited<ReturnType<typeof startFakeModel>>;

before(async () => {
  fake = await startFakeModel();
  db = await freshDatabase();
  pool = new pg.Pool({ connectionString: db.url, max: 2 });
  // Replicas share the instance key, or one cannot open what another sealed.
  const env = { ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64'), EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host, SANDBOX_WARM_POOL: '0' };
  a = await startPlatformProcess({ db, env });
  const ports = JSON.parse(fs.readFileSync(path.join(a.dataDir, 'ports.json'), 'utf8')) as { restateIngress: number; restateAdmin: number };
  b = await startPlatformProcess({
    db,
    env: { ...env, RESTATE_INGRESS_URL: `http://127.0.0.1:${ports.restateIngress}`, RESTATE_ADMIN_URL: `http://127.0.0.1:${ports.restateAdmin}` },
  });
});
after(async () => {
  await b?.stop();
  await a?.stop();
  await pool?.end();
  await db?.drop();
  await fake?.close();
});

async function scheduledRuns(id: string): Promise<Array<{ id: string; fire: Date }>> {
  const { rows } = await pool.query('SELECT id, schedule_fire_at AS fire FROM runs WHERE schedule_id = $1 ORDER BY schedule_fire_at', [id]);
  return rows;
}

async function waitForRuns(id: string, n: number): Promise<Array<{ id: string; fire: Date }>> {
  const deadline = Date.now() + 150_000;
  for (;;) {
    const runs = await scheduledRuns(id);
    if (runs.length >= n) return runs;
    if (Date.now() > deadline) throw new Error(`${runs.length} runs after waiting for ${n}:\n${b.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('every minute for three minutes across two processes, one killed between ticks: exactly three runs, one per tick', async () => {
  const org = await anOrg(pool);
  const { key } = await aKey(pool, { ...org, userId: org.ownerId });
  await importFixture(a.url, key, 'agent-echo');
  await aDefaultModel(a.url, key, fake.url);
  const created = await client(a.url, { key }).post('/api/agents/@fixtures/agent-echo/schedules', {
    name: 'Every minute', cron_expression: '* * * * *', timezone: 'Asia/Kolkata', input: { message: 'tick' },
  });
  assert.equal(created.status, 201, created.text);
  const id = created.body.id as string;

  const first = await waitForRuns(id, 1);
  // Between ticks: the process registered last (the one the engine calls) dies without a word.
  assert.equal(await b.kill('SIGKILL'), null);
  await b.restart();
  const three = await waitForRuns(id, 3);
  // stop the clock from the surviving process before a fourth tick
  const off = await client(a.url, { key }).post(`/api/schedules/${id}/disable`, {});
  assert.equal(off.status, 200, off.text);

  const runs = await scheduledRuns(id);
  assert.equal(runs.length, 3, JSON.stringify(runs));
  assert.deepEqual(runs.slice(0, 1), first);
  const fires = runs.map((r) => r.fire.getTime());
  assert.equal(fires[0] % 60_000, 0);
  assert.deepEqual(fires, [fires[0], fires[0] + 60_000, fires[0] + 120_000]);
  assert.deepEqual(three.map((r) => r.id), runs.map((r) => r.id));
  const listed = await client(b.url, { key }).get(`/api/schedules/${id}/runs`);
  assert.equal(listed.body.total, 3);
  for (const run of listed.body.data) assert.deepEqual([run.triggered_by.kind, run.triggered_by.schedule_id, run.triggered_by.userId], ['schedule', id, org.ownerId]);
});
