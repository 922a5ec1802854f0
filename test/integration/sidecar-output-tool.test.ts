import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { startFakeModel, type FakeModel } from '../fixtures/fake-model/server.ts';
import { aSidecarAssignment, bearer, sidecarUrlOf, spawnWarm, startEventReceiver, startRun, typesInOrder } from './sidecar-run-harness.ts';

describe('the output tool', () => {
  let model: FakeModel;
  before(async () => {
    model = await startFakeModel();
  });
  after(async () => {
    await model.close();
  });

  test('an output that breaks the schema is still recorded, and the model is told what is wrong', async (t) => {
    const firstRequest = model.requests.length;
    const run = await startRun({
      modelBaseUrl: model.url,
      model: 'fake-bad-output',
      workspace: { prompt: 'Produce a title.' },
      outputSchema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] },
    });
    t.after(() => run.stop());
    assert.equal(await run.agent.exited, 0, run.agent.stderr());
    await run.receiver.waitFor((events) => events.some((e) => e.type === 'completed'));

    assert.deepEqual(typesInOrder(run.receiver.events), ['started', 'metric', 'output', 'metric', 'completed']);
    assert.deepEqual(run.receiver.events[2].data, { output: {} });
    const afterOutput = model.requests.slice(firstRequest)[1].body.messages.at(-1);
    assert.equal(afterOutput.role, 'tool');
    assert.match(afterOutput.content, /does not match the output schema: \(root\) must have required property 'title'/);
  });

  test('a schema that is not an object travels wrapped in { output }', async (t) => {
    const secret = newRunEventSecret();
    const receiver = await startEventReceiver(secret);
    const sidecar = await spawnWarm('sidecar/main.ts');
    const client = new Client({ name: 'test', version: '1.0.0' });
    t.after(async () => {
      await client.close();
      await sidecar.kill();
      await receiver.close();
    });
    const assignment = aSidecarAssignment({
      eventsUrl: `${receiver.url}/events`,
      eventSecret: secret,
      model: null,
      outputSchema: { type: 'array', items: { type: 'string' }, minItems: 1 },
      runtimeTools: [],
    });
    sidecar.assign(assignment);
    await client.connect(new StreamableHTTPClientTransport(new URL(`${sidecarUrlOf(sidecar)}/mcp`), { requestInit: { headers: bearer(assignment.token) } }));
    const output = (await client.listTools()).tools.find((tool) => tool.name === 'output');
    assert.deepEqual(output?.inputSchema.required, ['output']);
    const recorded = await client.callTool({ name: 'output', arguments: { output: ['a', 'b'] } });
    assert.equal(recorded.isError, false);
    const refused = await client.callTool({ name: 'output', arguments: { output: [] } });
    assert.equal(refused.isError, true);
    await receiver.waitFor((events) => events.filter((e) => e.type === 'output').length === 2);
    assert.deepEqual(receiver.events.filter((e) => e.type === 'output').map((e) => e.data), [{ output: ['a', 'b'] }, { output: [] }]);
  });
});
