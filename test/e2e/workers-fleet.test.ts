// A fleet of sandbox hosts on one machine (issue 31, process backend): a platform (ROLE=all, its
// embedded Restate, itself a worker) and two ROLE=worker processes joining it with their own data
// directories. Runs spread over the workers; a worker refuses another's sandbox; a drained worker
// takes no new runs and finishes its own; a worker killed with SIGKILL loses only its own runs
// (the started ones end sandbox_lost promptly, the unstarted ones boot elsewhere), none twice.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { startFakeModel } from '../fixtures/fake-model/server.ts';
import { aKey, anOrg } from '../support/builders.ts';
import { client } from '../support/http.ts';
import { startPlatformProcess, type PlatformProcess } from '../support/platform-process.ts';
import { aDefaultModel, importFixture, waitForStatus } from '../support/runs.ts';

const WORKER_HEARTBEAT_SECONDS = 2;
const WORKER_LOST_HEARTBEATS = 3;
/** the fleet's liveness period: a worker silent this long is lost */
const LOSS_WINDOW_MS = WORKER_HEARTBEAT_SECONDS * WORKER_LOST_HEARTBEATS * 1000;
const FLEET_ENV = {
  // 1 s heartbeats lose runs on a loaded machine (heartbeat_lost): the fleet's own timings are under test
  RUN_HEARTBEAT_SECONDS: '2',
  SANDBOX_WARM_POOL: '0',
  WORKER_HEARTBEAT_SECONDS: String(WORKER_HEARTBEAT_SECONDS),
  WORKER_LOST_HEARTBEATS: String(WORKER_LOST_HEARTBEATS),
};

type Api = ReturnType<typeof client>;

interface World {
  platform: PlatformProcess;
  workers: Record<'a' | 'b', PlatformProcess>;
  pool: pg.Pool;
  api: Api;
  launchers: Api[];
  fake: Awaited<ReturnType<typeof startFakeModel>>;
  ingressUrl: string;
}

const undo: Array<() => Promise<void>> = [];
let world: World;

before(async () => {
  const fake = await startFakeModel({});
  undo.push(() => fake.close());
  const platform = await startPlatformProcess({
    env: { ...FLEET_ENV, WORKER_ID: 'home', EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host },
  });
  undo.push(() => platform.stop());
  const ports = JSON.parse(fs.readFileSync(path.join(platform.dataDir, 'ports.json'), 'utf8')) as { restateIngress: number; restateAdmin: number };
  const ingressUrl = `http://127.0.0.1:${ports.restateIngress}`;
  // Joining is configuration: the fleet's database and engine, its keys, an own data directory.
  const joining = (id: string) => ({
    ...FLEET_ENV,
    ROLE: 'worker',
    WORKER_ID: id,
    RESTATE_INGRESS_URL: ingressUrl,
    RESTATE_ADMIN_URL: `http://127.0.0.1:${ports.restateAdmin}`,
    RESTATE_REQUEST_IDENTITY_KEY_FILE: path.join(platform.dataDir, 'restate-identity.pem'),
    ENCRYPTION_KEY: fs.readFileSync(path.join(platform.dataDir, 'encryption.key'), 'utf8').trim(),
    INTERNAL_API_URL: platform.url,
    EGRESS_ALLOW_INTERNAL_HOSTS: new URL(fake.url).host,
  });
  const a = await startPlatformProcess({ db: platform.db, env: joining('workera'), waitFor: 'started' });
  undo.push(() => a.stop());
  const b = await startPlatformProcess({ db: platform.db, env: joining('workerb'), waitFor: 'started' });
  undo.push(() => b.stop());
  const pool = new pg.Pool({ connectionString: platform.db.url, max: 3 });
  undo.push(() => pool.end());
  const org = await anOrg(pool);
  // launches spread over keys, so the per-caller launch limit (20 a minute) never answers
  const keys = await Promise.all(Array.from({ length: 6 }, () => aKey(pool, { ...org, userId: org.ownerId })));
  const { key } = keys[0];
  await importFixture(platform.url, key, 'agent-echo');
  await aDefaultModel(platform.url, key, fake.url, 'fake');
  world = { platform, workers: { a, b }, pool, api: client(platform.url, { key }), launchers: keys.map((k) => client(platform.url, { key: k.key })), fake, ingressUrl };
});

after(async () => {
  for (const step of undo.reverse()) await step().catch(() => {});
});

let launches = 0;

