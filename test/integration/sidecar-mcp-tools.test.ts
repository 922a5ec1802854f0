import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { aSidecarAssignment, bearer, sidecarUrlOf, spawnWarm, startEventReceiver, typesInOrder } from './sidecar-run-harness.ts';

function textOf(result: Awaited<ReturnType<Client['callTool']>>): string {
  return (result.content as Array<{ type: string; text: string }>).map((c) => c.text).join('');
}

/** A sidecar with every runtime tool, a files folder, and history/memory served by the receiver. */
async function aSidecarWithAllTools(opts: { withPlatformUrls: boolean }) {
  const secret = newRunEventSecret();
  const receiver = await startEventReceiver(secret, {
    getBody: (path) => (path.endsWith('/history') ? [{ id: 'run_earlier', status: 'success' }] : [{ text: 'the sky is blue' }]),
  });
  const filesDir = await mkdtemp(join(tmpdir(), 'run-files-'));
  const sidecar = await spawnWarm('sidecar/main.ts');
  const assignment = aSidecarAssignment({
    eventsUrl: `${receiver.url}/events`,
    eventSecret: secret,
    model: null,
    runtimeTools: ['output', 'log', 'note', 'pin', 'publish_file'],
    ...(opts.withPlatformUrls ? { historyUrl: `${receiver.url}/history`, memoryUrl: `${receiver.url}/memory`, filesDir } : {}),
  });
  sidecar.assign(assignment);
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${sidecarUrlOf(sidecar)}/mcp`), { requestInit: { headers: bearer(assignment.token) } }));
  return {
    receiver,
    sidecar,
    client,
    filesDir,
    stop: async () => {
      await client.close();
      await sidecar.kill();
      await receiver.close();
      await rm(filesDir, { recursive: true, force: true });
    },
  };
}

describe('the sidecar MCP tools', () => {
  test('runtime tools become run events, and first-party tools read the platform with signed requests', async (t) => {
    const run = await aSidecarWithAllTools({ withPlatformUrls: true });
    t.after(() => run.stop());
    const { client, receiver } = run;

    const names = (await client.listTools()).tools.map((tool) => tool.name).sort();
    assert.deepEqual(names, ['log', 'note', 'output', 'pin', 'publish_file', 'recall_memory', 'run_history']);

    assert.equal(textOf(await client.callTool({ name: 'log', arguments: { level: 'warn', message: 'careful', data: { a: 1 } } })), 'logged');
    assert.deepEqual(JSON.parse(textOf(await client.callTool({ name: 'note', arguments: { text: 'first' } }))), ['first']);
    assert.deepEqual(JSON.parse(textOf(await client.callTool({ name: 'note', arguments: { text: 'second' } }))), ['first', 'second']);
    assert.deepEqual(JSON.parse(textOf(await client.callTool({ name: 'pin', arguments: { text: 'remember me' } }))), ['remember me']);
    const published = await client.callTool({ name: 'publish_file', arguments: { name: 'report.md', content: '# Report' } });
    assert.equal(published.isError, false);
    assert.equal(await readFile(join(run.filesDir, 'report.md'), 'utf8'), '# Report');
    const escaped = await client.callTool({ name: 'publish_file', arguments: { name: '../escape.md', content: 'x' } });
    assert.equal(escaped.isError, true);
    // no output schema: any object is accepted
    assert.equal(textOf(await client.callTool({ name: 'output', arguments: { anything: [1, 2] } })), 'output recorded');

    assert.deepEqual(JSON.parse(textOf(await client.callTool({ name: 'run_history', arguments: { limit: 5 } }))), [
      { id: 'run_earlier', status: 'success' },
    ]);
    assert.deepEqual(JSON.parse(textOf(await client.callTool({ name: 'recall_memory', arguments: { query: 'sky' } }))), [
      { text: 'the sky is blue' },
    ]);
    const gets = receiver.deliveries.filter((d) => d.method === 'GET');
    assert.deepEqual(gets.map((d) => [d.path, d.status]), [['/history', 200], ['/memory', 200]]);
    assert.equal(gets[0].query.get('limit'), '5');
    assert.equal(gets[1].query.get('query'), 'sky');

    await receiver.waitFor((events) => events.some((e) => e.type === 'output'));
    assert.deepEqual(typesInOrder(receiver.events), ['started', 'log', 'log', 'log', 'log', 'log', 'output']);
    const data = receiver.events.slice(1, 6).map((e) => e.data);
    assert.deepEqual(data, [
      { level: 'warn', message: 'careful', data: { a: 1 } },
      { level: 'info', message: 'first', data: { kind: 'note' } },
      { level: 'info', message: 'second', data: { kind: 'note' } },
      { level: 'info', message: 'remember me', data: { kind: 'pin' } },
      { level: 'info', message: 'published report.md', data: { kind: 'file', name: 'report.md', size: 8 } },
    ]);
    assert.deepEqual(receiver.events[6].data, { output: { anything: [1, 2] } });
  });

  test('without platform URLs, history and memory are empty and publishing is unavailable', async (t) => {
    const run = await aSidecarWithAllTools({ withPlatformUrls: false });
    t.after(() => run.stop());
    assert.equal(textOf(await run.client.callTool({ name: 'run_history', arguments: {} })), '[]');
    assert.equal(textOf(await run.client.callTool({ name: 'recall_memory', arguments: {} })), '[]');
    const file = await run.client.callTool({ name: 'publish_file', arguments: { name: 'a.txt', content: 'x' } });
    assert.equal(file.isError, true);
    assert.equal(run.receiver.deliveries.filter((d) => d.method === 'GET').length, 0);
  });
});
