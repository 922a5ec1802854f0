// The official MCP SDK client, as an independent party, against a real sidecar's MCP endpoint;
// then the same endpoint's transport refusals as a plain HTTP client meets them.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { newRunEventSecret } from '../../lib/run-events.ts';
import { aSidecarAssignment, bearer, sidecarUrlOf, spawnWarm, startEventReceiver, typesInOrder } from './sidecar-run-harness.ts';

async function aSidecarWithLogAndNote() {
  const secret = newRunEventSecret();
  const receiver = await startEventReceiver(secret);
  const sidecar = await spawnWarm('sidecar/main.ts');
  const assignment = aSidecarAssignment({ eventsUrl: `${receiver.url}/events`, eventSecret: secret, model: null, runtimeTools: ['log', 'note'] });
  sidecar.assign(assignment);
  return {
    receiver,
    mcpUrl: `${sidecarUrlOf(sidecar)}/mcp`,
    auth: bearer(assignment.token),
    stop: async () => {
      await sidecar.kill();
      await receiver.close();
    },
  };
}

const errorCodeOf = async (res: Response) => ((await res.json()) as { error: { code: number } }).error.code;
const textOf = (result: Awaited<ReturnType<Client['callTool']>>) => (result.content as Array<{ text: string }>).map((c) => c.text).join('');

describe('the sidecar MCP endpoint with the official SDK client', () => {
  test('the client initializes on its own latest revision, lists the tools, calls them and hears tool errors', async (t) => {
    const run = await aSidecarWithLogAndNote();
    const client = new Client({ name: 'sdk-client', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(run.mcpUrl), { requestInit: { headers: run.auth } });
    t.after(async () => {
      await client.close();
      await run.stop();
    });
    await client.connect(transport);
    assert.deepEqual(client.getServerVersion(), { name: 'agent-platform-sidecar', version: '1.0.0' });
    assert.deepEqual(client.getServerCapabilities(), { tools: {} });
    assert.equal(transport.protocolVersion, LATEST_PROTOCOL_VERSION, 'the revision the SDK asked for is echoed');
    assert.equal(transport.sessionId, undefined, 'stateless: no session');
    assert.deepEqual(await client.ping(), {});

    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name), ['log', 'note', 'run_history', 'recall_memory']);
    const note = tools.find((tool) => tool.name === 'note');
    assert.deepEqual(note?.inputSchema, { type: 'object', properties: { text: { type: 'string', minLength: 1 } }, required: ['text'] });

    const logged = await client.callTool({ name: 'log', arguments: { message: 'from the sdk' } });
    assert.deepEqual(logged, { content: [{ type: 'text', text: 'logged' }], isError: false });
    // arguments reach the tool unchecked against its schema: the tool's own check answers
    const empty = await client.callTool({ name: 'note', arguments: { text: '' } });
    assert.equal(empty.isError, true);
    assert.equal(textOf(empty), 'text must be a non-empty string');
    const unknown = await client.callTool({ name: 'publish_file', arguments: {} });
    assert.equal(unknown.isError, true);
    assert.equal(textOf(unknown), 'unknown tool publish_file');

    await run.receiver.waitFor((events) => events.some((e) => e.type === 'log'));
    assert.deepEqual(typesInOrder(run.receiver.events), ['started', 'log']);
    assert.deepEqual(run.receiver.events[1].data, { level: 'info', message: 'from the sdk' });
  });

  test('through the sidecar: GET and DELETE are 405, malformed JSON -32700, a tool call without a name -32602', async (t) => {
    const run = await aSidecarWithLogAndNote();
    t.after(() => run.stop());
    const headers = { ...run.auth, accept: 'application/json, text/event-stream', 'content-type': 'application/json' };
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(run.mcpUrl, { method, headers: { ...run.auth, accept: 'text/event-stream' } });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'POST');
      assert.equal(await errorCodeOf(res), -32000);
    }
    const malformed = await fetch(run.mcpUrl, { method: 'POST', headers, body: '{"jsonrpc":' });
    assert.equal(malformed.status, 400);
    assert.equal(await errorCodeOf(malformed), -32700);
    const nameless = await fetch(run.mcpUrl, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {} }) });
    assert.equal(nameless.status, 200);
    assert.equal(await errorCodeOf(nameless), -32602);
    const initialized = await fetch(run.mcpUrl, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    assert.equal(initialized.status, 202);
    assert.equal(await initialized.text(), '');
    // the post carrying `started` waits a moment for more of the run's events: none of these requests made one
    await run.receiver.waitFor((events) => events.some((e) => e.type === 'started'));
    assert.deepEqual(typesInOrder(run.receiver.events), ['started']);
  });
});
