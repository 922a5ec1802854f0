// The MCP endpoint's wire rules (streamable HTTP, stateless, JSON answers), request by request:
// what a client sees for each kind of message, and for each kind of mistake.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { answerMcpHttp, MAX_BATCH_MESSAGES, type McpHttpAnswer } from '../../lib/mcp/streamable-http-endpoint.ts';
import { McpToolServer } from '../../lib/mcp/tool-server.ts';
import { LATEST_PROTOCOL_VERSION } from '../../lib/mcp/protocol-version.ts';

const calls: Array<{ name: string; args: Record<string, unknown> }> = [];
const server = new McpToolServer({
  serverInfo: { name: 'wire-test', version: '0.0.1' },
  tools: [{ name: 'echo', description: 'says it back', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }],
  callTool(name, args) {
    calls.push({ name, args });
    if (name !== 'echo') return { content: [{ type: 'text', text: `unknown tool ${name}` }], isError: true };
    return { content: [{ type: 'text', text: String(args.text) }], isError: false };
  },
});

const JSON_AND_SSE = 'application/json, text/event-stream';

function post(body: unknown, headers: Record<string, string> = {}): Promise<McpHttpAnswer> {
  const all: Record<string, string> = { accept: JSON_AND_SSE, 'content-type': 'application/json', ...headers };
  return answerMcpHttp(server, {
    method: 'POST',
    header: (name) => all[name],
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const request = (id: number | string, method: string, params?: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method, ...(params && { params }) });
const bodyOf = (answer: McpHttpAnswer) => JSON.parse(answer.body ?? 'null');

describe('the MCP endpoint', () => {
  test('initialize echoes a revision it speaks, offers tools, and falls back to its latest for an unknown one', async () => {
    for (const version of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) {
      const answer = await post(request(1, 'initialize', { protocolVersion: version, capabilities: {}, clientInfo: { name: 't', version: '1' } }));
      assert.equal(answer.status, 200);
      assert.equal(answer.headers['content-type'], 'application/json');
      assert.equal(answer.headers['mcp-session-id'], undefined, 'stateless: no session');
      assert.deepEqual(bodyOf(answer), {
        jsonrpc: '2.0',
        id: 1,
        result: { protocolVersion: version, capabilities: { tools: {} }, serverInfo: { name: 'wire-test', version: '0.0.1' } },
      });
    }
    const old = await post(request('a', 'initialize', { protocolVersion: '1999-01-01', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    assert.equal(bodyOf(old).result.protocolVersion, LATEST_PROTOCOL_VERSION);
    const missing = await post(request(2, 'initialize', {}));
    assert.equal(bodyOf(missing).error.code, -32602);
  });

  test('a notification, or a client response, is accepted with 202 and no body', async () => {
    for (const message of [
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3 } },
      { jsonrpc: '2.0', id: 9, result: {} },
    ]) {
      const answer = await post(message);
      assert.equal(answer.status, 202);
      assert.equal(answer.body, undefined);
    }
  });

  test('ping, tools/list and tools/call answer with their results; an unknown method is -32601', async () => {
    assert.deepEqual(bodyOf(await post(request(1, 'ping'))), { jsonrpc: '2.0', id: 1, result: {} });
    const listed = bodyOf(await post(request(2, 'tools/list', {}), { 'mcp-protocol-version': '2025-06-18' }));
    assert.deepEqual(listed.result.tools.map((t: { name: string }) => t.name), ['echo']);
    assert.equal(listed.result.nextCursor, undefined);
    const called = bodyOf(await post(request(3, 'tools/call', { name: 'echo', arguments: { text: 'hi' } })));
    assert.deepEqual(called, { jsonrpc: '2.0', id: 3, result: { content: [{ type: 'text', text: 'hi' }], isError: false } });
    const noArgs = bodyOf(await post(request(4, 'tools/call', { name: 'echo' })));
    assert.equal(noArgs.result.content[0].text, 'undefined');
    assert.deepEqual(calls.at(-1), { name: 'echo', args: {} });
    const unknownTool = bodyOf(await post(request(5, 'tools/call', { name: 'nope', arguments: {} })));
    assert.equal(unknownTool.result.isError, true);
    const unknownMethod = bodyOf(await post(request(6, 'resources/list')));
    assert.equal(unknownMethod.id, 6);
    assert.equal(unknownMethod.error.code, -32601);
  });

  test('tools/call without a tool name, or with arguments that are not an object, is -32602 and runs nothing', async () => {
    const before = calls.length;
    for (const params of [{}, { name: 7 }, { name: 'echo', arguments: ['x'] }, { name: 'echo', arguments: 'x' }]) {
      const answer = await post(request(1, 'tools/call', params));
      assert.equal(answer.status, 200);
      assert.equal(bodyOf(answer).error.code, -32602, JSON.stringify(params));
    }
    assert.equal(calls.length, before);
  });

  test('malformed JSON is -32700; a body that is not a JSON-RPC message is -32600; both with 400', async () => {
    const parse = await post('{"jsonrpc": "2.0", "id": 1,');
    assert.equal(parse.status, 400);
    assert.deepEqual(bodyOf(parse), { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: Invalid JSON' } });
    const notMessages = [
      42,
      '"text"',
      null,
      { id: 1, method: 'ping' },
      { jsonrpc: '1.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', id: null, method: 'ping' },
      { jsonrpc: '2.0', id: 1, method: 'ping', params: [1] },
      { jsonrpc: '2.0', id: 1 },
      { jsonrpc: '2.0', id: 1, result: {}, error: { code: 1, message: 'both' } },
    ];
    for (const invalid of notMessages) {
      const answer = await post(invalid);
      assert.equal(answer.status, 400, JSON.stringify(invalid));
      assert.equal(bodyOf(answer).error.code, -32600, JSON.stringify(invalid));
    }
    assert.equal(bodyOf(await post({ jsonrpc: '2.0', id: 5, method: 3 })).id, 5, 'the id is kept where it can be read');
  });

  test('a batch (2025-03-26) is answered with an array of the requests\' responses, in order', async () => {
    const answer = await post([
      request(1, 'tools/call', { name: 'echo', arguments: { text: 'one' } }),
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      request(2, 'ping'),
      request(3, 'nope'),
    ]);
    assert.equal(answer.status, 200);
    const body = bodyOf(answer);
    assert.ok(Array.isArray(body));
    assert.deepEqual(body.map((r: { id: number }) => r.id), [1, 2, 3]);
    assert.equal(body[0].result.content[0].text, 'one');
    assert.equal(body[2].error.code, -32601);
    const onlyNotifications = await post([{ jsonrpc: '2.0', method: 'notifications/initialized' }]);
    assert.equal(onlyNotifications.status, 202);
  });

  test('an empty, oversized or partly invalid batch, or initialize inside a batch, is refused whole with -32600', async () => {
    const before = calls.length;
    const echo = request(1, 'tools/call', { name: 'echo', arguments: { text: 'x' } });
    const init = request(2, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } });
    for (const batch of [[], Array.from({ length: MAX_BATCH_MESSAGES + 1 }, (_, i) => request(i, 'ping')), [echo, { jsonrpc: '2.0' }], [init, echo]]) {
      const answer = await post(batch);
      assert.equal(answer.status, 400);
      assert.equal(bodyOf(answer).error.code, -32600);
    }
    assert.equal(calls.length, before, 'no tool ran');
  });

  test('transport refusals: other methods 405, an Accept without both types 406, a body not JSON 415, an unknown revision 400', async () => {
    for (const method of ['GET', 'DELETE']) {
      const answer = await answerMcpHttp(server, { method, header: (name) => (name === 'accept' ? 'text/event-stream' : undefined), body: '' });
      assert.equal(answer.status, 405);
      assert.equal(answer.headers.allow, 'POST');
      assert.equal(bodyOf(answer).error.code, -32000);
    }
    assert.equal((await post(request(1, 'ping'), { accept: 'application/json' })).status, 406);
    assert.equal((await post(request(1, 'ping'), { accept: 'text/event-stream' })).status, 406);
    assert.equal((await post(request(1, 'ping'), { 'content-type': 'text/plain' })).status, 415);
    assert.equal((await post(request(1, 'ping'), { 'content-type': 'application/json; charset=utf-8' })).status, 200);
    const unknownRevision = await post(request(1, 'tools/list'), { 'mcp-protocol-version': '1999-01-01' });
    assert.equal(unknownRevision.status, 400);
    assert.match(bodyOf(unknownRevision).error.message, /Unsupported protocol version/);
  });
});
