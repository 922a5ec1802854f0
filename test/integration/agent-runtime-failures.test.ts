import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { startRun, typesInOrder } from './sidecar-run-harness.ts';

describe('agent runtime failures', () => {
  let model: FakeModel;
  before(async () => {
    model = await startFakeModel();
  });
  after(async () => {
    await model.close();
  });

  test('an empty prompt fails the run with empty_prompt before any model call', async (t) => {
    const firstRequest = model.requests.length;
    const run = await startRun({ modelBaseUrl: model.url, model: 'fake', workspace: { prompt: '  \n' } });
    t.after(() => run.stop());
    assert.equal(await run.agent.exited, 0, run.agent.stderr());
    await run.receiver.waitFor((events) => events.some((e) => e.type === 'failed'));
    assert.deepEqual(typesInOrder(run.receiver.events), ['started', 'failed']);
    assert.deepEqual(run.receiver.events[1].data, { code: 'empty_prompt', message: 'prompt.md is empty' });
    assert.equal(model.requests.length, firstRequest);
  });

  test('a model provider that keeps failing fails the run with agent_error', async (t) => {
    const run = await startRun({ modelBaseUrl: model.url, model: 'fake-error', workspace: { prompt: 'Say hi.' } });
    t.after(() => run.stop());
    assert.equal(await run.agent.exited, 0, run.agent.stderr());
    await run.receiver.waitFor((events) => events.some((e) => e.type === 'failed'), 30_000);
    const failed = run.receiver.events.at(-1);
    assert.ok(failed?.type === 'failed');
    assert.equal(failed.data.code, 'agent_error');
    assert.match(failed.data.message, /502|model provider/i);
    const types = typesInOrder(run.receiver.events);
    assert.ok(types.includes('log'), 'the sidecar logged the provider failure');
  });
});
