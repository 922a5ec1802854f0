import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { REAL_MODEL_KEY, startRun, typesInOrder } from './sidecar-run-harness.ts';

const outputSchema = {
  type: 'object',
  properties: {
    summary: { type: 'string', minLength: 3 },
    count: { type: 'integer', minimum: 1 },
  },
  required: ['summary', 'count'],
  additionalProperties: false,
};

describe('a run through a real sidecar and agent runtime', () => {
  let model: FakeModel;
  before(async () => {
    model = await startFakeModel();
  });
  after(async () => {
    await model.close();
  });

  test('an echo agent reports started, metrics, its output and completed, in sequence order', async (t) => {
    const firstRequest = model.requests.length;
    const run = await startRun({
      modelBaseUrl: model.url,
      model: 'fake',
      workspace: {
        prompt: 'Summarize the input and count its items.',
        input: { summary: 'three apples', count: 3 },
        skills: { counting: '---\nname: counting\ndescription: How to count things\n---\nCount carefully.\n' },
      },
      outputSchema,
    });
    t.after(() => run.stop());

    assert.equal(await run.agent.exited, 0, run.agent.stderr());
    await run.receiver.waitFor((events) => events.some((e) => e.type === 'completed'));

    const types = typesInOrder(run.receiver.events);
    assert.equal(types[0], 'started');
    assert.equal(types.at(-1), 'completed');
    assert.ok(types.indexOf('output') > types.indexOf('metric'), `order: ${types.join(' ')}`);
    assert.ok(types.indexOf('output') < types.indexOf('completed'));

    const metrics = run.receiver.events.filter((e) => e.type === 'metric');
    assert.equal(metrics.length, 3, 'log call, output call, final answer');
    for (const m of metrics) assert.deepEqual(m.data, { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, model: 'fake' });
    assert.ok(run.receiver.events.some((e) => e.type === 'log' && e.data.message === 'working'));

    const output = run.receiver.events.find((e) => e.type === 'output');
    assert.ok(output && output.type === 'output');
    assert.deepEqual(output.data.output, { summary: 'three apples', count: 3 });
    const validate = new Ajv2020({ strict: false }).compile(outputSchema);
    assert.ok(validate(output.data.output), JSON.stringify(validate.errors));
    const completed = run.receiver.events.at(-1);
    assert.deepEqual(completed?.data, { text: 'done' });

    // the provider key travels only sidecar -> model; the agent process never had it
    const requests = model.requests.slice(firstRequest);
    assert.equal(requests.length, 3);
    for (const r of requests) assert.equal(r.authorization, `Bearer ${REAL_MODEL_KEY}`);
    assert.deepEqual(Object.keys(run.agentEnviron).sort(), ['HOME', 'NODE_OPTIONS', 'PATH']);
    assert.ok(!Object.values(run.agentEnviron).some((v) => v.includes(REAL_MODEL_KEY)));
    assert.ok(!Object.values(run.agentEnviron).some((v) => v.includes('whsec_')));

    // the skill list and the run input reach the model
    const first = requests[0].body;
    assert.match(first.messages[0].content, /- counting: How to count things \(location: skills\/counting\/, instructions in skills\/counting\/SKILL\.md\)/);
    assert.match(first.messages[1].content, /"three apples"/);

    const sidecarRss = run.sidecar.rssKb();
    const sinceAssigned = (i: number) => (run.receiver.arrivedAtMs[i] - run.assignedAtMs).toFixed(0);
    t.diagnostic(
      `ready: sidecar ${run.sidecar.readyMs.toFixed(0)} ms, agent runtime ${run.agent.readyMs.toFixed(0)} ms; ` +
        `after assignment: started ${sinceAssigned(0)} ms, completed ${sinceAssigned(run.receiver.events.length - 1)} ms; ` +
        `rss after run: sidecar ${((sidecarRss ?? 0) / 1024).toFixed(1)} MiB, agent runtime peak ${(run.agentPeakRss.peakKb() / 1024).toFixed(1)} MiB`,
    );
  });

  test('a model that answers in text is re-prompted once to call output, and the run completes without output', async (t) => {
    const firstRequest = model.requests.length;
    const run = await startRun({
      modelBaseUrl: model.url,
      model: 'fake-text',
      workspace: { prompt: 'Summarize the input.', input: { summary: 'x', count: 1 } },
      outputSchema,
    });
    t.after(() => run.stop());

    assert.equal(await run.agent.exited, 0, run.agent.stderr());
    await run.receiver.waitFor((events) => events.some((e) => e.type === 'completed'));

    const requests = model.requests.slice(firstRequest);
    assert.equal(requests.length, 2);
    const reprompt = requests[1].body.messages.at(-1);
    assert.equal(reprompt.role, 'user');
    assert.match(reprompt.content, /must call the output tool/);
    const types = typesInOrder(run.receiver.events);
    assert.deepEqual(types, ['started', 'metric', 'metric', 'completed']);
  });
});
