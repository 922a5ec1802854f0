// Our MCP tool client facing a server that misbehaves: each failure surfaces as an error that says
// what went wrong, instead of a hang or a wrong result. The server is a scripted stand-in on 127.0.0.1.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpToolClient } from '../../lib/mcp/tool-client.ts';

type Script = (message: { id?: number; method: string; params?: Record<string, unknown> }, res: ServerResponse) => void;
let script: Script = () => undefined;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => script(JSON.parse(Buffer.concat(chunks).toString('utf8')), res));
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
after(() => {
  server.closeAllConnections();
  server.close();
});

const json = (res: ServerResponse, body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
const result = (id: number | undefined, value: unknown) => ({ jsonrpc: '2.0', id, result: value });

/** A well-behaved handshake; `rest` answers everything after it. */
function handshakeThen(rest: Script, protocolVersion = '2025-06-18'): Script {
  return (message, res) => {
    if (message.method === 'initialize') return json(res, result(message.id, { protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 's', version: '1' } }));
    if (message.method.startsWith('notifications/')) return void res.writeHead(202).end();
    rest(message, res);
  };
}

const connect = (requestTimeoutMs?: number) => McpToolClient.connect(url, { clientInfo: { name: 't', version: '1' }, requestTimeoutMs });

test('a server answering initialize with a revision we do not speak is refused', async () => {
  script = handshakeThen(() => undefined, '2023-01-01');
  await assert.rejects(connect(), /speaks protocol 2023-01-01/);
});

test('an HTTP failure, an answer that is not JSON-RPC, or a stream that ends without the response rejects the call', async () => {
  script = handshakeThen((_, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('boom'));
  const client = await connect();
  await assert.rejects(client.callTool('x', {}), /HTTP 500: boom/);
  script = handshakeThen((_, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('hello'));
  await assert.rejects(client.callTool('x', {}), /not a JSON-RPC response/);
  script = handshakeThen((message, res) => json(res, result(Number(message.id) + 1, { content: [] })));
  await assert.rejects(client.callTool('x', {}), /no response to request/);
  script = handshakeThen((message, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } })}\n\n`);
  });
  await assert.rejects(client.callTool('x', {}), /no response to request/);
});

test('a tool list whose cursors go round in circles, or whose tools lack a schema, is refused', async () => {
  script = handshakeThen((message, res) => json(res, result(message.id, { tools: [], nextCursor: 'again' })));
  const client = await connect();
  await assert.rejects(client.listTools(), /repeated a cursor/);
  script = handshakeThen((message, res) => json(res, result(message.id, { tools: [{ name: 'x' }] })));
  await assert.rejects(client.listTools(), /inputSchema/);
});

test('a server that never answers times out', async () => {
  script = handshakeThen(() => undefined);
  const client = await connect(200);
  await assert.rejects(client.callTool('x', {}), (err: Error) => err.name === 'TimeoutError');
});
