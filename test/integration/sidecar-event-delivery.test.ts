import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { newRunEventSecret, type RunEvent } from '../../lib/run-events.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import {
  aSidecarAssignment,
  aSidecarToken,
  bearer,
  REAL_MODEL_KEY,
  sidecarUrlOf,
  spawnWarm,
  startEventReceiver,
  typesInOrder,
  waitUntil,
} from './sidecar-run-harness.ts';

/** A sidecar assigned to a run whose events go to a receiver answering as `answer` says. */
async function anAssignedSidecar(
  model: FakeModel,
  opts: { answer?: (event: RunEvent, attempt: number) => number; heartbeatSeconds?: number } = {},
) {
  const secret = newRunEventSecret();
  const receiver = await startEventReceiver(secret, { answer: opts.answer });
  const sidecar = await spawnWarm('sidecar/main.ts');
  const token = aSidecarToken();
  sidecar.assign(
    aSidecarAssignment({
      token,
      eventsUrl: `${receiver.url}/internal/runs/run_test/events`,
      eventSecret: secret,
      model: { baseUrl: model.url, apiKey: REAL_MODEL_KEY, model: 'fake' },
      heartbeatSeconds: opts.heartbeatSeconds ?? 60,
    }),
  );
  const url = sidecarUrlOf(sidecar);
  return {
    receiver,
    sidecar,
    modelCall: async () => {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: bearer(token),
        body: JSON.stringify({ model: 'any', messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(res.status, 200);
      await res.json();
    },
    report: (body: unknown) => fetch(`${url}/runtime/events`, { method: 'POST', headers: bearer(token), body: JSON.stringify(body) }),
    stop: async () => {
      await sidecar.kill();
      await receiver.close();
    },
  };
}

describe('run event delivery from the sidecar', () => {
  let model: FakeModel;
  before(async () => {
    model = await startFakeModel();
  });

  /**
   * The positive signal before asserting that nothing more came: a control sidecar with the same
   * one-second heartbeat, started now, has posted two heartbeats, so a heartbeat the run under test
   * still owed would have arrived by then, however slow the machine is.
   */
  async function twoHeartbeatsElsewhere(t: { after(fn: () => Promise<void>): void }): Promise<void> {
    const control = await anAssignedSidecar(model, { heartbeatSeconds: 1 });
    t.after(() => control.stop());
    await control.receiver.waitFor((events) => events.filter((e) => e.type === 'heartbeat').length >= 2, 20_000);
  }
  after(async () => {
    await model.close();
  });

  test('a 5xx answer is retried with the same webhook-id, and later events wait their turn', async (t) => {
    const run = await anAssignedSidecar(model, { answer: (event, attempt) => (event.sequence <= 2 && attempt === 1 ? 503 : 202) });
    t.after(() => run.stop());
    await run.modelCall();
    await run.report({ type: 'completed', text: 'ok' });
    await run.receiver.waitFor((events) => events.some((e) => e.type === 'completed'));

    assert.deepEqual(typesInOrder(run.receiver.events), ['started', 'metric', 'completed']);
    const posts = run.receiver.deliveries.filter((d) => d.method === 'POST');
    assert.deepEqual(posts.map((d) => [d.event?.sequence, d.status]), [[1, 503], [1, 202], [2, 503], [2, 202], [3, 202]]);
    assert.equal(posts[0].webhookId, posts[1].webhookId);
    assert.equal(posts[2].webhookId, posts[3].webhookId);
    assert.equal(new Set(posts.map((d) => d.webhookId)).size, 3);
  });

  test('409 message_replayed counts as delivered', async (t) => {
    const run = await anAssignedSidecar(model, { answer: (event) => (event.sequence === 1 ? 409 : 202) });
    t.after(() => run.stop());
    await run.report({ type: 'completed', text: 'ok' });
    await waitUntil(() => run.receiver.deliveries.length >= 2);
    const posts = run.receiver.deliveries.map((d) => [d.event?.sequence, d.status]);
    assert.deepEqual(posts, [[1, 409], [2, 202]]);
  });

  test('a 410 answer stops all further posting, heartbeats included', async (t) => {
    const run = await anAssignedSidecar(model, { answer: (event) => (event.sequence === 2 ? 410 : 202), heartbeatSeconds: 1 });
    t.after(() => run.stop());
    await run.modelCall();
    await waitUntil(() => run.receiver.deliveries.length >= 2);
    await run.modelCall();
    await run.report({ type: 'failed', code: 'agent_error', message: 'late' });
    await twoHeartbeatsElsewhere(t);
    assert.deepEqual(run.receiver.deliveries.map((d) => [d.event?.sequence, d.status]), [[1, 202], [2, 410]]);
  });

  test('heartbeats arrive every heartbeatSeconds until the run reports its end', async (t) => {
    const run = await anAssignedSidecar(model, { heartbeatSeconds: 1 });
    t.after(() => run.stop());
    await run.receiver.waitFor((events) => events.filter((e) => e.type === 'heartbeat').length >= 2, 5_000);
    await run.report({ type: 'completed', text: 'ok' });
    await run.receiver.waitFor((events) => events.some((e) => e.type === 'completed'));
    const count = run.receiver.events.length;
    await twoHeartbeatsElsewhere(t);
    assert.equal(run.receiver.events.length, count, 'no heartbeat after the end');
    const types = typesInOrder(run.receiver.events);
    assert.equal(types[0], 'started');
    assert.equal(types.at(-1), 'completed');
    assert.ok(types.filter((x) => x === 'heartbeat').length >= 2);
    for (const e of run.receiver.events) assert.ok(!Number.isNaN(Date.parse(e.at)), 'at is an ISO date');
  });

  test('an end report must be well formed, and a second one is refused', async (t) => {
    const run = await anAssignedSidecar(model);
    t.after(() => run.stop());
    assert.equal((await run.report({ type: 'finished' })).status, 400);
    assert.equal((await run.report({ type: 'failed', message: 'no code' })).status, 400);
    assert.equal((await run.report({ type: 'completed', text: 'ok' })).status, 202);
    assert.equal((await run.report({ type: 'failed', code: 'agent_error', message: 'x' })).status, 409);
    await run.receiver.waitFor((events) => events.some((e) => e.type === 'completed'));
    assert.deepEqual(typesInOrder(run.receiver.events), ['started', 'completed']);
  });
});
