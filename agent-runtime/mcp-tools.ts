// The sidecar's MCP tools as AI SDK tools: same names, same JSON Schemas, calls go back over MCP.
import { jsonSchema, tool, type ToolSet } from 'ai';
import { McpToolClient } from '../lib/mcp/tool-client.ts';

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

/** Rewrites a tool's arguments in the agent runtime before they go to the sidecar (e.g. a workspace path read into content). */
export type PrepareToolArgs = (toolName: string, args: Record<string, unknown>) => Record<string, unknown>;

/** The longest delay a timer (and AbortSignal.timeout) takes: about 24.8 days. */
const MAX_TIMER_MS = 2_147_483_647;

export async function connectSidecarTools(sidecarUrl: string, sidecarFetch?: typeof fetch, prepare?: PrepareToolArgs): Promise<SidecarTools> {
  // A tool call may wait for a person's approval (hours, days): the sidecar bounds each tool itself.
  const client = await McpToolClient.connect(`${sidecarUrl}/mcp`, { clientInfo: { name: 'agent-runtime', version: '1.0.0' }, fetch: sidecarFetch, requestTimeoutMs: MAX_TIMER_MS });
  const listed = await client.listTools();

  const tools: ToolSet = {};
  for (const t of listed) {
    tools[t.name] = tool({
      description: t.description ?? t.name,
      inputSchema: jsonSchema(t.inputSchema as Parameters<typeof jsonSchema>[0]),
      execute: async (args: unknown) => {
        const given = (args ?? {}) as Record<string, unknown>;
        const result = await client.callTool(t.name, prepare ? prepare(t.name, given) : given);
        const text = textOf(result.content);
        // a thrown error reaches the model as a tool error it can react to
        if (result.isError) throw new Error(text || `tool ${t.name} failed`);
        return text;
      },
    });
  }
  return { tools, names: listed.map((t) => t.name), close: () => client.close() };
}