async function launch(_api: Api): Promise<string> {
  const res = await world.launchers[launches++ % world.launchers.length].post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'x' } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id as string;
}

async function placements(pool: pg.Pool, ids: string[]): Promise<Map<string, { worker: string | null; status: string; finishedAt: Date | null; code: string | null }>> {
  const { rows } = await pool.query<{ id: string; worker_id: string | null; status: string; finished_at: Date | null; code: string | null }>(
    `SELECT id, worker_id, status, finished_at, error->>'code' AS code FROM runs WHERE id = ANY($1::text[])`, [ids]);
  return new Map(rows.map((r) => [r.id, { worker: r.worker_id, status: r.status, finishedAt: r.finished_at, code: r.code }]));
}

async function until<T>(what: string, ms: number, probe: () => Promise<T | null | undefined | false>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const ended = (s: string) => !['pending', 'running'].includes(s);

/** The run workflow's own result: what it ended with and whether its compare-and-set recorded it. */
async function workflowResult(runId: string): Promise<{ ending: { status: string; error?: { code: string } }; finalized: boolean }> {
  return until(`the workflow result of ${runId}`, 30_000, async () => {
    const res = await fetch(`${world.ingressUrl}/restate/workflow/run/${runId}/output`).catch(() => null);
    if (res?.ok) return (await res.json()) as any;
    if (res && res.status !== 470 && res.status !== 404) {
      return fetch(`${world.ingressUrl}/run/${runId}/result`, { method: 'POST' }).then((r) => (r.ok ? r.json() : null), () => null);
    }
    return null;
  });
}

/** The run ended once: the workflow's recorded ending is the run's, or it found another already recorded. */
async function assertEndedOnce(runId: string): Promise<void> {
  const result = await workflowResult(runId);
  const { rows } = await world.pool.query(`SELECT status, error->>'code' AS code, finished_at FROM runs WHERE id = $1`, [runId]);
  assert.ok(rows[0].finished_at, `run ${runId} has finished_at`);
  if (result.finalized) {
    assert.equal(rows[0].status, result.ending.status, `run ${runId}`);
    assert.equal(rows[0].code ?? undefined, result.ending.error?.code, `run ${runId}`);
  }
}

describe('a fleet of workers on one machine', { concurrency: false }, () => {
  test('20 runs are spread over the workers, each recorded with the worker that held it', async () => {
    const { api, pool } = world;
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await launch(api));
    for (const id of ids) {
      const run = await waitForStatus(api, id, ended, 180_000);
      assert.equal(run.status, 'success', `run ${id} on ${(await placements(pool, [id])).get(id)?.worker}: ${JSON.stringify(run.error)}`);
    }
    const held = await placements(pool, ids);
    const perWorker = new Map<string, number>();
    for (const { worker } of held.values()) perWorker.set(String(worker), (perWorker.get(String(worker)) ?? 0) + 1);
    // the joining workers serve only their own hosts: the run workflow stays with the platform
    const ports = JSON.parse(fs.readFileSync(path.join(world.platform.dataDir, 'ports.json'), 'utf8')) as { restateAdmin: number; worker: number };
    const service = (await (await fetch(`http://127.0.0.1:${ports.restateAdmin}/services/run`)).json()) as { deployment_id: string };
    const deployment = (await (await fetch(`http://127.0.0.1:${ports.restateAdmin}/deployments/${service.deployment_id}`)).json()) as { uri: string };
    assert.equal(new URL(deployment.uri).port, String(ports.worker));
    for (const w of perWorker.keys()) assert.ok(['home', 'workera', 'workerb'].includes(w), `placed on ${w}`);
    assert.ok((perWorker.get('workera') ?? 0) >= 1 && (perWorker.get('workerb') ?? 0) >= 1, `both joined workers held runs: ${JSON.stringify([...perWorker])}`);
  });

  test("a worker refuses to act on another worker's sandbox", async () => {
    const { api, pool, fake } = world;
    fake.setLatency(4_000);
    try {
      const id = await launch(api);
      const worker = await until('the run placed', 30_000, async () => (await placements(pool, [id])).get(id)?.worker);
      const other = worker === 'workera' ? 'workerb' : 'workera';
      await waitForStatus(api, id, (s) => s === 'running', 60_000);
      // the engine delivers the call to the other worker, which refuses: the run is not placed there
      const res = await fetch(`${world.ingressUrl}/sandboxHost_${other}/teardown`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ runId: id, sandboxId: 'any' }),
      });
      const text = await res.text();
      assert.equal(res.status, 403, text);
      assert.match(text, /not placed on worker/);
      assert.equal((await waitForStatus(api, id, ended, 60_000)).status, 'success');
    } finally {
      fake.setLatency(0);
    }
  });

  test('a drained worker (SIGUSR2) takes no new runs and finishes the ones it holds', async () => {
    const { api, pool, fake, workers } = world;
    fake.setLatency(3_000);
    try {
      // runs until one is held by worker a
      const first: string[] = [];
      const onA = await until('a run held by worker a', 60_000, async () => {
        first.push(await launch(api));
        const held = await placements(pool, first);
        return [...held.entries()].find(([, p]) => p.worker === 'workera')?.[0];
      });
      workers.a.proc.kill('SIGUSR2');
      await until('worker a draining', 20_000, async () => (await pool.query(`SELECT draining FROM workers WHERE id = 'workera'`)).rows[0]?.draining === true);
      const later: string[] = [];
      for (let i = 0; i < 6; i++) later.push(await launch(api));
      for (const id of [...first, ...later]) assert.equal((await waitForStatus(api, id, ended, 120_000)).status, 'success', `run ${id}`);
      const held = await placements(pool, later);
      assert.ok([...held.values()].every((p) => p.worker !== 'workera'), 'no new run on the drained worker');
      assert.equal((await placements(pool, [onA])).get(onA)?.worker, 'workera');
    } finally {
      fake.setLatency(0);
    }
  });

  test('a worker killed with SIGKILL: its started runs end sandbox_lost within two liveness periods, its unstarted runs succeed elsewhere, nothing else is affected', async () => {
    const { api, pool, fake, workers } = world;
    fake.setLatency(6_000);
    const ids: string[] = [];
    try {
      // worker a is drained: the runs go to the platform's own host and to worker b
      for (let i = 0; i < 6; i++) ids.push(await launch(api));
      await until('a run running on worker b', 60_000, async () => [...(await placements(pool, ids)).values()].some((p) => p.worker === 'workerb' && p.status === 'running'));
      // launched just before the kill: some are placed on b and not started yet
      const late = await until('a run placed on worker b, not started', 30_000, async () => {
        ids.push(await launch(api));
        return [...(await placements(pool, ids)).values()].some((p) => p.worker === 'workerb' && p.status === 'pending');
      });
      assert.ok(late);
      await workers.b.kill('SIGKILL');
      const killedAt = Date.now();
      // the runs as the kill left them, once a first event the worker's sidecar host posted just
      // before it went (the host ends with the worker) has been recorded or refused
      await new Promise((r) => setTimeout(r, 2_000));
      const atKill = await placements(pool, ids);
      fake.setLatency(0);
      for (const id of ids) await waitForStatus(api, id, ended, 120_000);
      const now = await placements(pool, ids);
      let lost = 0;
      let rebooted = 0;
      for (const id of ids) {
        const before = atKill.get(id)!;
        const after = now.get(id)!;
        if (before.worker === 'workerb' && before.status === 'running') {
          lost++;
          assert.equal(after.status, 'failed', `run ${id}`);
          assert.equal(after.code, 'sandbox_lost', `run ${id}`);
          const tookMs = after.finishedAt!.getTime() - killedAt;
          assert.ok(tookMs < 2 * LOSS_WINDOW_MS, `run ${id} ended ${tookMs} ms after the kill (bound ${2 * LOSS_WINDOW_MS} ms)`);
        } else if (before.worker === 'workerb' && before.status === 'pending') {
          rebooted++;
          assert.equal(after.status, 'success', `run ${id} (not started on the lost worker) succeeds elsewhere: ${after.code} on ${after.worker}`);
          assert.notEqual(after.worker, 'workerb');
        } else if (ended(before.status)) {
          continue;
        } else {
          assert.equal(after.status, 'success', `run ${id} on ${before.worker} is not affected`);
        }
      }
      assert.ok(lost >= 1 && rebooted >= 1, `lost ${lost}, booted elsewhere ${rebooted}`);
      for (const id of ids) await assertEndedOnce(id);
      // the fleet goes on: a run launched now succeeds, on a live worker
      const next = await launch(api);
      assert.equal((await waitForStatus(api, next, ended, 60_000)).status, 'success');
      assert.notEqual((await placements(pool, [next])).get(next)?.worker, 'workerb');
    } finally {
      fake.setLatency(0);
    }
  });
});
