// The sidecar enforces the run's model budget from its assignment: the call that reaches the run's
// limit is answered and the run ends failed run_budget_exceeded; an organization with nothing left
// of its month gets org_budget_exceeded at the first call. The provider is never called past a limit.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { aSidecarAssignment, aSidecarToken, bearer, REAL_MODEL_KEY, sidecarUrlOf, spawnWarm, startEventReceiver } from './sidecar-run-harness.ts';

describe('the sidecar model budget', () => {
  let model: FakeModel;
  before(async () => {
    model = await startFakeModel({ usage: { prompt_tokens: 7, completion_tokens: 3 } });
  });
  after(() => model.close());

  async function aSidecarWithBudget(budget: unknown) {
    const secret = newRunEventSecret();
    const receiver = await startEventReceiver(secret);
    const sidecar = await spawnWarm('sidecar/main.ts');
    const token = aSidecarToken();
    sidecar.assign({
      ...aSidecarAssignment({ token, eventsUrl: `${receiver.url}/events`, eventSecret: secret, model: { baseUrl: model.url, apiKey: REAL_MODEL_KEY, model: 'fake-text' } }),
      budget,
    });
    await receiver.waitFor((events) => events.some((e) => e.type === 'started'));
    const chat = async () => {
      const res = await fetch(`${sidecarUrlOf(sidecar)}/v1/chat/completions`, {
        method: 'POST',
        headers: { ...bearer(token), 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    return { receiver, chat, stop: async () => (await sidecar.kill(), await receiver.close()) };
  }

  test('the call reaching the run budget is answered, the run ends failed run_budget_exceeded, later calls are refused', async (t) => {
    const run = await aSidecarWithBudget({ run: { maxTokens: 15, maxCostUsd: null }, org: null });
    t.after(() => run.stop());
    const before = model.requests.length;
    assert.equal((await run.chat()).status, 200); // 10 tokens
    assert.equal(run.receiver.events.some((e) => e.type === 'failed'), false);
    assert.equal((await run.chat()).status, 200); // 20 tokens: reached
    await run.receiver.waitFor((events) => events.some((e) => e.type === 'failed'));
    const failed = run.receiver.events.find((e) => e.type === 'failed')!;
    assert.equal((failed.data as { code: string }).code, 'run_budget_exceeded');
    const refused = await run.chat();
    assert.equal(refused.status, 402);
    assert.equal(refused.body.error.code, 'run_budget_exceeded');
    assert.equal(model.requests.length, before + 2, 'the provider was not called past the budget');
    assert.equal(run.receiver.events.filter((e) => e.type === 'failed').length, 1);
  });

  test('an organization with nothing left of its month is refused at the first call: org_budget_exceeded', async (t) => {
    const run = await aSidecarWithBudget({ run: null, org: { maxTokens: null, maxCostUsd: 0 } });
    t.after(() => run.stop());
    const before = model.requests.length;
    const refused = await run.chat();
    assert.equal(refused.status, 402);
    assert.equal(refused.body.error.code, 'org_budget_exceeded');
    await run.receiver.waitFor((events) => events.some((e) => e.type === 'failed'));
    assert.equal((run.receiver.events.find((e) => e.type === 'failed')!.data as { code: string }).code, 'org_budget_exceeded');
    assert.equal(model.requests.length, before);
  });

  test('without a budget the run calls its model freely', async (t) => {
    const run = await aSidecarWithBudget(undefined);
    t.after(() => run.stop());
    for (let i = 0; i < 3; i++) assert.equal((await run.chat()).status, 200);
    await run.receiver.waitFor((events) => events.filter((e) => e.type === 'metric').length === 3);
    assert.equal(run.receiver.events.some((e) => e.type === 'failed'), false);
  });
});
