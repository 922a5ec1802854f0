// MCP over streamable HTTP, stateless: each POST gets its own server and transport, so a restarted
// or reconnecting agent never trips over a stale session. Tools carry plain JSON Schemas.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { SidecarTool } from './tool.ts';

// one validator for every per-request server instead of a fresh Ajv each time
const sharedValidator = new AjvJsonSchemaValidator();

function buildServer(tools: SidecarTool[]): Server {
  const byName = new Map(tools.map((t) => [t.name, t]));
  const server = new Server(
    { name: 'agent-platform-sidecar', version: '1.0.0' },
    { capabilities: { tools: {} }, jsonSchemaValidator: sharedValidator },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema as { type: 'object' } })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = byName.get(request.params.name);
    if (!tool) return { content: [{ type: 'text', text: `unknown tool ${request.params.name}` }], isError: true };
    try {
      const answer = await tool.call((request.params.arguments ?? {}) as Record<string, unknown>);
      return { content: [{ type: 'text', text: answer.text }], isError: answer.isError === true };
    } catch (err) {
      return { content: [{ type: 'text', text: `tool ${tool.name} failed: ${(err as Error).message}` }], isError: true };
    }
  });
  return server;
}

/** Handles /mcp; the caller has read and parsed the JSON body of a POST. */
export async function handleMcp(tools: SidecarTool[], req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
  if (req.method !== 'POST') {
    // stateless: no standalone SSE stream and no session to delete
    res.writeHead(405, { allow: 'POST', 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null }));
    return;
  }
  const server = buildServer(tools);
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}
