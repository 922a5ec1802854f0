// A run's sandbox belongs to the worker the run is placed on (runs.worker_id). A sandbox names its
// worker in its sink URL (?placement=): once the run is placed elsewhere (its worker was lost and the
// run booted again on another), the sink answers the old sandbox 410 run_sink_closed through the
// route as a sandbox posts, and the old worker's reaper, should it come back, stops that sandbox.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { signedRunEventHeaders } from '../../lib/run-events.ts';
import type { SandboxAdapter, SandboxSpec } from '../../activities/sandbox/adapter.ts';
import { reapEndedSandboxes } from '../../activities/sandbox/reaper.ts';
import { runActivitiesFor } from '../../bin/sandbox.ts';
import { aKey } from '../support/builders.ts';
import { call, client } from '../support/http.ts';
import { aRunWorld, type RunWorld } from '../support/runs.ts';

let world: RunWorld;
const launchers: Array<ReturnType<typeof client>> = [];
let launches = 0;

before(async () => {
  world = await aRunWorld();
  for (let i = 0; i < 2; i++) {
    const { key } = await aKey(world.app.deps.database.pool, { ...world.org, userId: world.org.ownerId });
    launchers.push(client(world.app.url, { key }));
  }
});
after(() => world.close());

async function aRun(workerId: string | null, status = 'pending'): Promise<string> {
  const res = await launchers[launches++ % launchers.length].post('/api/agents/@fixtures/agent-echo/run', { input: { message: 'hi' } });
  assert.equal(res.status, 201, res.text);
  await world.app.deps.database.pool.query('UPDATE runs SET worker_id = $2, status = $3 WHERE id = $1', [res.body.id, workerId, status]);
  return res.body.id as string;
}

/** posts one signed event to the run's sink as a sandbox does, its URL naming `placement` */
async function post(runId: string, placement: string | null, sequence: number, type: string) {
  const { rows } = await world.app.deps.database.pool.query('SELECT event_secret FROM runs WHERE id = $1', [runId]);
  const raw = JSON.stringify({ events: [{ sequence, type, data: {} }] });
  const path = `/internal/runs/${runId}/events${placement === null ? '' : `?placement=${encodeURIComponent(placement)}`}`;
  return call(world.app.url, 'POST', path, {
    rawBody: raw, headers: { 'content-type': 'application/json', ...signedRunEventHeaders(world.app.deps.secrets.open(rows[0].event_secret), raw) },
  });
}

describe('the sink names the sandbox it hears by its worker', () => {
  test("the old worker's sandbox is answered 410 run_sink_closed once the run is placed on another; the new one is heard", async () => {
    const runId = await aRun('w_lost');
    assert.equal((await post(runId, 'w_lost', 1, 'heartbeat')).status, 204);
    // the worker is lost; the run, not started, is placed on another
    await world.app.deps.database.pool.query(`UPDATE runs SET worker_id = 'w_live' WHERE id = $1`, [runId]);
    const stale = await post(runId, 'w_lost', 2, 'started');
    assert.equal(stale.status, 410, stale.text);
    assert.equal(stale.body.code, 'run_sink_closed');
    assert.match(stale.body.detail, /placed on another worker/);
    assert.equal((await world.api.get(`/api/runs/${runId}`)).body.status, 'pending');
    assert.equal((await post(runId, 'w_live', 1, 'started')).status, 204);
    assert.equal((await world.api.get(`/api/runs/${runId}`)).body.status, 'running');
  });

  test("a worker's boot gives the sandbox a sink URL naming that worker; outside a fleet, none", async () => {
    const bootedBy = async (workerId?: string) => {
      const runId = await aRun(workerId ?? null);
      const started: SandboxSpec[] = [];
      const capture = {
        kind: 'process',
        start: async (spec: SandboxSpec) => { started.push(spec); return { sandboxId: 'sbx_capture' }; },
        state: async () => 'running', sandboxes: () => [], stop: async () => undefined, close: async () => undefined,
      } as unknown as SandboxAdapter;
      await runActivitiesFor(world.app.deps, capture, workerId).boot(runId);
      return { runId, eventsUrl: new URL(started[0].sidecar.eventsUrl) };
    };
    const placed = await bootedBy('w_7f3a');
    assert.equal(placed.eventsUrl.pathname, `/internal/runs/${placed.runId}/events`);
    assert.equal(placed.eventsUrl.searchParams.get('placement'), 'w_7f3a');
    const alone = await bootedBy();
    assert.equal(alone.eventsUrl.search, '');
  });

  test('a placement that is not a worker id is a bad request, not a refusal of the run', async () => {
    const runId = await aRun('w_live');
    const res = await call(world.app.url, 'POST', `/internal/runs/${runId}/events?placement=${'x'.repeat(201)}`, {
      rawBody: '{}', headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.code, 'invalid_request');
  });
});

describe("a worker's reaper", () => {
  test('stops the sandboxes whose run ended, is unknown or is placed on another worker; keeps its own', async () => {
    const mine = await aRun('w_me');
    const unplaced = await aRun(null);
    const movedAway = await aRun('w_other', 'running');
    const ended = await aRun('w_me', 'failed');
    const live = [
      { sandboxId: 'sb_mine', runId: mine },
      { sandboxId: 'sb_unplaced', runId: unplaced },
      { sandboxId: 'sb_moved', runId: movedAway },
      { sandboxId: 'sb_ended', runId: ended },
      { sandboxId: 'sb_unknown', runId: 'run_doesnotexist' },
    ];
    const adapter = (stopped: string[]) => ({ sandboxes: () => live, stop: async (id: string) => void stopped.push(id) });
    const byWorker: string[] = [];
    assert.deepEqual((await reapEndedSandboxes(world.app.deps.database.pool, adapter(byWorker), 'w_me')).sort(), ['sb_ended', 'sb_moved', 'sb_unknown']);
    assert.deepEqual(byWorker.sort(), ['sb_ended', 'sb_moved', 'sb_unknown']);
    // without a worker id (outside a fleet) placement is not looked at
    const anywhere: string[] = [];
    assert.deepEqual((await reapEndedSandboxes(world.app.deps.database.pool, adapter(anywhere))).sort(), ['sb_ended', 'sb_unknown']);
  });
});
