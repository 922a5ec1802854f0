// The run's tools over MCP (streamable HTTP, stateless, JSON answers: lib/mcp). One tool server
// serves the whole run. Arguments are not checked against the tools' schemas here: each tool
// checks what it reads, and output checks its data against the output schema.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { answerMcpHttp } from '../lib/mcp/streamable-http-endpoint.ts';
import { McpToolServer } from '../lib/mcp/tool-server.ts';
import type { McpToolResult } from '../lib/mcp/tool-shapes.ts';
import type { SidecarTool } from './tool.ts';

function textResult(text: string, isError: boolean): McpToolResult {
  return { content: [{ type: 'text', text }], isError };
}

export function mcpToolServer(tools: SidecarTool[]): McpToolServer {
  const byName = new Map(tools.map((t) => [t.name, t]));
  return new McpToolServer({
    serverInfo: { name: 'agent-platform-sidecar', version: '1.0.0' },
    tools: tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema })),
    // failures reach the model as isError results it can react to, not as protocol errors
    async callTool(name, args) {
      const tool = byName.get(name);
      if (!tool) return textResult(`unknown tool ${name}`, true);
      try {
        const answer = await tool.call(args);
        if (answer.content) return { content: answer.content, isError: answer.isError === true };
        return textResult(answer.text, answer.isError === true);
      } catch (err) {
        return textResult(`tool ${tool.name} failed: ${(err as Error).message}`, true);
      }
    },
  });
}

/** Handles /mcp; the caller has read the body of a POST (empty for other methods). */
export async function handleMcp(server: McpToolServer, req: IncomingMessage, res: ServerResponse, body: Buffer): Promise<void> {
  const answer = await answerMcpHttp(server, {
    method: req.method ?? 'GET',
    header: (name) => {
      const value = req.headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    body: body.toString('utf8'),
  });
  if (answer.body === undefined) {
    res.writeHead(answer.status, answer.headers).end();
    return;
  }
  res.writeHead(answer.status, { ...answer.headers, 'content-length': Buffer.byteLength(answer.body) }).end(answer.body);
}
