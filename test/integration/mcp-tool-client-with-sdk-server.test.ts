// Our MCP tool client (lib/mcp, what the agent runtime uses) against the official SDK's servers on
// 127.0.0.1: JSON and event-stream answers, with and without sessions, through the agent's own
// fetch (agent-runtime/sidecar-fetch.ts), over TCP and over a unix socket.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { readBody } from '../../lib/outbound-http.ts';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { sidecarFetch } from '../../agent-runtime/sidecar-fetch.ts';
import { JsonRpcError } from '../../lib/mcp/json-rpc.ts';
import { LATEST_PROTOCOL_VERSION } from '../../lib/mcp/protocol-version.ts';
import { McpToolClient } from '../../lib/mcp/tool-client.ts';

interface SeenRequest {
  method: string;
  rpcMethod?: string;
  sessionId?: string;
  protocolVersion?: string;
}

interface SdkServerSpec {
  /** json: enableJsonResponse; sse: each answer is an event stream */
  responses: 'json' | 'sse';
  sessions: boolean;
  socketPath?: string;
  build: () => Server | McpServer;
}

/** An official SDK server behind StreamableHTTPServerTransport; records what each request carried. */
async function anSdkServer(spec: SdkServerSpec) {
  const seen: SeenRequest[] = [];
  const transportOptions = {
    sessionIdGenerator: spec.sessions ? () => randomUUID() : undefined,
    enableJsonResponse: spec.responses === 'json',
  };
  // with sessions, one server and transport hold the one client's session; without, one per request
  const shared = spec.sessions ? await connected(spec.build(), new StreamableHTTPServerTransport(transportOptions)) : undefined;
  const http = createServer(async (req, res) => {
    const raw = (await readBody(req)).toString('utf8');
    const body = raw === '' ? undefined : JSON.parse(raw);
    seen.push({
      method: req.method ?? '',
      rpcMethod: body?.method,
      sessionId: req.headers['mcp-session-id'] as string | undefined,
      protocolVersion: req.headers['mcp-protocol-version'] as string | undefined,
    });
    const transport = shared ?? (await connected(spec.build(), new StreamableHTTPServerTransport(transportOptions)));
    if (!shared) res.on('close', () => void transport.close());
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((resolve) => (spec.socketPath ? http.listen(spec.socketPath, resolve) : http.listen(0, '127.0.0.1', resolve)));
  const url = spec.socketPath ? 'http://sidecar/mcp' : `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  return {
    url,
    seen,
    close: async () => {
      await shared?.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

async function connected(server: Server | McpServer, transport: StreamableHTTPServerTransport) {
  await server.connect(transport);
  return transport;
}

const TOOL_NAMES = ['add', 'fail', 'shout'];
const PAGE_SIZE = 2;

/** A low-level SDK server listing its tools two per page; add logs to the client before it answers. */
function aPagedToolServer(): Server {
  const server = new Server({ name: 'sdk-paged', version: '1.2.3' }, { capabilities: { tools: {}, logging: {} } });
  server.setRequestHandler(ListToolsRequestSchema, (request) => {
    const from = Number(request.params?.cursor ?? 0);
    const page = TOOL_NAMES.slice(from, from + PAGE_SIZE).map((name) => ({
      name,
      description: `the ${name} tool`,
      inputSchema: { type: 'object' as const, properties: { a: { type: 'number' }, b: { type: 'number' }, text: { type: 'string' } } },
    }));
    return from + PAGE_SIZE < TOOL_NAMES.length ? { tools: page, nextCursor: String(from + PAGE_SIZE) } : { tools: page };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const args = (request.params.arguments ?? {}) as { a?: number; b?: number; text?: string };
    switch (request.params.name) {
      case 'add':
        // a message on the request's own stream ahead of the response (event-stream answers only)
        await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', data: 'adding' } });
        return { content: [{ type: 'text', text: String((args.a ?? 0) + (args.b ?? 0)) }] };
      case 'fail':
        return { content: [{ type: 'text', text: 'it went wrong' }], isError: true };
      case 'shout':
        return { content: [{ type: 'text', text: (args.text ?? '').toUpperCase() }, { type: 'text', text: '!' }] };
      default:
        throw new McpError(ErrorCode.InvalidParams, `no tool ${request.params.name}`);
    }
  });
  return server;
}

/** the agent's sidecar token: these SDK servers take it as any other header */
const AGENT_TOKEN = 'agent-token-for-sdk-servers';

/** The agent's fetch, keeping the content type and (for event streams) the text of every answer. */
function aRecordingFetch(socketPath?: string) {
  const inner = sidecarFetch(AGENT_TOKEN, socketPath);
  const answers: Array<{ type: string | null; streamText?: Promise<string> }> = [];
  const recording: typeof fetch = async (input, init) => {
    const res = await inner(input, init);
    const type = res.headers.get('content-type');
    answers.push({ type, streamText: type?.startsWith('text/event-stream') ? res.clone().text() : undefined });
    return res;
  };
  return { fetch: recording, answers };
}

const textOf = (result: { content: Array<{ type: string; text?: unknown }> }) => result.content.map((c) => c.text).join('');

describe('our MCP client with an official SDK server', () => {
  for (const responses of ['json', 'sse'] as const) {
    for (const sessions of [false, true]) {
      test(`${responses} answers, ${sessions ? 'with a session' : 'stateless'}: lists every page, calls tools, hears errors`, async (t) => {
        const server = await anSdkServer({ responses, sessions, build: aPagedToolServer });
        t.after(() => server.close());
        const agentFetch = aRecordingFetch();
        const client = await McpToolClient.connect(server.url, { clientInfo: { name: 'test', version: '1' }, fetch: agentFetch.fetch });

        assert.deepEqual(client.serverInfo, { name: 'sdk-paged', version: '1.2.3' });
        const tools = await client.listTools();
        assert.deepEqual(tools.map((tool) => tool.name), TOOL_NAMES);
        assert.equal(tools[0].description, 'the add tool');
        assert.equal(tools[0].inputSchema.type, 'object');

        assert.equal(textOf(await client.callTool('add', { a: 2, b: 3 })), '5');
        assert.equal(textOf(await client.callTool('shout', { text: 'hey' })), 'HEY!');
        const failed = await client.callTool('fail', {});
        assert.equal(failed.isError, true);
        assert.equal(textOf(failed), 'it went wrong');
        await assert.rejects(client.callTool('nope', {}), (err) => err instanceof JsonRpcError && err.code === -32602 && /no tool nope/.test(err.message));
        await client.close();

        const posts = server.seen.filter((r) => r.method === 'POST');
        assert.deepEqual(posts.map((r) => r.rpcMethod), [
          'initialize',
          'notifications/initialized',
          'tools/list',
          'tools/list',
          'tools/call',
          'tools/call',
          'tools/call',
          'tools/call',
        ]);
        // every request after initialize names the negotiated revision, and the session when there is one
        for (const r of posts.slice(1)) assert.equal(r.protocolVersion, LATEST_PROTOCOL_VERSION);
        // the answers came in the form asked for; on a stream, add's log message came ahead of its result
        const expectedType = responses === 'json' ? 'application/json' : 'text/event-stream';
        const answerTypes = agentFetch.answers.slice(0, posts.length).map((a) => a.type?.split(';')[0] ?? null);
        assert.deepEqual(answerTypes, posts.map((r) => (r.rpcMethod === 'notifications/initialized' ? null : expectedType)));
        if (responses === 'sse') {
          const addStream = await agentFetch.answers[4].streamText;
          assert.ok(addStream && addStream.indexOf('"adding"') >= 0 && addStream.indexOf('"adding"') < addStream.indexOf('"result"'), addStream);
        }
        const sessionIds = new Set(posts.slice(1).map((r) => r.sessionId));
        assert.equal(sessionIds.size, 1);
        if (sessions) {
          assert.ok([...sessionIds][0], 'the session id came back');
          assert.deepEqual(server.seen.filter((r) => r.method === 'DELETE').map((r) => r.sessionId), [...sessionIds]);
        } else {
          assert.deepEqual([...sessionIds], [undefined]);
          assert.equal(server.seen.filter((r) => r.method === 'DELETE').length, 0);
        }
      });
    }
  }

  test('over a unix socket, as a confined agent reaches its sidecar', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'mcp-socket-'));
    const socketPath = join(dir, 'sidecar.sock');
    const server = await anSdkServer({ responses: 'sse', sessions: false, socketPath, build: aPagedToolServer });
    t.after(async () => {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    });
    const client = await McpToolClient.connect(server.url, { clientInfo: { name: 'test', version: '1' }, fetch: sidecarFetch(AGENT_TOKEN, socketPath) });
    assert.equal((await client.listTools()).length, TOOL_NAMES.length);
    assert.equal(textOf(await client.callTool('add', { a: 40, b: 2 })), '42');
    await client.close();
  });

  test('an McpServer with a zod schema: its argument checks and unknown tools come back as isError results', async (t) => {
    const build = () => {
      const server = new McpServer({ name: 'sdk-high-level', version: '2.0.0' });
      server.registerTool('greet', { description: 'greets', inputSchema: { name: z.string().min(1) } }, ({ name }) => ({
        content: [{ type: 'text', text: `hello ${name}` }],
      }));
      return server;
    };
    for (const responses of ['json', 'sse'] as const) {
      const server = await anSdkServer({ responses, sessions: false, build });
      t.after(() => server.close());
      const client = await McpToolClient.connect(server.url, { clientInfo: { name: 'test', version: '1' }, fetch: sidecarFetch(AGENT_TOKEN) });
      const [greet] = await client.listTools();
      assert.equal(greet.name, 'greet');
      assert.deepEqual((greet.inputSchema as { required?: string[] }).required, ['name']);
      assert.equal(textOf(await client.callTool('greet', { name: 'Ada' })), 'hello Ada');
      const invalid = await client.callTool('greet', { name: '' });
      assert.equal(invalid.isError, true, responses);
      const unknown = await client.callTool('wave', {});
      assert.equal(unknown.isError, true);
      assert.match(textOf(unknown), /wave not found/);
      await client.close();
    }
  });
});
