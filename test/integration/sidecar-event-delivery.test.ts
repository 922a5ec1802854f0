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

  test('a 5xx answer is retried with the same webhook-id and bytes, and later events wait their turn', async (t) => {
    const run = await anAssignedSidecar(model, { answer: (event, attempt) => (event.sequence <= 2 && attempt === 1 ? 503 : 202) });
    t.after(() => run.stop());
    await run.modelCall();
    await run.report({ type: 'completed', text: 'ok' });
    await run.receiver.waitFor((events) => events.some((e) => e.type === 'completed'));

    // each event is taken in once, in order, whichever posts carried it
    assert.deepEqual(run.receiver.events.map((e) => [e.sequence, e.type]), [[1, 'started'], [2, 'metric'], [3, 'completed']]);
    const posts = run.receiver.deliveries.filter((d) => d.method === 'POST');
    const byId = new Map<string, typeof posts>();
    for (const d of posts) byId.set(d.webhookId, [...(byId.get(d.webhookId) ?? []), d]);
    for (const [id, tries] of byId) {
      const refused = tries[0].events!.some((e) => e.sequence <= 2);
      assert.deepEqual(tries.map((d) => d.status), refused ? [503, 202] : [202], `message ${id}`);
      assert.deepEqual(tries[tries.length - 1].events, tries[0].events, 'a retry carries the same events');
    }
    // no post carries an event already taken in: a later post starts after the one before it ended
    const firsts = [...byId.values()].map((tries) => tries[0].events!.map((e) => e.sequence));
    assert.deepEqual(firsts.flat(), [1, 2, 3]);
  });

  test('409 message_replayed counts as delivered', async (t) => {
    const run = await anAssignedSidecar(model, { answer: (event) => (event.sequence === 1 ? 409 : 202) });
    t.after(() => run.stop());
    await run.report({ type: 'completed', text: 'ok' });
    await waitUntil(() => run.receiver.deliveries.some((d) => d.events?.some((e) => e.type === 'completed')));
    const posts = run.receiver.deliveries.map((d) => [d.events?.map((e) => e.sequence), d.status]);
    // the start (answered 409) is not posted again, whether the end went with it or after it
    assert.ok(
      JSON.stringify(posts) === JSON.stringify([[[1], 409], [[2], 202]]) || JSON.stringify(posts) === JSON.stringify([[[1, 2], 409]]),
      JSON.stringify(posts),
    );
  });

  test('a 410 answer stops all further posting, heartbeats included', async (t) => {
    const run = await anAssignedSidecar(model, { answer: (event) => (event.sequence === 2 ? 410 : 202), heartbeatSeconds: 1 });
    t.after(() => run.stop());
    await run.modelCall();
    await waitUntil(() => run.receiver.deliveries.some((d) => d.status === 410));
    await run.modelCall();
    await run.report({ type: 'failed', code: 'agent_error', message: 'late' });
    await twoHeartbeatsElsewhere(t);
    const posts = run.receiver.deliveries.map((d) => [d.events?.map((e) => e.sequence), d.status]);
    assert.deepEqual(posts.at(-1)?.[1], 410, JSON.stringify(posts));
    assert.deepEqual(posts.flatMap(([seqs]) => seqs as number[]), [1, 2], 'nothing after the event the platform closed the sink at');
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
