// The sidecar's MCP tools as AI SDK tools: same names, same JSON Schemas, calls go back over MCP.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { jsonSchema, tool, type ToolSet } from 'ai';

export interface SidecarTools {
  tools: ToolSet;
  names: string[];
  close(): Promise<void>;
}

function textOf(content: unknown): string {
  if (!Array.isArray(content)) return '';
  return content
    .map((part: any) => (part?.type === 'text' && typeof part.text === 'string' ? part.text : JSON.stringify(part)))
    .join('\n');
}

export async function connectSidecarTools(sidecarUrl: string, sidecarFetch?: typeof fetch): Promise<SidecarTools> {
  const client = new Client({ name: 'agent-runtime', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${sidecarUrl}/mcp`), { fetch: sidecarFetch }));
  const listed = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    listed.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);

  const tools: ToolSet = {};
  for (const t of listed) {
    tools[t.name] = tool({
      description: t.description ?? t.name,
      inputSchema: jsonSchema(t.inputSchema as Parameters<typeof jsonSchema>[0]),
      execute: async (args: unknown) => {
        const result = await client.callTool({ name: t.name, arguments: (args ?? {}) as Record<string, unknown> });
        const text = textOf(result.content);
        // a thrown error reaches the model as a tool error it can react to
        if (result.isError) throw new Error(text || `tool ${t.name} failed`);
        return text;
      },
    });
  }
  return { tools, names: listed.map((t) => t.name), close: () => client.close() };
}
